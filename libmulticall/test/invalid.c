/* SPDX-License-Identifier: MIT */
/*
 * Description: invalid input returns -EINVAL and runs nothing: too many
 * calls, a forward or self reference, a reference past the body of a
 * loop, an unknown flag, MC_PREDICT where no full length exists, calls a
 * multi-call must not hold (exit, execve, clone, fork, vfork, rt_sigreturn),
 * a bad loop, an unknown backend, NULL where a pointer is needed.  The
 * probe: call 0 writes to a pipe, and the pipe must stay empty, results
 * untouched, errno unchanged.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static int pipefd[2];
static struct mc_call calls[MC_MAX_CALLS + 2];

static void reset(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		mc_prep_write(&calls[i], pipefd[1], "x", 1);
		calls[i].result = 777;
	}
}

static void expect_nothing_ran(const char *what, unsigned n)
{
	char b[8];
	ssize_t r = read(pipefd[0], b, sizeof(b));

	T_ASSERT(r < 0 && errno == EAGAIN, "%s: something ran (read %zd)", what, r);
	for (unsigned i = 0; i < n; i++)
		if (calls[i].result != 777) {
			t_fail("%s: result %u touched (%ld)", what, i, calls[i].result);
			break;
		}
}

#define EXPECT_EINVAL(what, expr, n)                                                   \
	do {                                                                           \
		int r_;                                                                \
		errno = 4242;                                                          \
		r_ = (expr);                                                           \
		T_ASSERT(r_ == -EINVAL, "%s: returned %d, want -EINVAL", what, r_);    \
		T_ASSERT(errno == 4242, "%s: errno changed to %d", what, errno);       \
		expect_nothing_ran(what, n);                                           \
	} while (0)

int main(void)
{
	static const long forbidden[] = { SYS_exit, SYS_exit_group, SYS_execve, SYS_execveat,
					  SYS_clone, SYS_clone3, SYS_fork, SYS_vfork,
					  SYS_rt_sigreturn };
	struct mc_loop loop = { 0, MC_WHILE_GT, 0, 10 };
	unsigned long it = 99;

	if (pipe2(pipefd, O_NONBLOCK) < 0)
		return T_EXIT_FAIL;
	errno = 4242;
	T_ASSERT(mc_ctx_new(MC_BACKEND_COUNT) == NULL, "unknown backend accepted");
	T_ASSERT(mc_ctx_new(77) == NULL, "unknown backend accepted");
	T_ASSERT(errno == 4242, "mc_ctx_new changed errno");
	{
		struct mc_ctx *p = (void *)1;

		T_ASSERT(mc_ctx_init(&p, 99) == -EINVAL && p == NULL, "mc_ctx_init(99)");
		T_ASSERT(mc_ctx_init(NULL, MC_BACKEND_DIRECT) == -EINVAL, "mc_ctx_init(NULL)");
	}

	for (unsigned b = 0; b < t_nbackends; b++) {
		struct mc_ctx *ctx = t_ctx(t_backends[b]);
		char what[96];

		if (!ctx)
			continue;
#define W(s) (snprintf(what, sizeof(what), "%s: %s", mc_backend_name(t_backends[b]), s), what)
		reset(MC_MAX_CALLS + 1);
		EXPECT_EINVAL(W("n too large"), mc_run(ctx, calls, MC_MAX_CALLS + 1), MC_MAX_CALLS + 1);
		reset(4);
		mc_set_ref(&calls[2], 2, 3);
		EXPECT_EINVAL(W("forward reference"), mc_run(ctx, calls, 4), 4);
		reset(4);
		mc_set_ref(&calls[2], 0, 2);
		EXPECT_EINVAL(W("self reference"), mc_run(ctx, calls, 4), 4);
		reset(4);
		calls[3].ref[5] = 200;
		EXPECT_EINVAL(W("reference past the end"), mc_run(ctx, calls, 4), 4);
		reset(4);
		calls[1].flags = 0x80;
		EXPECT_EINVAL(W("unknown flag"), mc_run(ctx, calls, 4), 4);
		reset(4);
		mc_prep_syscall(&calls[3], SYS_getppid, 0, 0, 0, 0, 0, 0);
		calls[3].result = 777;
		mc_set_predict(&calls[3]);
		EXPECT_EINVAL(W("MC_PREDICT on getppid"), mc_run(ctx, calls, 4), 4);
		for (unsigned f = 0; f < sizeof(forbidden) / sizeof(forbidden[0]); f++) {
			reset(3);
			calls[2].nr = forbidden[f];
			EXPECT_EINVAL(W("forbidden call"), mc_run(ctx, calls, 3), 3);
		}
		reset(2);
		EXPECT_EINVAL(W("NULL calls"), mc_run(ctx, NULL, 2), 0);
		EXPECT_EINVAL(W("NULL ctx"), mc_run(NULL, calls, 2), 2);
		/* loops */
		reset(2);
		loop.call = 2;
		EXPECT_EINVAL(W("loop call out of body"), mc_run_loop(ctx, calls, 2, &loop, &it), 2);
		T_ASSERT(it == 0, "iterations not zeroed");
		loop.call = 0;
		loop.cond = 9;
		EXPECT_EINVAL(W("loop unknown condition"), mc_run_loop(ctx, calls, 2, &loop, &it), 2);
		loop.cond = MC_WHILE_GT;
		loop.max_iterations = 0;
		EXPECT_EINVAL(W("loop bound 0"), mc_run_loop(ctx, calls, 2, &loop, &it), 2);
		loop.max_iterations = 10;
		EXPECT_EINVAL(W("empty loop"), mc_run_loop(ctx, calls, 0, &loop, &it), 2);
		EXPECT_EINVAL(W("NULL loop"), mc_run_loop(ctx, calls, 2, NULL, &it), 2);
		reset(2);
		calls[1].ref[0] = 3;
		EXPECT_EINVAL(W("loop reference past the body"), mc_run_loop(ctx, calls, 2, &loop, &it), 2);
		reset(2);
		calls[1].nr = SYS_exit_group;
		EXPECT_EINVAL(W("loop with exit_group"), mc_run_loop(ctx, calls, 2, &loop, &it), 2);
		/* explain */
		reset(4);
		mc_set_ref(&calls[1], 0, 1);
		EXPECT_EINVAL(W("explain self reference"), mc_explain(ctx, calls, 4, NULL, 0), 4);
		/* n == 0 is valid and runs nothing */
		errno = 4242;
		T_ASSERT(mc_run(ctx, calls, 0) == 0, "%s: n = 0", mc_backend_name(t_backends[b]));
		T_ASSERT(errno == 4242, "errno");
		/* registration */
		T_ASSERT(mc_fd_register(ctx, -1) == -EINVAL, "register -1");
		T_ASSERT(mc_fd_unregister(ctx, 5) == -ENOENT, "unregister unknown");
		mc_ctx_free(ctx);
	}
	mc_ctx_free(NULL);
	T_ASSERT(mc_ctx_stats(NULL, NULL) == -EINVAL, "stats NULL");
	T_ASSERT(mc_backend_name(99) == NULL && mc_mech_name(99) == NULL, "names");
	return t_finish();
}
