/* SPDX-License-Identifier: MIT */
/* Fusion: runs of calls rewritten into the fewest existing system calls
 * with the same observable effect.  Each rule has its proof in
 * docs/MULTICALL.md; the comments here say which step of it a line is.
 *
 * Common shape: gather the longest run the rule may cover, classify the
 * descriptor, make the fused call, then hand out its result.  A fused call
 * that transfers everything gives every call its full length.  One that
 * ends short gives full lengths to the calls it covered, the partial count
 * to the call it ended in (what that call alone would have returned), and
 * leaves the rest of the run to run call by call.  One that fails without
 * transferring anything either becomes the first call's result (when that
 * call alone would have failed the same way, or when the failure had a
 * side effect such as a signal that must not happen twice) or is dropped
 * and the run re-executed call by call (when it had no effect at all). */
#include "internal.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>

#define MAX_RW 0x7ffff000L       /* the kernel's MAX_RW_COUNT */
#define PIPE_ATOMIC 4096L        /* PIPE_BUF: one page, written all or nothing */
#define SEEK_LIMIT (1L << 40)    /* below every plain filesystem's s_maxbytes */
#define MAX_SEGS 64

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

enum { ERR_MAP, ERR_REEXEC };

/* Is a run of k calls long enough to fuse on this class of descriptor?
 * A threshold of 0 means never. */
static int worth(const struct __mc_run *run, unsigned rule, unsigned cls, int reg, unsigned k)
{
	unsigned th = run->mode == MC_BACKEND_FUSION ? 2 : run->ctx->cal->min_run[rule][cls][reg];

	return th && k >= th;
}

/* The shortest run worth classifying the descriptor for (a registered
 * one is known without a system call). */
static unsigned min_any(const struct __mc_run *run, unsigned rule, long fd)
{
	unsigned m;

	if (run->mode == MC_BACKEND_FUSION)
		return 2;
	m = run->ctx->cal->min_any[rule][__mc_registered(run->ctx, fd)];
	return m ? m : UINT_MAX;
}

/* Argument j of call m in a step starting at i.  1: known (a literal or
 * the result of a call already run; in a loop, also a loop-carried value);
 * 0: produced inside the step, which must end before m; -1 (explain only):
 * the result of an earlier call, unknown until it runs. */
static int arg_at(const struct __mc_run *run, unsigned i, unsigned m, unsigned j, long *v)
{
	const struct mc_call *cl = &run->c[m];
	unsigned r = cl->ref[j], k;

	if (!r) {
		*v = cl->args[j];
		return 1;
	}
	k = r - 1u;
	if (k >= i && k < m)
		return 0;
	if (run->planning && k < i)
		return -1;
	*v = run->c[k].result;
	return 1;
}

/* While planning: records the step instead of taking it.  Returns k, as a
 * step taken does. */
static unsigned plan_step(struct mc_step *plan, unsigned i, unsigned k, unsigned mech,
			  unsigned sys, unsigned *next)
{
	plan->first = i;
	plan->count = k;
	plan->mech = mech;
	plan->syscalls = sys;
	*next = i + k;
	return k;
}

/* Hands out the result T of a fused transfer over iov[0..k) to calls
 * [i, i+k).  Returns k (the step was taken); *next is the first call left
 * to run. */
static unsigned distribute(struct __mc_run *run, unsigned i, unsigned k, long T, int policy,
			   unsigned *next)
{
	struct mc_ctx *ctx = run->ctx;
	struct mc_call *c = run->c;
	const struct iovec *iov = ctx->iov;
	unsigned p = 0;

	if (T < 0) {
		run->nofuse_until = i + k;
		ctx->stats.completions++;
		if (policy == ERR_MAP) {
			c[i].result = T;
			ctx->stats.fused++;
			ctx->stats.calls++;
			*next = i + 1;
		} else {
			*next = i;
		}
		return k;
	}
	while (p < k && (unsigned long)T >= iov[p].iov_len) {
		c[i + p].result = (long)iov[p].iov_len;
		T -= (long)iov[p].iov_len;
		p++;
	}
	if (p < k) {
		run->nofuse_until = i + k;
		ctx->stats.completions++;
		if (T > 0)
			c[i + p++].result = T;
	}
	ctx->stats.fused += p;
	ctx->stats.calls += p;
	*next = i + p;
	return k;
}

/* ---- consecutive write / read on one descriptor -> writev / readv ---- */
static unsigned fuse_rw(struct __mc_run *run, unsigned i, unsigned *next, struct mc_step *plan,
			int is_write)
{
	struct mc_ctx *ctx = run->ctx;
	struct mc_call *c = run->c;
	struct iovec *iov = ctx->iov;
	unsigned rule = is_write ? R_WRITEV : R_READV;
	unsigned m, k, lim = run->n;
	long nr = c[i].nr, fd, total = 0, T;
	struct __mc_fdinfo fi;
	int reg, policy;

	if (arg_at(run, i, i, 0, &fd) != 1)
		return 0;
	if (lim - i > MC_MAX_CALLS)
		lim = i + MC_MAX_CALLS;
	for (m = i; m < lim; m++) {
		long f, b = 0, len = 0;
		int kb, kl;

		if (c[m].nr != nr)
			break;
		if (__mc_likely(!__mc_has_refs(&c[m]))) {
			/* the common case: all literals */
			if (c[m].args[0] != fd)
				break;
			b = c[m].args[1];
			len = c[m].args[2];
		} else {
			if (arg_at(run, i, m, 0, &f) != 1 || f != fd)
				break;
			kb = arg_at(run, i, m, 1, &b);
			kl = arg_at(run, i, m, 2, &len);
			if (!kb || !kl)
				break;
			if (kb < 0)
				b = 0;
			if (kl < 0)
				len = 1;
		}
		/* Zero-length calls have their own rules (a null write succeeds
		 * even on a broken pipe): leave them to run as they are. */
		if (len <= 0 || len > MAX_RW || total + len > MAX_RW)
			break;
		iov[m - i].iov_base = (void *)b;
		iov[m - i].iov_len = (size_t)len;
		total += len;
	}
	k = m - i;
	if (k < 2 || k < min_any(run, rule, fd))
		return 0;
	fi = __mc_run_fdinfo(run, (int)fd, 0, &reg);
	/* Reads are fused from regular files only: a read from a pipe stops at
	 * a packet (O_DIRECT on the writer's end, invisible from the reader's),
	 * one from a socket at an urgent mark or a change of credentials, and
	 * from both a readv that meets a bad buffer rejects a whole kernel
	 * buffer, not the bytes past the fault: in each case one readv is not
	 * the reads one after the other. */
	if (!is_write && fi.cls != FDC_FILE)
		return 0;
	/* Writes: to a file, /dev/null, a pipe or an AF_UNIX stream socket.
	 * Not to TCP: it copies a write in chunks that cross the callers'
	 * buffers and drops a whole chunk when a buffer faults, so a writev
	 * could send part of a write whose own buffer was fine and stop. */
	switch (fi.cls) {
	case FDC_FILE:
	case FDC_NULL:
		break;
	case FDC_PIPE:
	case FDC_USTREAM:
		/* A pipe writes up to PIPE_BUF all or nothing, and an AF_UNIX
		 * stream socket one chunk (tens of KiB) all or nothing: a fused
		 * chunk must stay within one page, so that it never leaves half of
		 * a write behind or waits for room a single write would not. */
		if (is_write) {
			/* A unix stream socket with the smallest SO_SNDBUF cuts at
			 * 2240 bytes. */
			long atomic = fi.cls == FDC_PIPE ? PIPE_ATOMIC : 2048;

			total = 0;
			for (m = 0; m < k && total + (long)iov[m].iov_len <= atomic; m++)
				total += (long)iov[m].iov_len;
			k = m;
			if (k < 2)
				return 0;
		}
		break;
	default:
		return 0;
	}
	if (!worth(run, rule, fi.cls, reg, k))
		return 0;
	if (run->planning)
		return plan_step(plan, i, k, is_write ? MC_MECH_WRITEV : MC_MECH_READV, 1, next);
	if (!is_write) {
		/* From a regular file a readv returns what the reads would, up to
		 * the end of file or the byte a fault stops at. */
		T = __mc_sys(ctx, SYS_readv, fd, (long)iov, k, 0, 0, 0);
		policy = ERR_MAP;
	} else if (fi.cls == FDC_PIPE || fi.cls == FDC_USTREAM) {
		/* Without waiting: a full pipe would make the fused write wait
		 * where the first write alone might not.  EAGAIN (ours), EFAULT
		 * (the chunk is dropped whole) and other failures without effect
		 * re-run the calls; EPIPE raised SIGPIPE once, as the first write
		 * would, and is its result; a socket error (ECONNRESET) is reported
		 * once, so it is the first write's too. */
		T = __mc_sys(ctx, SYS_pwritev2, fd, (long)iov, k, -1, 0, RWF_NOWAIT);
		if (fi.cls == FDC_PIPE)
			policy = T == -EPIPE ? ERR_MAP : ERR_REEXEC;
		else
			policy = (T == -EAGAIN || T == -EFAULT || T == -EOPNOTSUPP) ? ERR_REEXEC : ERR_MAP;
	} else {
		/* A file (or /dev/null) takes a writev byte by byte in order: it
		 * ends where a write would (a full disk, RLIMIT_FSIZE, a fault), and
		 * a failure with nothing written is the first write's own. */
		T = __mc_sys(ctx, SYS_writev, fd, (long)iov, k, 0, 0, 0);
		policy = ERR_MAP;
	}
	return distribute(run, i, k, T, policy, next);
}

/* ---- pread / pwrite at consecutive offsets -> preadv / pwritev ---- */
static unsigned fuse_prw(struct __mc_run *run, unsigned i, unsigned *next, struct mc_step *plan,
			 int is_write)
{
	struct mc_ctx *ctx = run->ctx;
	struct mc_call *c = run->c;
	struct iovec *iov = ctx->iov;
	unsigned rule = is_write ? R_PWRITEV : R_PREADV;
	unsigned m, k, lim = run->n;
	long nr = c[i].nr, fd, off0, total = 0, T;
	struct __mc_fdinfo fi;
	int reg;

	if (arg_at(run, i, i, 0, &fd) != 1 || arg_at(run, i, i, 3, &off0) != 1 || off0 < 0)
		return 0;
	if (lim - i > MC_MAX_CALLS)
		lim = i + MC_MAX_CALLS;
	for (m = i; m < lim; m++) {
		long f, b = 0, len = 0, off;
		int kb, kl;

		if (c[m].nr != nr || arg_at(run, i, m, 0, &f) != 1 || f != fd ||
		    arg_at(run, i, m, 3, &off) != 1 || off != off0 + total)
			break;
		kb = arg_at(run, i, m, 1, &b);
		kl = arg_at(run, i, m, 2, &len);
		if (!kb || !kl)
			break;
		if (kb < 0)
			b = 0;
		if (kl < 0)
			len = 1;
		if (len <= 0 || len > MAX_RW || total + len > MAX_RW || off0 + total + len > LONG_MAX / 2)
			break;
		iov[m - i].iov_base = (void *)b;
		iov[m - i].iov_len = (size_t)len;
		total += len;
	}
	k = m - i;
	if (k < 2 || k < min_any(run, rule, fd))
		return 0;
	fi = __mc_run_fdinfo(run, (int)fd, 0, &reg);
	if (fi.cls != FDC_FILE)
		return 0;
	if (!worth(run, rule, fi.cls, reg, k))
		return 0;
	if (run->planning)
		return plan_step(plan, i, k, is_write ? MC_MECH_PWRITEV : MC_MECH_PREADV, 1, next);
	T = __mc_sys(ctx, is_write ? SYS_pwritev : SYS_preadv, fd, (long)iov, k, off0, 0, 0);
	return distribute(run, i, k, T, ERR_MAP, next);
}

/* ---- lseek(SEEK_SET) + reads -> preadv per segment, one lseek at the end ---- */
struct seg {
	unsigned lseek_idx, first_read, nreads, iov0;
	long off, total;
};

static unsigned fuse_seek_read(struct __mc_run *run, unsigned i, unsigned *next,
			       struct mc_step *plan)
{
	struct mc_ctx *ctx = run->ctx;
	struct mc_call *c = run->c;
	struct iovec *iov = ctx->iov;
	struct seg segs[MAX_SEGS];
	unsigned m, k, lim = run->n, nseg = 0, niov = 0, s;
	long fd, v;
	struct __mc_fdinfo fi;
	int reg;

	if (arg_at(run, i, i, 0, &fd) != 1)
		return 0;
	if (lim - i > MC_MAX_CALLS)
		lim = i + MC_MAX_CALLS;
	for (m = i; m < lim; m++) {
		long f, b = 0, len = 0, off, wh;
		int kb, kl;

		if (c[m].nr == SYS_lseek) {
			if (nseg == MAX_SEGS || arg_at(run, i, m, 0, &f) != 1 || f != fd ||
			    arg_at(run, i, m, 1, &off) != 1 || arg_at(run, i, m, 2, &wh) != 1 ||
			    wh != SEEK_SET || off < 0 || off >= SEEK_LIMIT)
				break;
			/* A segment needs at least one read after its lseek. */
			if (m + 1 >= lim || c[m + 1].nr != SYS_read)
				break;
			segs[nseg].lseek_idx = m;
			segs[nseg].first_read = m + 1;
			segs[nseg].nreads = 0;
			segs[nseg].iov0 = niov;
			segs[nseg].off = off;
			segs[nseg].total = 0;
			nseg++;
			continue;
		}
		if (c[m].nr != SYS_read || nseg == 0 || arg_at(run, i, m, 0, &f) != 1 || f != fd)
			break;
		kb = arg_at(run, i, m, 1, &b);
		kl = arg_at(run, i, m, 2, &len);
		if (!kb || !kl)
			break;
		if (kb < 0)
			b = 0;
		if (kl < 0)
			len = 1;
		s = nseg - 1;
		if (len <= 0 || len > MAX_RW || segs[s].total + len > MAX_RW ||
		    segs[s].off + segs[s].total + len >= SEEK_LIMIT)
			break;
		iov[niov].iov_base = (void *)b;
		iov[niov].iov_len = (size_t)len;
		niov++;
		segs[s].nreads++;
		segs[s].total += len;
	}
	/* A trailing lseek with no read taken is left out. */
	if (nseg && segs[nseg - 1].nreads == 0)
		nseg--;
	if (nseg == 0)
		return 0;
	k = segs[nseg - 1].first_read + segs[nseg - 1].nreads - i;
	/* It must save a crossing: nseg preadv and one lseek for k calls. */
	if (k < nseg + 2 || k < min_any(run, R_SEEK_PREAD, fd))
		return 0;
	fi = __mc_run_fdinfo(run, (int)fd, 1, &reg);
	if (fi.cls != FDC_FILE || (fi.flags & FDF_OPATH))
		return 0;
	if (!worth(run, R_SEEK_PREAD, fi.cls, reg, k))
		return 0;
	if (run->planning)
		return plan_step(plan, i, k, MC_MECH_SEEK_PREAD, nseg + 1, next);
	for (s = 0; s < nseg; s++) {
		struct seg *sg = &segs[s];
		long T = __mc_sys(ctx, SYS_preadv, fd, (long)&iov[sg->iov0], sg->nreads, sg->off, 0, 0);
		unsigned p = 0;

		/* The lseek would have succeeded: a regular file, not O_PATH, an
		 * offset in range. */
		c[sg->lseek_idx].result = sg->off;
		ctx->stats.fused++;
		ctx->stats.calls++;
		if (T == sg->total) {
			for (p = 0; p < sg->nreads; p++)
				c[sg->first_read + p].result = (long)iov[sg->iov0 + p].iov_len;
			ctx->stats.fused += sg->nreads;
			ctx->stats.calls += sg->nreads;
			continue;
		}
		/* Ended short or failed: put the offset where the calls so far
		 * would have left it, and run the rest as they are. */
		run->nofuse_until = i + k;
		ctx->stats.completions++;
		if (T < 0) {
			__mc_sys(ctx, SYS_lseek, fd, sg->off, SEEK_SET, 0, 0, 0);
			c[sg->first_read].result = T;
			ctx->stats.fused++;
			ctx->stats.calls++;
			*next = sg->first_read + 1;
			return k;
		}
		v = T;
		while (p < sg->nreads && (unsigned long)v >= iov[sg->iov0 + p].iov_len) {
			c[sg->first_read + p].result = (long)iov[sg->iov0 + p].iov_len;
			v -= (long)iov[sg->iov0 + p].iov_len;
			p++;
		}
		if (v > 0)
			c[sg->first_read + p++].result = v;
		ctx->stats.fused += p;
		ctx->stats.calls += p;
		__mc_sys(ctx, SYS_lseek, fd, sg->off + T, SEEK_SET, 0, 0, 0);
		*next = sg->first_read + p;
		return k;
	}
	__mc_sys(ctx, SYS_lseek, fd, segs[nseg - 1].off + segs[nseg - 1].total, SEEK_SET, 0, 0, 0);
	*next = i + k;
	return k;
}

/* ---- sendto / recvfrom on a datagram socket -> sendmmsg / recvmmsg ---- */
static unsigned fuse_mmsg(struct __mc_run *run, unsigned i, unsigned *next, struct mc_step *plan,
			  int is_send)
{
	struct mc_ctx *ctx = run->ctx;
	struct mc_call *c = run->c;
	unsigned rule = is_send ? R_SENDMMSG : R_RECVMMSG;
	unsigned m, k, lim = run->n, x;
	long nr = c[i].nr, fd, flags, r;
	struct __mc_fdinfo fi;
	int reg;

	if (arg_at(run, i, i, 0, &fd) != 1 || arg_at(run, i, i, 3, &flags) != 1)
		return 0;
	/* recvfrom: only flags whose meaning is per call and the same in
	 * recvmmsg; MSG_PEEK and error queues are left alone. */
	if (!is_send && (flags & ~(long)(MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC)))
		return 0;
	if (lim - i > MC_MAX_CALLS)
		lim = i + MC_MAX_CALLS;
	for (m = i; m < lim; m++) {
		long f, fl, b = 0, len = 0, a4, a5;
		int kb, kl;

		if (c[m].nr != nr || arg_at(run, i, m, 0, &f) != 1 || f != fd ||
		    arg_at(run, i, m, 3, &fl) != 1 || fl != flags)
			break;
		kb = arg_at(run, i, m, 1, &b);
		kl = arg_at(run, i, m, 2, &len);
		if (!kb || !kl || arg_at(run, i, m, 4, &a4) != 1 || arg_at(run, i, m, 5, &a5) != 1)
			break;
		if (kb < 0)
			b = 0;
		if (kl < 0)
			len = 1;
		if (len < 0 || len > MAX_RW)
			break;
		/* recvfrom with an address wants *addrlen read by the kernel,
		 * which recvmmsg cannot do: leave those alone. */
		if (!is_send && a4 != 0)
			break;
		if (is_send && (a5 < 0 || a5 > 65535))
			break;
		x = m - i;
		ctx->miov[x].iov_base = (void *)b;
		ctx->miov[x].iov_len = (size_t)len;
		memset(&ctx->mmsg[x], 0, sizeof(ctx->mmsg[x]));
		ctx->mmsg[x].msg_hdr.msg_iov = &ctx->miov[x];
		ctx->mmsg[x].msg_hdr.msg_iovlen = 1;
		if (is_send) {
			ctx->mmsg[x].msg_hdr.msg_name = (void *)a4;
			ctx->mmsg[x].msg_hdr.msg_namelen = (socklen_t)a5;
		}
	}
	k = m - i;
	if (k < 2 || k < min_any(run, rule, fd))
		return 0;
	fi = __mc_run_fdinfo(run, (int)fd, 0, &reg);
	if (fi.cls != FDC_DGRAM)
		return 0;
	if (!worth(run, rule, fi.cls, reg, k))
		return 0;
	if (run->planning)
		return plan_step(plan, i, k, is_send ? MC_MECH_SENDMMSG : MC_MECH_RECVMMSG, 1, next);
	if (is_send)
		/* Never wait: a full send buffer would make the fused call wait
		 * where sendto alone does; EAGAIN re-runs the calls as they are. */
		r = __mc_sys(ctx, SYS_sendmmsg, fd, (long)ctx->mmsg, k, flags | MSG_DONTWAIT, 0, 0);
	else
		/* Wait for the first datagram exactly as recvfrom does, take the
		 * others only if they are already there. */
		r = __mc_sys(ctx, SYS_recvmmsg, fd, (long)ctx->mmsg, k, flags | MSG_WAITFORONE, 0, 0);
	if (r < 0) {
		run->nofuse_until = i + k;
		ctx->stats.completions++;
		if (is_send && r == -EAGAIN && !(flags & MSG_DONTWAIT)) {
			*next = i;
			return k;
		}
		c[i].result = r;
		ctx->stats.fused++;
		ctx->stats.calls++;
		*next = i + 1;
		return k;
	}
	for (x = 0; x < (unsigned)r; x++)
		c[i + x].result = (long)ctx->mmsg[x].msg_len;
	ctx->stats.fused += (unsigned)r;
	ctx->stats.calls += (unsigned)r;
	if ((unsigned)r < k) {
		run->nofuse_until = i + k;
		ctx->stats.completions++;
	}
	*next = i + (unsigned)r;
	return k;
}

unsigned __mc_fuse_at(struct __mc_run *run, unsigned i, unsigned *next, struct mc_step *plan)
{
	switch (run->c[i].nr) {
	case SYS_write:
		return fuse_rw(run, i, next, plan, 1);
	case SYS_read:
		return fuse_rw(run, i, next, plan, 0);
	case SYS_pwrite64:
		return fuse_prw(run, i, next, plan, 1);
	case SYS_pread64:
		return fuse_prw(run, i, next, plan, 0);
	case SYS_lseek:
		return fuse_seek_read(run, i, next, plan);
	case SYS_sendto:
		return fuse_mmsg(run, i, next, plan, 1);
	case SYS_recvfrom:
		return fuse_mmsg(run, i, next, plan, 0);
	default:
		return 0;
	}
}
