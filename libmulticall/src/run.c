/* SPDX-License-Identifier: MIT */
/* mc_run, mc_run_loop, mc_explain: validation and the executor every
 * backend shares.  The direct path is the reference semantics (seed 000
 * fig. 2, 0-based); fusion and io_uring steps must leave exactly the state
 * it would. */
#include "internal.h"
#include "../../kmod/uapi/multicall_kmod.h"

#include <limits.h>

static int predictable(long nr)
{
	return nr == SYS_read || nr == SYS_write || nr == SYS_pread64 || nr == SYS_pwrite64;
}

/* loop: references to a call at or after the referencing one are
 * loop-carried and allowed; in a plain multi-call they are invalid. */
static int validate(const struct mc_call *c, unsigned n, int loop)
{
	unsigned i, j;

	if (n > MC_MAX_CALLS || (n && !c))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (c[i].flags & ~MC_CALL_FLAGS)
			return -EINVAL;
		if (scl_multicall_refused(c[i].nr, c[i].args, c[i].ref))
			return -EINVAL;
		if (mc_kmod_refused_args(c[i].nr, (const __s64 *)c[i].args, c[i].ref))
			return -EINVAL;
		if ((c[i].flags & MC_PREDICT) && !predictable(c[i].nr))
			return -EINVAL;
		/* A short-transfer check needs a count (or lseek's literal
		 * SEEK_SET, whose result is the offset asked for).  In a loop
		 * body only a transfer's, and not a count that is the call's
		 * own previous result (overwritten when the check runs): a
		 * loop-carried count is a later call's result of the previous
		 * iteration, still there when the check runs. */
		if ((c[i].flags & MC_CHECK_FULL) &&
		    !(predictable(c[i].nr) ||
		      (!loop && c[i].nr == SYS_lseek && !c[i].ref[2] && c[i].args[2] == SEEK_SET)))
			return -EINVAL;
		if ((c[i].flags & MC_CHECK_FULL) && loop && c[i].ref[2] == i + 1)
			return -EINVAL;
		if (__mc_likely(!__mc_has_refs(&c[i])))
			continue;
		for (j = 0; j < 6; j++) {
			unsigned r = c[i].ref[j];

			if (!r)
				continue;
			if (loop ? r > n : r > i)
				return -EINVAL;
		}
	}
	return 0;
}

/* MC_CHECK_FULL is not in the module's ABI 1 (it would refuse the call):
 * such a multi-call runs as the kmod backend's fallback does. */
static int kmod_unknown_flags(const struct mc_call *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (c[i].flags & MC_CHECK_FULL)
			return 1;
	return 0;
}

/* How calls run call by call: kmod's fallback (a caller the module
 * refuses) is the reference semantics. */
static unsigned exec_mode(const struct mc_ctx *ctx)
{
	return ctx->backend == MC_BACKEND_KMOD ? MC_BACKEND_DIRECT : ctx->backend;
}

/*
 * auto where the kernel module answers (ctx->kmod_fd open): a multi-call
 * of two calls or more is one crossing through the module, except where
 * fusion does less kernel work in one call of its own -- a program that
 * one fused call covers on a registered descriptor (planned without a
 * probe: a probe would be a crossing of its own).  A single call runs as
 * it is: one crossing either way.
 */
static int auto_kmod_run(struct mc_ctx *ctx, const struct mc_call *c, unsigned n)
{
	struct __mc_run run;
	struct mc_step step;
	unsigned i, next;

	if (ctx->backend != MC_BACKEND_AUTO || ctx->kmod_fd < 0 || n < 2)
		return 0;
	for (i = 0; i < n; i++)
		if (c[i].ref[0] || c[i].args[0] != c[0].args[0])
			break;
	if (i < n || !__mc_registered(ctx, c[0].args[0]))
		return 1;
	memset(&run, 0, sizeof(run));
	run.ctx = ctx;
	run.c = (struct mc_call *)c; /* planning never writes to calls */
	run.n = n;
	run.mode = MC_BACKEND_AUTO;
	run.planning = 1;
	return !(__mc_fuse_at(&run, 0, &next, &step) && next == n);
}

/* The same for a looped multi-call: the copy loop between regular files
 * and the read/sendto loop from one to a datagram socket stay with fusion
 * (copy_file_range, readv + sendmmsg: the data never passes through the
 * caller's buffer); any other loop, or one the calibration does not fuse,
 * is one crossing through the module.  Classifying the two descriptors
 * costs a few probes, once per loop. */
static int auto_fuses_loop(struct mc_ctx *ctx, const struct mc_call *body, unsigned n, const struct mc_loop *loop)
{
	struct __mc_run run;
	int rule = __mc_loop_shape(body, n, loop), reg;
	unsigned out;

	if (rule < 0)
		return 0;
	memset(&run, 0, sizeof(run));
	run.ctx = ctx;
	if (__mc_run_fdinfo(&run, (int)body[loop->call].args[0], 0, &reg).cls != FDC_FILE)
		return 0;
	out = __mc_run_fdinfo(&run, (int)body[1 - loop->call].args[0], 0, &reg).cls;
	return out == (rule == R_COPY ? FDC_FILE : FDC_DGRAM);
}

/* The module refused a caller before running anything (a seccomp filter,
 * which stays for the thread's life), or the program closed its
 * descriptor (then __mc_kmod_run forgot it: the number is the program's):
 * auto stops asking it. */
static void auto_kmod_off(struct mc_ctx *ctx)
{
	if (ctx->kmod_fd >= 0)
		__mc_sys(ctx, SYS_close, ctx->kmod_fd, 0, 0, 0, 0, 0);
	ctx->kmod_fd = -1;
}

/* Kinds for the io_uring calibration. */
static unsigned ukind(long nr)
{
	switch (nr) {
	case SYS_read:
	case SYS_pread64:
	case SYS_readv:
	case SYS_preadv:
		return U_READ_FILE;
	case SYS_write:
	case SYS_pwrite64:
	case SYS_writev:
	case SYS_pwritev:
		return U_WRITE_FILE;
	default:
		return U_OTHER;
	}
}

/* Length of the run of io_uring-expressible calls at i, or 0. */
static unsigned uring_span(struct __mc_run *run, unsigned i)
{
	unsigned j = i;

	while (j < run->n && __mc_uring_expressible(run, j))
		j++;
	return j - i;
}

static int auto_wants_uring(struct __mc_run *run, unsigned i, unsigned span)
{
	const struct __mc_calib *cal = run->ctx->cal;
	unsigned kind = ukind(run->c[i].nr), k, th;

	for (k = i + 1; k < i + span; k++)
		if (ukind(run->c[k].nr) != kind)
			kind = U_OTHER;
	th = cal->uring_min[kind];
	return th && span >= th;
}

unsigned __mc_exec(struct __mc_run *run, unsigned first)
{
	struct mc_ctx *ctx = run->ctx;
	struct mc_call *c = run->c;
	unsigned n = run->n, i = first;

	if (run->mode == MC_BACKEND_DIRECT) {
		for (; i < n; i++) {
			__mc_exec_one(ctx, c, i);
			if (__mc_stops(c, i))
				return i;
		}
		return n;
	}

	while (i < n) {
		/* Every rule covers two calls or more, of one kind but for lseek
		 * before reads: an isolated call costs one comparison. */
		if (run->mode != MC_BACKEND_URING && i >= run->nofuse_until && i + 1 < n &&
		    (c[i + 1].nr == c[i].nr || c[i].nr == SYS_lseek)) {
			unsigned next, p;

			if (__mc_fuse_at(run, i, &next, NULL)) {
				for (p = i; p < next; p++)
					if (__mc_stops(c, p))
						return p;
				i = next;
				continue;
			}
		}
		if (run->mode == MC_BACKEND_URING ||
		    (run->mode == MC_BACKEND_AUTO && run->ctx->cal->any_uring)) {
			unsigned span = uring_span(run, i);

			if (span && (run->mode == MC_BACKEND_URING || auto_wants_uring(run, i, span))) {
				unsigned stop = 0, next;

				next = (unsigned)__mc_uring_run(run, i, i + span, &stop);
				if (stop)
					return next;
				if (next > i) {
					run->nfd = 0; /* the segment may have opened or closed */
					i = next;
					continue;
				}
				/* io_uring unavailable: fall through to the call itself */
			}
		}
		{
			__mc_exec_one(ctx, c, i);
			if (__mc_stops(c, i))
				return i;
			if (run->nfd && __mc_changes_fds(c[i].nr))
				run->nfd = 0;
		}
		i++;
	}
	return n;
}

int mc_run(struct mc_ctx *ctx, struct mc_call *calls, unsigned n)
{
	MC_ERRNO_SAVE;
	struct __mc_run run;
	unsigned stop;
	int ret;

	if (!ctx) {
		ret = -EINVAL;
		goto out;
	}
	ret = validate(calls, n, 0);
	if (ret < 0)
		goto out;
	ctx->stats.runs++;
	if (((ctx->backend == MC_BACKEND_KMOD && n) || auto_kmod_run(ctx, calls, n)) &&
	    !kmod_unknown_flags(calls, n)) {
		ret = __mc_kmod_run(ctx, calls, n, NULL, NULL);
		if (ret != MC_KMOD_FALLBACK)
			goto out;
		if (ctx->backend == MC_BACKEND_AUTO)
			auto_kmod_off(ctx);
	}
	run.ctx = ctx;
	run.c = calls;
	run.n = n;
	run.mode = exec_mode(ctx);
	run.nofuse_until = 0;
	run.planning = 0;
	run.nfd = 0; /* the descriptor cache's entries are read only below nfd */
	stop = __mc_exec(&run, 0);
	if (stop < n)
		__mc_cancel_rest(calls, stop + 1, n);
	ret = (int)stop;
out:
	MC_ERRNO_RESTORE;
	return ret;
}

/* A looped multi-call stopped at call stop: the later calls did not run in
 * this iteration.  A count that a call checked full took from one of them
 * (its previous iteration's result: the count the stopped call asked for)
 * stays, so that the caller learns what the failed transfer asked for;
 * every other later call gets -ECANCELED. */
static void cancel_after_stop(struct mc_call *body, unsigned stop, unsigned n)
{
	unsigned keep = (body[stop].flags & MC_CHECK_FULL) ? body[stop].ref[2] : 0;

	for (unsigned k = stop + 1; k < n; k++)
		if (k + 1 != keep)
			body[k].result = -ECANCELED;
}

int mc_run_loop(struct mc_ctx *ctx, struct mc_call *body, unsigned n, const struct mc_loop *loop,
		unsigned long *iterations)
{
	MC_ERRNO_SAVE;
	struct __mc_run run;
	unsigned long it = 0;
	unsigned stop;
	int ret, full;

	if (iterations)
		*iterations = 0;
	if (!ctx || !loop || n == 0 || loop->call >= n || loop->cond > MC_WHILE_LE ||
	    loop->max_iterations == 0) {
		ret = -EINVAL;
		goto out;
	}
	ret = validate(body, n, 1);
	if (ret < 0)
		goto out;
	full = kmod_unknown_flags(body, n);
	ctx->stats.runs++;
	if (ctx->backend == MC_BACKEND_AUTO && ctx->kmod_fd >= 0 && auto_fuses_loop(ctx, body, n, loop)) {
		ret = __mc_fuse_loop(ctx, ctx->backend, body, n, loop, &it, NULL);
		if (ret >= 0)
			goto done;
	}
	if (!full &&
	    (ctx->backend == MC_BACKEND_KMOD || (ctx->backend == MC_BACKEND_AUTO && ctx->kmod_fd >= 0))) {
		ret = __mc_kmod_run(ctx, body, n, loop, &it);
		if (ret != MC_KMOD_FALLBACK)
			goto done;
		if (ctx->backend == MC_BACKEND_AUTO)
			auto_kmod_off(ctx);
		it = 0;
	}
	if (ctx->backend == MC_BACKEND_AUTO || ctx->backend == MC_BACKEND_FUSION) {
		ret = __mc_fuse_loop(ctx, ctx->backend, body, n, loop, &it, NULL);
		if (ret >= 0)
			goto done;
	}
	memset(&run, 0, sizeof(run));
	run.ctx = ctx;
	run.c = body;
	/* A body checked full runs call by call: io_uring would complete the
	 * calls after a checked one before its check reads their previous
	 * results. */
	run.mode = full ? MC_BACKEND_DIRECT : exec_mode(ctx);
	ret = (int)n;
	while (it < loop->max_iterations) {
		it++;
		run.nofuse_until = 0;
		/* Up to and including the tested call, then the test, then the rest. */
		run.n = loop->call + 1;
		stop = __mc_exec(&run, 0);
		if (stop <= loop->call) {
			cancel_after_stop(body, stop, n);
			ret = (int)stop;
			break;
		}
		if (!mc_loop_goes_on(loop->cond, loop->value, body[loop->call].result)) {
			__mc_cancel_rest(body, loop->call + 1, n);
			break;
		}
		run.n = n;
		stop = __mc_exec(&run, loop->call + 1);
		if (stop < n) {
			cancel_after_stop(body, stop, n);
			ret = (int)stop;
			break;
		}
	}
done:
	if (iterations)
		*iterations = it;
out:
	MC_ERRNO_RESTORE;
	return ret;
}

int mc_explain(struct mc_ctx *ctx, const struct mc_call *calls, unsigned n, struct mc_step *steps,
	       unsigned max_steps)
{
	MC_ERRNO_SAVE;
	struct __mc_run run;
	unsigned i = 0, ns = 0;
	int ret;

	if (!ctx || (!steps && max_steps)) {
		ret = -EINVAL;
		goto out;
	}
	ret = validate(calls, n, 0);
	if (ret < 0)
		goto out;
	memset(&run, 0, sizeof(run));
	run.ctx = ctx;
	run.c = (struct mc_call *)calls; /* planning never writes to calls */
	run.n = n;
	run.mode = exec_mode(ctx);
	run.planning = 1;
	while (i < n) {
		struct mc_step s = { i, 1, MC_MECH_DIRECT, 1 };
		unsigned next;

		if (ctx->backend == MC_BACKEND_KMOD || (i == 0 && auto_kmod_run(ctx, calls, n))) {
			s.count = n;
			s.mech = MC_MECH_KMOD;
		} else if (run.mode == MC_BACKEND_FUSION || run.mode == MC_BACKEND_AUTO) {
			if (!__mc_fuse_at(&run, i, &next, &s)) {
				s = (struct mc_step){ i, 1, MC_MECH_DIRECT, 1 };
				if (run.mode == MC_BACKEND_AUTO && ctx->cal->any_uring) {
					unsigned span = uring_span(&run, i);

					if (span && auto_wants_uring(&run, i, span))
						s = (struct mc_step){ i, span, MC_MECH_URING, 1 };
				}
			}
		} else if (run.mode == MC_BACKEND_URING) {
			unsigned span = uring_span(&run, i);

			if (span)
				s = (struct mc_step){ i, span, MC_MECH_URING, 1 };
		}
		if (s.mech == MC_MECH_DIRECT && __mc_changes_fds(calls[i].nr))
			run.nfd = 0;
		if (ns < max_steps)
			steps[ns] = s;
		ns++;
		i += s.count;
	}
	ret = (int)ns;
out:
	MC_ERRNO_RESTORE;
	return ret;
}
