/* SPDX-License-Identifier: MIT */
/*
 * Description: a reference is 8 bits (MC_ABI_VERSION 1), so it names calls
 * 0..MC_MAX_REF only, while a multi-call holds up to MC_MAX_CALLS.
 * mc_set_ref to call 254 works end to end in a 300-call multi-call (the
 * result of call 254 reaches call 299); to call 255 or past it, or to
 * argument 6, it returns -EINVAL and marks the call so that mc_run refuses
 * it (-EINVAL, nothing run) instead of running a truncated literal: before
 * the fix call 255 became ref 0, "a literal 0", and the call ran.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#define N 300

static struct mc_call c[N];

/* Calls 0..N-1: getppid, but call 254 is a write of 3 bytes (result 3) and
 * call 299 a write to the pipe whose length is a reference. */
static void setup(int wfd)
{
	for (unsigned i = 0; i < N; i++)
		mc_prep_syscall(&c[i], SYS_getppid, 0, 0, 0, 0, 0, 0);
	mc_prep_write(&c[254], wfd, "abc", 3);
	mc_prep_write(&c[N - 1], wfd, "0123456789", 7);
}

int main(void)
{
	int p[2];
	char buf[64];

	T_ASSERT(MC_ABI_VERSION == 1 && MC_MAX_REF == 254, "ABI constants changed");
	if (pipe2(p, O_NONBLOCK) < 0)
		return T_EXIT_FAIL;
	for (unsigned b = 0; b < t_nbackends; b++) {
		struct mc_ctx *ctx = t_ctx(t_backends[b]);
		const char *bn = mc_backend_name(t_backends[b]);
		ssize_t got;
		int r;

		if (!ctx)
			continue;
		/* The highest call a reference can name. */
		setup(p[1]);
		r = mc_set_ref(&c[N - 1], 2, MC_MAX_REF);
		T_ASSERT(r == 0, "%s: mc_set_ref(254) = %d", bn, r);
		T_ASSERT(c[N - 1].ref[2] == 255, "%s: ref %u", bn, c[N - 1].ref[2]);
		r = mc_run(ctx, c, N);
		T_ASSERT(r == N, "%s: mc_run = %d", bn, r);
		T_ASSERT(c[N - 1].result == 3, "%s: call 299 wrote %ld, want 3 (call 254's result)",
			 bn, c[N - 1].result);
		got = read(p[0], buf, sizeof(buf));
		T_ASSERT(got == 6, "%s: pipe holds %zd bytes, want 6", bn, got);

		/* One past: refused, and mc_run refuses the call. */
		setup(p[1]);
		errno = 4242;
		r = mc_set_ref(&c[N - 1], 2, MC_MAX_REF + 1);
		T_ASSERT(r == -EINVAL, "%s: mc_set_ref(255) = %d, want -EINVAL", bn, r);
		T_ASSERT(errno == 4242, "%s: errno changed", bn);
		T_ASSERT(c[N - 1].ref[2] == 0 && (c[N - 1].flags & MC_BAD_REF), "%s: not marked", bn);
		c[0].result = 777;
		r = mc_run(ctx, c, N);
		T_ASSERT(r == -EINVAL, "%s: mc_run with a reference to 255 = %d, want -EINVAL", bn, r);
		T_ASSERT(c[0].result == 777, "%s: call 0 ran", bn);
		got = read(p[0], buf, sizeof(buf));
		T_ASSERT(got < 0 && errno == EAGAIN, "%s: something was written (%zd)", bn, got);

		/* Far past, and an argument that does not exist. */
		setup(p[1]);
		T_ASSERT(mc_set_ref(&c[N - 1], 2, 1000) == -EINVAL, "%s: call 1000", bn);
		T_ASSERT(mc_run(ctx, c, N) == -EINVAL, "%s: mc_run after call 1000", bn);
		setup(p[1]);
		T_ASSERT(mc_set_ref(&c[5], 6, 0) == -EINVAL, "%s: argument 6", bn);
		T_ASSERT(mc_explain(ctx, c, N, NULL, 0) == -EINVAL, "%s: mc_explain after argument 6", bn);
		mc_ctx_free(ctx);
	}
	return t_finish();
}
