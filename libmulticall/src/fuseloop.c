/* SPDX-License-Identifier: MIT */
/* Looped multi-calls fused as a whole (seed 000 §3.4).
 *
 * The copy loop, in either rotation
 *     A: { n = read(in, buf, bs); [n > 0?] write(out, buf, n); }
 *     B: { write(out, buf, n); n = read(in, buf, bs); [n > 0?] }   (§3.3.3)
 * between two regular files becomes copy_file_range (or sendfile), and the
 * web server's loop { n = read(in, buf, len); [n > 0?] sendto(s, buf, n) }
 * on a datagram socket becomes readv + sendmmsg.
 *
 * The engine below runs the loop step by step exactly as direct would
 * (read, test, write, ...), and where it may, lets one fused call stand for
 * many read/write pairs.  What the pairs would have left behind is rebuilt:
 * the iteration count and last results from the byte count; the buffer's
 * contents by pread from the input (a regular file, so the same bytes); the
 * file offsets by the fused calls themselves.  A fused transfer that ends
 * inside a block or fails is finished with real calls; see
 * docs/MULTICALL.md for the argument. */
#include "internal.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#define MAX_RW 0x7ffff000L
#define BULK_CHUNK (1L << 30)
#define BATCH_MAX 64
#define BOUNCE_MAX (1L << 20)

/* BULK_PENDING: not decided yet.  The loop runs a few iterations as they
 * are first (a short copy never pays for classifying its descriptors),
 * then probes once. */
enum { BULK_NONE, BULK_CFR, BULK_SENDFILE, BULK_MMSG, BULK_PENDING };

struct loopst {
	struct mc_ctx *ctx;
	int in, out;
	char *buf;
	long bs;
	int rchk, wchk, formB;
	int wfull;         /* the write is checked full (MC_CHECK_FULL) */
	unsigned long it, max;
	long r_res, w_res; /* the current iteration's results */
	long last_n;       /* the last read's result: what the next write writes */
	int bulk;
	int bulk_was;      /* the mechanism to go back to after a completed block */
	int validated;     /* a real read filled all of buf: it is writable */
	unsigned long full_reads, probe_after;
	unsigned mode, rule;
	long pending;      /* the next write's result, already known (-errno) */
	long carry;        /* bytes of the next write already written */
	long in_pos;       /* offset of in */
	long in_size;      /* in's size when the loop was probed (0: not known) */
	int at_eof;        /* the fused copy just read the end: the next read is 0 */
	/* What buf should hold when a fused transfer skipped it: the full block
	 * at stale_full (or nothing), then stale_plen bytes from stale_poff. */
	int stale;
	long stale_full, stale_poff, stale_plen;
	/* read/sendto */
	int sflags;
	const void *to;
	long tolen;
};

/* Puts bytes [from, bs) of buf back to what the skipped reads left. */
static void fix_buf(struct loopst *L, long from)
{
	if (!L->stale)
		return;
	if (from < 0)
		from = 0;
	if (L->stale_full >= 0 && from < L->bs)
		__mc_sys(L->ctx, SYS_pread64, L->in, (long)(L->buf + from), L->bs - from,
			 L->stale_full + from, 0, 0);
	if (L->stale_plen > from)
		__mc_sys(L->ctx, SYS_pread64, L->in, (long)(L->buf + from), L->stale_plen - from,
			 L->stale_poff + from, 0, 0);
	L->stale = 0;
}

static void count_calls(struct loopst *L, unsigned long fused, unsigned long direct)
{
	L->ctx->stats.fused += fused;
	L->ctx->stats.direct += direct;
	L->ctx->stats.calls += fused + direct;
}

/* ---- real steps ---- */
static long step_read(struct loopst *L)
{
	long r;

	if (L->at_eof) {
		/* copy_file_range returned 0 just now: a read now returns 0 and
		 * moves nothing (a concurrent append would be a race direct
		 * could lose the same way) */
		L->at_eof = 0;
		r = 0;
		count_calls(L, 1, 0);
	} else {
		r = __mc_sys(L->ctx, SYS_read, L->in, (long)L->buf, L->bs, 0, 0, 0);
		count_calls(L, 0, 1);
	}
	if (r > 0)
		L->in_pos += r;
	if (r < L->bs) {
		fix_buf(L, r);
	} else {
		L->stale = 0;
		L->validated = 1;
		L->full_reads++;
	}
	L->last_n = r;
	return r;
}

static long step_write(struct loopst *L)
{
	long n = L->last_n, w;

	if (L->pending) {
		/* The fused call already failed on exactly this write. */
		w = L->pending;
		L->pending = 0;
		count_calls(L, 1, 0);
		return w;
	}
	if (L->carry) {
		long done = L->carry;

		L->carry = 0;
		if (n <= done)
			return n;
		w = __mc_sys(L->ctx, SYS_write, L->out, (long)(L->buf + done), n - done, 0, 0, 0);
		count_calls(L, 0, 1);
		if (w < 0) {
			/* Partial, as the write alone would have ended; the error
			 * belongs to the next write. */
			L->pending = w;
			return done;
		}
		if (done + w == n)
			L->bulk = L->bulk_was; /* the copy was only cut short: go on */
		return done + w;
	}
	w = __mc_sys(L->ctx, SYS_write, L->out, (long)L->buf, n, 0, 0, 0);
	count_calls(L, 0, 1);
	return w;
}

static long step_sendto(struct loopst *L)
{
	long w = __mc_sys(L->ctx, SYS_sendto, L->out, (long)L->buf, L->last_n, L->sflags,
			  (long)L->to, L->tolen);

	count_calls(L, 0, 1);
	return w;
}

static int unsupported(long e)
{
	return e == -EXDEV || e == -EINVAL || e == -EOPNOTSUPP || e == -ENOSYS || e == -EBADF;
}

/* ---- bulk copy: pairs (read bs, write bs) through copy_file_range ----
 * Called in state "next is a read", after a full real read validated buf.
 *
 * Where the output stands 4 or 8 KiB past a 64 KiB boundary (a copy loop
 * that wrote its first block itself), one copy_file_range to the end ran
 * ~35 % slower here (Linux 6.18, ext4: 64 MiB in 28.9 ms against 21.6 ms
 * from offset 0 or 512; the output's offset decides, not the input's);
 * copying up to the boundary first, then the rest, takes 21.7 ms
 * (docs/BENCHMARKS.md).  So a long copy asks where the output stands (one
 * lseek, which changes nothing) and makes its first call end there. */
#define CFR_ALIGN (64L << 10)

static void bulk_copy(struct loopst *L)
{
	unsigned long pairs = L->max - L->it;
	long budget, span, T = 0, r = 0, q, p, lead = 0;
	long chunk = (BULK_CHUNK / L->bs) * L->bs;

	if (pairs == 0)
		return;
	budget = pairs > (unsigned long)(LONG_MAX / 2 / L->bs) ? LONG_MAX / 2 : (long)pairs * L->bs;
	/* What the input held at the probe bounds a loop with no bound of its
	 * own: a copy of a short file asks nothing and is not split. */
	span = L->in_size > 0 && L->in_size - L->in_pos < budget ? L->in_size - L->in_pos : budget;
	if (L->bulk == BULK_CFR && span > 4 * CFR_ALIGN) {
		long o = __mc_sys(L->ctx, SYS_lseek, L->out, 0, SEEK_CUR, 0, 0, 0);

		if (o > 0 && o % CFR_ALIGN)
			lead = CFR_ALIGN - o % CFR_ALIGN;
	}
	while (T < budget) {
		long want = budget - T < chunk ? budget - T : chunk;

		if (T == 0 && lead && L->bulk == BULK_CFR && lead < want)
			want = lead;

		if (L->bulk == BULK_CFR)
			r = __mc_sys(L->ctx, SYS_copy_file_range, L->in, 0, L->out, 0, want, 0);
		else
			r = __mc_sys(L->ctx, SYS_sendfile, L->out, L->in, 0, want, 0, 0);
		if (r > 0) {
			T += r;
			if (r < want && T % L->bs)
				break; /* ended inside a block: finish it for real */
			continue;
		}
		if (r == 0) {
			L->at_eof = 1; /* end of input */
			break;
		}
		if (T == 0 && unsupported(r)) {
			/* No effect: try the next mechanism, or none. */
			L->bulk = L->bulk == BULK_CFR ? BULK_SENDFILE : BULK_NONE;
			if (L->bulk == BULK_NONE)
				return;
			continue;
		}
		L->pending = r; /* the write of the next pair fails so */
		break;
	}
	q = T / L->bs;
	p = T % L->bs;
	if (q > 0) {
		/* q whole pairs: in A each is one iteration (read, write); in B a
		 * read ending one iteration and the write beginning the next. */
		L->it += (unsigned long)q;
		L->r_res = L->formB ? -ECANCELED : L->bs;
		L->w_res = L->bs;
		L->last_n = L->bs;
		L->stale = 1;
		L->stale_full = L->in_pos + (q - 1) * L->bs;
		L->stale_plen = 0;
		L->in_pos += q * L->bs;
		count_calls(L, 2 * (unsigned long)q, 0);
	}
	if (p > 0) {
		if (r == 0) {
			/* The input ended inside this block: one more whole pair. */
			L->it++;
			L->r_res = L->formB ? -ECANCELED : p;
			L->w_res = p;
			L->last_n = p;
			if (!L->stale) {
				L->stale = 1;
				L->stale_full = -1;
			}
			L->stale_poff = L->in_pos;
			L->stale_plen = p;
			L->in_pos += p;
			count_calls(L, 2, 0);
		} else {
			/* Ended inside a block for another reason (a full disk, a
			 * file size limit): the read of that block is done for
			 * real, and the write finishes the part not yet written. */
			__mc_sys(L->ctx, SYS_lseek, L->in, L->in_pos, SEEK_SET, 0, 0, 0);
			L->carry = p;
			L->ctx->stats.completions++;
		}
	}
	if (L->pending || L->carry) {
		L->bulk_was = L->bulk;
		L->bulk = BULK_NONE;
		if (!L->carry)
			L->ctx->stats.completions++;
	}
}

/* Decides, once, whether the rest of the loop may be fused: both ends'
 * classes, that they are not one file (a loop reading what it writes must
 * stay a loop), the input's position and, for auto, whether what is left
 * of the input pays for it.  Returns the mechanism to use. */
static int probe(struct loopst *L)
{
	struct mc_ctx *ctx = L->ctx;
	struct __mc_run run;
	struct __mc_fdinfo fin, fout;
	int reg_in, reg_out;
	long size;

	memset(&run, 0, sizeof(run));
	run.ctx = ctx;
	/* No need for the status flags: the real read that filled the buffer
	 * shows that in is readable; a flag copy_file_range does not take
	 * (O_APPEND, O_RDONLY on out) makes it fail without effect, which
	 * falls back. */
	fin = __mc_run_fdinfo(&run, L->in, 0, &reg_in);
	if (fin.cls != FDC_FILE)
		return BULK_NONE;
	size = fin.size;
	if (reg_in) {
		/* a registered descriptor's class is kept, its size is not */
		struct statx sx;

		if (__mc_sys(ctx, SYS_statx, L->in, (long)"", AT_EMPTY_PATH, STATX_SIZE, (long)&sx, 0) < 0)
			return BULK_NONE;
		ctx->stats.probes++;
		size = (long)sx.stx_size;
	}
	L->in_size = size;
	if (L->mode != MC_BACKEND_FUSION) {
		/* What is left of the input can be no more than its size. */
		unsigned th = ctx->cal->min_run[L->rule][L->rule == R_COPY ? FDC_FILE : FDC_DGRAM]
					      [reg_in && __mc_registered(ctx, L->out)];
		unsigned long left = L->max - L->it + 1;
		unsigned long est = (unsigned long)(size / L->bs) + 1;

		if (est > left)
			est = left;
		if (!th || est < th)
			return BULK_NONE;
	}
	fout = __mc_run_fdinfo(&run, L->out, 0, &reg_out);
	if (L->rule == R_COPY) {
		if (fout.cls != FDC_FILE || (fin.dev == fout.dev && fin.ino == fout.ino))
			return BULK_NONE;
		return BULK_CFR;
	}
	if (fout.cls != FDC_DGRAM)
		return BULK_NONE;
	L->in_pos = __mc_sys(ctx, SYS_lseek, L->in, 0, SEEK_CUR, 0, 0, 0);
	ctx->stats.probes++;
	return L->in_pos < 0 ? BULK_NONE : BULK_MMSG;
}

static void maybe_probe(struct loopst *L)
{
	if (L->bulk == BULK_PENDING && L->validated && L->last_n == L->bs &&
	    L->full_reads >= L->probe_after)
		L->bulk = probe(L);
}

/* Does the write just run (of last_n bytes) stop the loop?  As
 * __mc_stops decides it for direct: MC_CHECK, it failed; MC_CHECK_FULL,
 * libc's result (-1 for a failure) is not its count. */
static int write_stops(const struct loopst *L, long w)
{
	if (w < 0 && L->wchk)
		return 1;
	return L->wfull && (w < 0 ? -1 : w) != L->last_n;
}

/* ---- the copy engine: runs the loop as direct would ---- */
static int copy_engine(struct loopst *L, unsigned ri, unsigned wi, struct mc_call *body)
{
	long r, w;
	int ret = 2;

	if (L->formB) {
		/* Iteration 1 begins with the write of the value the caller read. */
		L->it = 1;
		L->r_res = -ECANCELED;
		w = step_write(L);
		L->w_res = w;
		if (write_stops(L, w)) {
			ret = (int)wi;
			goto out;
		}
	}
	for (;;) {
		long prev_r = L->r_res, prev_w = L->w_res;

		if (!L->formB && L->it == L->max)
			break;
		if ((L->bulk == BULK_CFR || L->bulk == BULK_SENDFILE) && L->validated &&
		    L->last_n == L->bs) {
			bulk_copy(L);
			if (!L->formB && L->it == L->max)
				break;
		}
		if (!L->formB) {
			L->it++;
			L->w_res = -ECANCELED;
		}
		r = step_read(L);
		L->r_res = r;
		if (r < 0 && L->rchk) {
			ret = (int)ri;
			goto out;
		}
		if (r <= 0)
			break;
		if (L->bulk == BULK_PENDING && r == L->bs) {
			/* The first full read proved the buffer writable: decide now,
			 * and if the copy is fused, take this read back (put the input
			 * offset back) so that the fused copy starts at its block —
			 * aligned as the program's copy was, the block's write its
			 * own.  The buffer holds that block, as the next read will. */
			L->bulk = probe(L);
			if (L->bulk == BULK_CFR) {
				long pos = __mc_sys(L->ctx, SYS_lseek, L->in, -L->bs, SEEK_CUR, 0, 0, 0);

				if (pos >= 0) {
					L->in_pos = pos;
					L->ctx->stats.direct--;
					L->ctx->stats.calls--;
					if (!L->formB) {
						L->it--;
						L->w_res = prev_w;
					}
					L->r_res = L->formB ? -ECANCELED : prev_r;
					continue;
				}
				L->bulk = BULK_NONE;
			}
		}
		if (L->formB) {
			if (L->it == L->max)
				break;
			L->it++;
			L->r_res = -ECANCELED;
		}
		w = step_write(L);
		L->w_res = w;
		if (write_stops(L, w)) {
			ret = (int)wi;
			goto out;
		}
	}
out:
	fix_buf(L, 0);
	/* Stopped at a write checked full in form B: the read keeps the
	 * previous iteration's result, the count that write asked for (as
	 * mc_run_loop leaves it, cancel_after_stop). */
	if (L->formB && L->wfull && ret == (int)wi)
		L->r_res = L->last_n;
	body[ri].result = L->r_res;
	body[wi].result = L->w_res;
	return ret;
}

/* ---- read/sendto: batches of blocks through readv + sendmmsg ---- */
static int batch_send(struct loopst *L, unsigned ri, unsigned wi, struct mc_call *body)
{
	struct mc_ctx *ctx = L->ctx;
	long r, w;
	int ret = 2;
	unsigned kmax = BATCH_MAX;

	if ((long)kmax * L->bs > BOUNCE_MAX)
		kmax = (unsigned)(BOUNCE_MAX / L->bs);
	if (kmax < 2) {
		L->bulk = BULK_NONE;
	} else if (ctx->bounce_len < (size_t)kmax * (size_t)L->bs) {
		char *b = realloc(ctx->bounce, (size_t)kmax * (size_t)L->bs);

		if (b) {
			ctx->bounce = b;
			ctx->bounce_len = (size_t)kmax * (size_t)L->bs;
		} else {
			L->bulk = BULK_NONE;
		}
	}
	for (;;) {
		if (L->it == L->max)
			break;
		maybe_probe(L);
		if (L->bulk == BULK_MMSG && L->validated && L->last_n == L->bs && L->w_res == L->bs &&
		    L->max - L->it >= 2) {
			unsigned k = kmax, x, b, m;
			long T, left, sent_bytes = 0;

			if (L->max - L->it < k)
				k = (unsigned)(L->max - L->it);
			for (x = 0; x < k; x++) {
				ctx->iov[x].iov_base = ctx->bounce + (size_t)x * (size_t)L->bs;
				ctx->iov[x].iov_len = (size_t)L->bs;
			}
			T = __mc_sys(ctx, SYS_readv, L->in, (long)ctx->iov, k, 0, 0, 0);
			if (T <= 0) {
				/* Nothing read: exactly the next read's outcome (the
				 * buffer untouched, as a failed or empty read leaves it). */
				L->it++;
				L->r_res = T;
				L->w_res = -ECANCELED;
				L->last_n = T;
				count_calls(L, 1, 0);
				fix_buf(L, 0);
				if (T < 0 && L->rchk)
					ret = (int)ri;
				break;
			}
			b = (unsigned)((T + L->bs - 1) / L->bs);
			for (x = 0, left = T; x < b; x++) {
				long len = left < L->bs ? left : L->bs;

				ctx->miov[x].iov_base = ctx->bounce + (size_t)x * (size_t)L->bs;
				ctx->miov[x].iov_len = (size_t)len;
				memset(&ctx->mmsg[x], 0, sizeof(ctx->mmsg[x]));
				ctx->mmsg[x].msg_hdr.msg_iov = &ctx->miov[x];
				ctx->mmsg[x].msg_hdr.msg_iovlen = 1;
				ctx->mmsg[x].msg_hdr.msg_name = (void *)L->to;
				ctx->mmsg[x].msg_hdr.msg_namelen = (socklen_t)L->tolen;
				left -= len;
			}
			r = __mc_sys(ctx, SYS_sendmmsg, L->out, (long)ctx->mmsg, b,
				     L->sflags | MSG_DONTWAIT, 0, 0);
			m = r > 0 ? (unsigned)r : 0;
			for (x = 0; x < m; x++)
				sent_bytes += (long)ctx->miov[x].iov_len;
			L->it += m;
			count_calls(L, 2 * (unsigned long)m, 0);
			if (m > 0) {
				long lastlen = (long)ctx->miov[m - 1].iov_len;

				L->r_res = lastlen;
				L->w_res = (long)ctx->mmsg[m - 1].msg_len;
				L->last_n = lastlen;
				if (lastlen == L->bs) {
					L->stale = 1;
					L->stale_full = L->in_pos + sent_bytes - L->bs;
					L->stale_plen = 0;
				} else {
					if (!L->stale) {
						L->stale = 1;
						L->stale_full = -1;
					}
					if (m >= 2 && L->stale_full < L->in_pos + sent_bytes - lastlen - L->bs)
						L->stale_full = L->in_pos + sent_bytes - lastlen - L->bs;
					L->stale_poff = L->in_pos + sent_bytes - lastlen;
					L->stale_plen = lastlen;
				}
			}
			if (m == b) {
				L->in_pos += T;
				if (L->w_res < 0 && L->wchk) {
					ret = (int)wi;
					break;
				}
				continue;
			}
			/* Message m was not sent: its read happened (put the input
			 * offset and the buffer where that read leaves them), its
			 * send runs for real, then the loop goes on call by call. */
			ctx->stats.completions++;
			L->bulk = BULK_NONE;
			{
				long blen = (long)ctx->miov[m].iov_len;
				long boff = L->in_pos + sent_bytes;

				L->in_pos = boff + blen;
				__mc_sys(ctx, SYS_lseek, L->in, L->in_pos, SEEK_SET, 0, 0, 0);
				fix_buf(L, blen);
				__mc_sys(ctx, SYS_pread64, L->in, (long)L->buf, blen, boff, 0, 0);
				L->it++;
				L->r_res = blen;
				L->last_n = blen;
				count_calls(L, 1, 0);
				if (r < 0 && !(r == -EAGAIN && !(L->sflags & MSG_DONTWAIT))) {
					/* Failed before anything was sent: that is the send's
					 * own result (a socket error is reported once). */
					w = r;
					count_calls(L, 1, 0);
				} else {
					w = step_sendto(L);
				}
				L->w_res = w;
				if (w < 0 && L->wchk) {
					ret = (int)wi;
					break;
				}
			}
			continue;
		}
		L->it++;
		L->w_res = -ECANCELED;
		r = step_read(L);
		L->r_res = r;
		if (r < 0 && L->rchk) {
			ret = (int)ri;
			break;
		}
		if (r <= 0)
			break;
		w = step_sendto(L);
		L->w_res = w;
		if (w < 0 && L->wchk) {
			ret = (int)wi;
			break;
		}
	}
	fix_buf(L, 0);
	body[ri].result = L->r_res;
	body[wi].result = L->w_res;
	return ret;
}

static int plain_literals(const struct mc_call *cl, unsigned from, unsigned to)
{
	for (unsigned j = from; j < to; j++)
		if (cl->ref[j])
			return 0;
	return 1;
}

int __mc_loop_shape(const struct mc_call *body, unsigned n, const struct mc_loop *loop)
{
	unsigned ri, wi;

	if (n != 2 || loop->cond != MC_WHILE_GT || loop->value != 0)
		return -1;
	ri = loop->call;
	wi = 1 - ri;
	/* Form A: the read first; form B (rotated): the write first, reading
	 * the previous iteration's read. */
	if (body[ri].nr != SYS_read || !plain_literals(&body[ri], 0, 6))
		return -1;
	if (body[wi].ref[2] != ri + 1 || !plain_literals(&body[wi], 0, 2) ||
	    body[wi].args[1] != body[ri].args[1] || !plain_literals(&body[wi], 3, 6))
		return -1;
	if (body[wi].nr == SYS_write)
		return R_COPY;
	if (body[wi].nr == SYS_sendto && ri == 0)
		return R_BATCH_SEND;
	return -1;
}

int __mc_fuse_loop(struct mc_ctx *ctx, unsigned mode, struct mc_call *body, unsigned n,
		   const struct mc_loop *loop, unsigned long *iters, struct mc_step *plan)
{
	struct loopst L;
	unsigned ri, wi;
	int ret, rule;

	(void)plan;
	rule = __mc_loop_shape(body, n, loop);
	if (rule < 0)
		return -1;
	ri = loop->call;
	wi = 1 - ri;
	memset(&L, 0, sizeof(L));
	L.ctx = ctx;
	L.in = (int)body[ri].args[0];
	L.out = (int)body[wi].args[0];
	L.buf = (char *)body[ri].args[1];
	L.bs = body[ri].args[2];
	L.rchk = !!(body[ri].flags & MC_CHECK);
	L.wchk = !!(body[wi].flags & MC_CHECK);
	L.wfull = !!(body[wi].flags & MC_CHECK_FULL);
	if (body[ri].flags & MC_CHECK_FULL)
		return -1; /* the read of a copy loop is short at its end */
	L.formB = ri == 1;
	L.max = loop->max_iterations;
	L.r_res = L.w_res = -ECANCELED;
	if (body[ri].args[0] != L.in || body[wi].args[0] != L.out || L.bs <= 0 || L.bs > MAX_RW)
		return -1;
	if (L.formB) {
		L.last_n = body[ri].result; /* the caller's read, carried in */
		if (L.last_n <= 0)
			return -1;
	}
	if (mode != MC_BACKEND_FUSION) {
		unsigned short m = ctx->cal->min_any[rule][0];

		if (!m || L.max < m)
			return -1;
	}

	L.mode = mode;
	L.rule = rule;
	L.probe_after = 1; /* the first full read (and send) decide */
	L.bulk = BULK_PENDING;
	if (rule == R_COPY) {
		ret = copy_engine(&L, ri, wi, body);
	} else {
		L.sflags = (int)body[wi].args[3];
		L.to = (const void *)body[wi].args[4];
		L.tolen = body[wi].args[5];
		ret = batch_send(&L, ri, wi, body);
	}
	*iters = L.it;
	return ret;
}
