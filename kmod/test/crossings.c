/* SPDX-License-Identifier: MIT */
/*
 * Description: crossings per multi-call, counted by the kernel's own
 * raw_syscalls:sys_enter tracepoint for this process (tracefs): a
 * multi-call of 16 writes is 16 crossings on direct and 1 on kmod, and a
 * looped copy of 64 blocks (64 reads, 64 writes, the read at the end) is 1; the module's multicall:mc_enter
 * tracepoint fires once per call it runs, so a recorder attached to it
 * still sees every call.  auto, which chooses the module where it
 * answers, crosses as kmod does, and for the loop as many times more as it
 * probes the two descriptors to rule out copy_file_range (the probes the
 * library counts).  mc_select_time (select, then the time of day) is 2
 * crossings on direct, 1 on kmod and on auto (both calls inside: the
 * vDSO's clock, auto's choice without the module, is a system call of its
 * own where the clock source cannot be read from user space -- the TCG
 * guest's).  Prints the counts (docs/BENCHMARKS.md quotes
 * them); no time is measured (the guest runs under TCG).
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T "/sys/kernel/tracing/"

static void put(const char *file, const char *text)
{
	int fd = open(file, O_WRONLY | O_TRUNC);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		t_fail("%s: %s", file, strerror(errno));
	if (fd >= 0)
		close(fd);
}

static int marker_fd;

static void mark(const char *m)
{
	if (write(marker_fd, m, strlen(m)) < 0)
		t_fail("trace_marker: %s", strerror(errno));
}

/* Events of this process between the two markers (the end marker's own
 * write is one sys_enter: not counted). */
static void count(long *sys, long *inner)
{
	static char buf[1 << 20];
	int fd = open(T "trace", O_RDONLY);
	ssize_t n = 0, r;
	char *p, *b, *e;

	*sys = *inner = 0;
	while (fd >= 0 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += r;
	buf[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
	b = strstr(buf, "mc-begin");
	e = b ? strstr(b, "mc-end") : NULL;
	if (!b || !e) {
		t_fail("markers not found in the trace");
		return;
	}
	for (p = b; p && p < e; p = strchr(p + 1, '\n')) {
		char *eol = strchr(p + 1, '\n');

		if (!eol || eol > e)
			break;
		*eol = 0;
		if (strstr(p + 1, "sys_enter:"))
			(*sys)++;
		else if (strstr(p + 1, "mc_enter:"))
			(*inner)++;
		*eol = '\n';
	}
	(*sys)--; /* the end marker's write */
}

static void trace_on(void)
{
	char filter[64];

	snprintf(filter, sizeof(filter), "common_pid == %d", getpid());
	put(T "tracing_on", "0");
	put(T "trace", "");
	put(T "events/raw_syscalls/sys_enter/filter", filter);
	put(T "events/multicall/mc_enter/filter", filter);
	put(T "events/raw_syscalls/sys_enter/enable", "1");
	put(T "events/multicall/mc_enter/enable", "1");
	put(T "tracing_on", "1");
}

static void trace_off(void)
{
	put(T "tracing_on", "0");
	put(T "events/raw_syscalls/sys_enter/enable", "0");
	put(T "events/multicall/mc_enter/enable", "0");
}

int main(void)
{
	static char block[64 * 512];
	unsigned backends[] = { MC_BACKEND_DIRECT, MC_BACKEND_KMOD, MC_BACKEND_AUTO };
	long sys[3][3], inner[3][3];
	unsigned long long probes = 0;

	marker_fd = open(T "trace_marker", O_WRONLY);
	if (marker_fd < 0)
		t_need("tracefs", "no tracefs: %s", strerror(errno));
	for (int k = 0; k < 3; k++) {
		struct mc_ctx *ctx = t_ctx(backends[k]);
		struct mc_call c[16];
		struct mc_loop loop = { 0, MC_WHILE_GT, 0, 1000 };
		int null = open("/dev/null", O_WRONLY), in, out, p;
		char path[] = "/tmp/mc-cross-XXXXXX";

		if (!ctx)
			return t_finish();
		for (int i = 0; i < 16; i++)
			mc_prep_write(&c[i], null, "12345678", 8);
		trace_on();
		mark("mc-begin");
		mc_run(ctx, c, 16);
		mark("mc-end");
		trace_off();
		count(&sys[k][0], &inner[k][0]);

		p = mkstemp(path);
		if (p < 0 || write(p, block, sizeof(block)) != sizeof(block))
			return T_EXIT_FAIL;
		in = open(path, O_RDONLY);
		out = open("/dev/null", O_WRONLY);
		mc_prep_read(&c[0], in, block, 512);
		mc_prep_write(&c[1], out, block, 0);
		mc_set_ref(&c[1], 2, 0);
		mc_set_check(&c[0]);
		mc_set_check(&c[1]);
		trace_on();
		mark("mc-begin");
		mc_ctx_stats_reset(ctx);
		mc_run_loop(ctx, c, 2, &loop, NULL);
		mark("mc-end");
		trace_off();
		count(&sys[k][1], &inner[k][1]);
		if (backends[k] == MC_BACKEND_AUTO)
			probes = t_stats(ctx).probes;
		unlink(path);
		close(p), close(in), close(out), close(null);

		/* mpeg_play's cluster (seed 000 §3.4): select, then the time. */
		{
			struct timeval zero = { 0, 0 }, now;
			long res[2];

			trace_on();
			mark("mc-begin");
			mc_select_time(ctx, 0, NULL, NULL, NULL, &zero, &now, res);
			mark("mc-end");
			trace_off();
			count(&sys[k][2], &inner[k][2]);
			T_ASSERT(res[0] == 0 && res[1] == 0, "%s: select_time %ld %ld", mc_backend_name(backends[k]), res[0],
				 res[1]);
		}
		mc_ctx_free(ctx);
	}
	printf("note: crossings: 16 writes: direct %ld, kmod %ld (inner calls traced %ld); "
	       "copy loop of 64 blocks: direct %ld, kmod %ld (inner %ld)\n",
	       sys[0][0], sys[1][0], inner[1][0], sys[0][1], sys[1][1], inner[1][1]);
	printf("note: crossings of mc_select_time: direct %ld, kmod %ld (inner %ld), auto %ld (inner %ld)\n",
	       sys[0][2], sys[1][2], inner[1][2], sys[2][2], inner[2][2]);
	printf("note: crossings with auto: 16 writes %ld (inner %ld); copy loop %ld (inner %ld), of which %llu probes\n",
	       sys[2][0], inner[2][0], sys[2][1], inner[2][1], probes);
	T_ASSERT(sys[0][0] == 16 && sys[1][0] == 1, "16 writes: %ld and %ld crossings", sys[0][0], sys[1][0]);
	T_ASSERT(inner[0][0] == 0 && inner[1][0] == 16, "mc_enter fired %ld times", inner[1][0]);
	T_ASSERT(sys[0][1] == 129 && sys[1][1] == 1, "copy loop: %ld and %ld crossings", sys[0][1], sys[1][1]);
	T_ASSERT(inner[1][1] == 129, "copy loop: mc_enter fired %ld times", inner[1][1]);
	T_ASSERT(sys[0][2] == 2 && sys[1][2] == 1 && inner[1][2] == 2 && sys[2][2] == 1 && inner[2][2] == 2,
		 "select_time: direct %ld, kmod %ld (inner %ld), auto %ld (inner %ld) crossings", sys[0][2], sys[1][2],
		 inner[1][2], sys[2][2], inner[2][2]);
	T_ASSERT(sys[2][0] == 1 && inner[2][0] == 16, "auto, 16 writes: %ld crossings, %ld inner", sys[2][0], inner[2][0]);
	T_ASSERT(probes > 0 && sys[2][1] == 1 + (long)probes && inner[2][1] == 129,
		 "auto, copy loop: %ld crossings with %llu probes, %ld inner", sys[2][1], probes, inner[2][1]);
	return t_finish();
}
