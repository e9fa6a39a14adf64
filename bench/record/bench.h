/* Shared by the workloads: the time of the measured loop, written to the
 * file named by $BENCH_TIME_FILE (so that the harness can tell the
 * program's own slowdown from a recorder's start-up and shut-down). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline long long bench_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static inline void bench_report(long long start)
{
	long long ns = bench_now() - start;
	const char *path = getenv("BENCH_TIME_FILE");
	if (!path)
		return;
	FILE *f = fopen(path, "w");
	if (f) {
		fprintf(f, "%lld\n", ns);
		fclose(f);
	}
}
