/* Shared by the workloads: the wall time and the CPU time (user + system,
 * this process) of the measured loop, in nanoseconds, written to the file
 * named by $BENCH_TIME_FILE, so that the harness can tell the program's own
 * slowdown from a recorder's start-up and shut-down; the CPU time is immune
 * to waiting for a CPU on a busy machine. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline long long bench_clock(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long long bench_cpu_start;

static inline long long bench_now(void)
{
	bench_cpu_start = bench_clock(CLOCK_PROCESS_CPUTIME_ID);
	return bench_clock(CLOCK_MONOTONIC);
}

static inline void bench_report(long long start)
{
	long long ns = bench_clock(CLOCK_MONOTONIC) - start;
	long long cpu = bench_clock(CLOCK_PROCESS_CPUTIME_ID) - bench_cpu_start;
	const char *path = getenv("BENCH_TIME_FILE");
	if (!path)
		return;
	FILE *f = fopen(path, "w");
	if (f) {
		fprintf(f, "%lld %lld\n", ns, cpu);
		fclose(f);
	}
}
