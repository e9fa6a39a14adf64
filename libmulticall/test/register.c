/* SPDX-License-Identifier: MIT */
/*
 * Description: registered descriptors (mc_fd_register), as the compiler
 * plugin's runtime uses them (llvm/runtime/region.c): a registered regular
 * file is classified once — two writes are one writev, no statx per run —
 * and mc_fd_unregister drops what was learnt, so that the number, closed
 * and reopened on another file (/proc/self/comm, whose writes are never
 * fused), is classified afresh: its writes stay two writes, and the
 * thread's name is the second write's, as the calls one by one leave it.
 * Registered again after the reuse, the proc file stays unfused.  On the
 * fusion backend (every rule from two calls, whatever the calibration).
 */
#include "harness.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static void two_writes(struct mc_ctx *ctx, int fd, const char *a, const char *b, struct mc_stats *st)
{
	struct mc_call c[2];

	mc_prep_write(&c[0], fd, a, strlen(a));
	mc_prep_write(&c[1], fd, b, strlen(b));
	mc_ctx_stats_reset(ctx);
	T_ASSERT(mc_run(ctx, c, 2) == 2, "mc_run");
	T_ASSERT(c[0].result == (long)strlen(a) && c[1].result == (long)strlen(b), "results %ld %ld",
		 c[0].result, c[1].result);
	mc_ctx_stats(ctx, st);
}

static void comm_is(const char *want)
{
	char name[32] = "";
	int fd = open("/proc/self/comm", O_RDONLY);
	long n = fd < 0 ? -1 : read(fd, name, sizeof(name) - 1);

	if (fd >= 0)
		close(fd);
	T_ASSERT(n > 0 && strncmp(name, want, strlen(want)) == 0 && name[strlen(want)] == '\n',
		 "comm %s, want %s", name, want);
}

int main(void)
{
	char dir[] = "/tmp/mc-register-XXXXXX", path[256];
	struct mc_ctx *ctx = t_ctx(MC_BACKEND_FUSION);
	struct mc_stats st;
	int fd, again;

	if (!ctx || !mkdtemp(dir))
		return T_EXIT_FAIL;
	snprintf(path, sizeof(path), "%s/f", dir);
	fd = t_open(path, O_WRONLY | O_CREAT | O_TRUNC);

	/* Unregistered: classified in every run. */
	two_writes(ctx, fd, "ab", "cd", &st);
	two_writes(ctx, fd, "ab", "cd", &st);
	T_ASSERT(st.probes >= 1 && st.fused == 2 && st.crossings == st.probes + 1,
		 "unregistered file: %llu probes, %llu fused, %llu crossings", st.probes, st.fused, st.crossings);

	/* Registered: one writev, nothing asked. */
	T_ASSERT(mc_fd_register(ctx, fd) == 0, "register");
	two_writes(ctx, fd, "ab", "cd", &st);
	T_ASSERT(st.probes == 0 && st.fused == 2 && st.crossings == 1,
		 "registered file: %llu probes, %llu fused, %llu crossings", st.probes, st.fused, st.crossings);

	/* The number reused by a proc file, the registration dropped first. */
	T_ASSERT(mc_fd_unregister(ctx, fd) == 0, "unregister");
	T_ASSERT(mc_fd_unregister(ctx, fd) == -ENOENT, "unregister twice");
	close(fd);
	again = open("/proc/self/comm", O_WRONLY);
	T_ASSERT(again == fd, "the number reused: %d, was %d", again, fd);
	two_writes(ctx, again, "ab", "cd", &st);
	T_ASSERT(st.fused == 0 && st.direct == 2, "proc file, unregistered: %llu fused, %llu direct", st.fused,
		 st.direct);
	comm_is("cd");

	/* Registered as what it is now: still never fused. */
	T_ASSERT(mc_fd_register(ctx, again) == 0, "register the proc file");
	two_writes(ctx, again, "ef", "gh", &st);
	T_ASSERT(st.fused == 0 && st.direct == 2 && st.probes == 0,
		 "proc file, registered: %llu fused, %llu direct, %llu probes", st.fused, st.direct, st.probes);
	comm_is("gh");
	mc_fd_unregister(ctx, again);
	close(again);

	unlink(path);
	rmdir(dir);
	return t_finish();
}
