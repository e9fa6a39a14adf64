/* SPDX-License-Identifier: MIT */
/* The kmod backend: one MC_IOC_RUN on /dev/multicall (kmod/) runs a whole
 * multi-call or looped multi-call in one crossing.  The module leaves
 * exactly the state the direct backend would; what it cannot run it
 * refuses before anything runs, and the caller falls back to direct. */
#include "internal.h"

#include <fcntl.h>
#include <sys/ioctl.h>

#include "../../kmod/uapi/multicall_kmod.h"

_Static_assert(sizeof(struct mc_call) == sizeof(struct mc_kmod_call), "struct mc_call is the module's ABI");
_Static_assert(MC_MAX_CALLS == MC_KMOD_MAX_CALLS, "one bound");
_Static_assert(MC_ABI_VERSION == MC_KMOD_ABI, "one ABI version");
_Static_assert(MC_WHILE_GT == 0 && MC_WHILE_GE == 1 && MC_WHILE_EQ == 2 && MC_WHILE_NE == 3 && MC_WHILE_LT == 4 && MC_WHILE_LE == 5,
	       "mc_loop_goes_on numbers the conditions as <multicall.h>");

int __mc_kmod_open(struct mc_ctx *ctx)
{
	long fd = __mc_sys(ctx, SYS_openat, AT_FDCWD, (long)MC_KMOD_DEVICE, O_RDWR | O_CLOEXEC, 0, 0, 0);
	long v;

	if (fd < 0)
		return (fd == -ENOENT || fd == -ENXIO || fd == -ENODEV) ? -ENODEV : (int)fd;
	/* A device of that name that does not answer our version is not ours. */
	v = __mc_sys(ctx, SYS_ioctl, fd, MC_IOC_VERSION, 0, 0, 0, 0);
	if (v != MC_KMOD_ABI) {
		__mc_sys(ctx, SYS_close, fd, 0, 0, 0, 0, 0);
		return -ENODEV;
	}
	ctx->kmod_fd = __mc_fd_out_of_the_way((int)fd);
	/* auto takes the module only out of the program's way: a device left
	 * at a low number would shift the numbers the program's own opens get. */
	if (ctx->backend == MC_BACKEND_AUTO && ctx->kmod_fd == (int)fd) {
		__mc_sys(ctx, SYS_close, fd, 0, 0, 0, 0, 0);
		ctx->kmod_fd = -1;
		return -ENODEV;
	}
	return 0;
}

/*
 * Runs calls (a loop when loop is set) through the module.  Returns what
 * mc_run / mc_run_loop return, or MC_KMOD_FALLBACK when the module refused
 * before running anything (a caller under seccomp: -EPERM), or the
 * descriptor is no longer the module's, and the caller must run the
 * program another way.
 *
 * -EINTR from the module means call hdr.next was interrupted by a signal
 * whose handler does not restart calls: that call failed with EINTR, as it
 * would have run directly; the program goes on after it here, as direct's
 * loop would.
 */
int __mc_kmod_run(struct mc_ctx *ctx, struct mc_call *calls, unsigned n, const struct mc_loop *loop,
		  unsigned long *iterations)
{
	struct mc_kmod_run h = {
		.abi = MC_KMOD_ABI,
		.flags = loop ? MC_KRUN_LOOP : 0,
		.calls = (unsigned long)calls,
		.n = n,
	};
	long r;

	if (loop)
		h.loop = (struct mc_kmod_loop){ loop->call, loop->cond, loop->value, loop->max_iterations };
	for (;;) {
		unsigned i;

		r = __mc_sys(ctx, SYS_ioctl, ctx->kmod_fd, MC_IOC_RUN, (long)&h, 0, 0, 0);
		if (r != -EINTR)
			break;
		i = h.next;
		h.flags &= ~MC_KRUN_RESUME;
		calls[i].result = -EINTR;
		ctx->stats.calls++;
		if (__mc_stops(calls, i)) {
			__mc_cancel_rest(calls, i + 1, n);
			r = i;
			break;
		}
		if (loop && i == loop->call && !mc_loop_goes_on(loop->cond, loop->value, -EINTR)) {
			__mc_cancel_rest(calls, i + 1, n);
			r = n;
			break;
		}
		if (i + 1 < n) {
			h.next = i + 1;
			continue;
		}
		if (!loop || h.iterations >= loop->max_iterations) {
			r = n;
			break;
		}
		h.iterations++;
		h.next = 0;
	}
	/* Refused before anything ran: a caller under seccomp (EPERM), or a
	 * descriptor the program closed (EBADF) or reused for another file
	 * (ENOTTY: the module knows MC_IOC_RUN). */
	if ((r == -EPERM || r == -EBADF || r == -ENOTTY) && h.next == 0 && h.iterations == 0) {
		if (r != -EPERM)
			ctx->kmod_fd = -1; /* the number is the program's now: never closed by us */
		return MC_KMOD_FALLBACK;
	}
	if (iterations)
		*iterations = h.iterations;
	if (r >= 0) {
		/* Calls that ran: the last (partial) iteration's, and whole ones before. */
		unsigned last = r < (long)n ? (unsigned)r + 1
			      : loop && !mc_loop_goes_on(loop->cond, loop->value, calls[loop->call].result) ? loop->call + 1 : n;

		ctx->stats.calls += last + (loop && h.iterations ? (h.iterations - 1) * n : 0);
	}
	return (int)r;
}
