/* SPDX-License-Identifier: MIT */
/* Specialized multi-calls: the seeds' clusters (seed 000 §3.4, §4) as one
 * function each. */
#include "internal.h"

#include <sys/time.h>

/* The loop both copy multi-calls run: body[0] reads, body[1] passes on
 * what it read (its length argument is the read's result) until the read
 * returns 0 or fails; either call failing ends the loop. */
static int run_pair(struct mc_ctx *ctx, struct mc_call body[2], unsigned long max_iterations,
		    long res[2], unsigned long *iterations)
{
	struct mc_loop loop = { 0, MC_WHILE_GT, 0, max_iterations };
	int ret;

	mc_set_ref(&body[1], 2, 0);
	mc_set_check(&body[0]);
	mc_set_check(&body[1]);
	ret = mc_run_loop(ctx, body, 2, &loop, iterations);
	if (ret >= 0) {
		res[0] = body[0].result;
		res[1] = body[1].result;
	}
	return ret;
}

int mc_copy(struct mc_ctx *ctx, int in, int out, void *buf, size_t bs,
	    unsigned long max_iterations, long res[2], unsigned long *iterations)
{
	struct mc_call body[2];

	if (!res)
		return -EINVAL;
	mc_prep_read(&body[0], in, buf, bs);
	mc_prep_write(&body[1], out, buf, 0);
	return run_pair(ctx, body, max_iterations, res, iterations);
}

int mc_read_sendto(struct mc_ctx *ctx, int in, void *buf, size_t len, int sock, int flags,
		   const struct sockaddr *to, socklen_t tolen, unsigned long max_iterations,
		   long res[2], unsigned long *iterations)
{
	struct mc_call body[2];

	if (!res)
		return -EINVAL;
	mc_prep_read(&body[0], in, buf, len);
	mc_prep_sendto(&body[1], sock, buf, 0, flags, to, tolen);
	return run_pair(ctx, body, max_iterations, res, iterations);
}

int mc_select_time(struct mc_ctx *ctx, int nfds, fd_set *readfds, fd_set *writefds,
		   fd_set *exceptfds, struct timeval *timeout, struct timeval *now, long res[2])
{
	MC_ERRNO_SAVE;
	long r;
	int ret;

	if (!ctx || !res) {
		ret = -EINVAL;
		goto out;
	}
	if (ctx->backend == MC_BACKEND_KMOD || (ctx->backend == MC_BACKEND_AUTO && ctx->kmod_fd >= 0)) {
		/* One crossing for both: select checked, then the clock (auto too:
		 * the vDSO's clock is a crossing of its own where the clock source
		 * cannot be read from user space). */
		struct mc_call c[2];

		mc_prep_select(&c[0], nfds, readfds, writefds, exceptfds, timeout);
		mc_set_check(&c[0]);
		mc_prep_gettimeofday(&c[1], now);
		ret = mc_run(ctx, c, 2);
		if (ret >= 0) {
			res[0] = c[0].result;
			res[1] = c[1].result;
			ret = c[0].result < 0 ? 0 : 2;
		}
		goto out;
	}
	ctx->stats.runs++;
#ifdef SYS_select
	r = __mc_sys(ctx, SYS_select, nfds, (long)readfds, (long)writefds, (long)exceptfds,
		     (long)timeout, 0);
#else
	r = -ENOSYS;
#endif
	res[0] = r;
	ctx->stats.calls++;
	ctx->stats.direct++;
	if (r < 0) {
		res[1] = -ECANCELED;
		ret = 0;
		goto out;
	}
	if (ctx->backend == MC_BACKEND_DIRECT || ctx->backend == MC_BACKEND_URING) {
		res[1] = __mc_sys(ctx, SYS_gettimeofday, (long)now, 0, 0, 0, 0, 0);
		ctx->stats.direct++;
	} else {
		/* The vDSO: the time without a crossing, as gettimeofday(3). */
		res[1] = now ? gettimeofday(now, NULL) : 0;
		ctx->stats.fused++;
	}
	ctx->stats.calls++;
	ret = 2;
out:
	MC_ERRNO_RESTORE;
	return ret;
}
