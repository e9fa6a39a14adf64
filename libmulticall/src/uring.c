/* SPDX-License-Identifier: MIT */
/* The io_uring backend: a run of expressible calls becomes one chain of
 * linked requests.  Checked calls are IOSQE_IO_LINK (a failure cancels the
 * rest, as direct stops; so does a short read or write, for MC_CHECK_FULL),
 * unchecked ones IOSQE_IO_HARDLINK (the chain goes on).  A link that breaks on a short, non-negative result, or on a
 * guarded prediction, is resumed from the next call with the real value.
 *
 * Only calls that cannot wait indefinitely go to the ring (regular files,
 * block devices, path operations): a call on a pipe or socket that waits
 * must see EINTR when a signal comes, as it would alone, and an io_uring
 * wait cannot give it that.  Those run directly, in order. */
#include <liburing.h> /* first: syscall_lists.h then defines the opcode table */

#include "internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>

#define RING_ENTRIES 64
#define MAX_RW 0x7ffff000L

static int ring_create(struct mc_ctx *ctx)
{
	struct io_uring *ring = calloc(1, sizeof(*ring));
	struct io_uring_probe *probe;
	struct stat st;
	unsigned i;
	int r;

	if (!ring)
		return -ENOMEM;
	r = io_uring_queue_init(RING_ENTRIES, ring, 0);
	if (r < 0) {
		free(ring);
		return r;
	}
	/* Every opcode the backend may submit (data/syscall_properties.tsv),
	 * or none: a call the ring refused would fail where direct succeeds. */
	probe = io_uring_get_probe_ring(ring);
	for (i = 0; probe && i < sizeof(scl_uring_opcodes); i++)
		if (!io_uring_opcode_supported(probe, scl_uring_opcodes[i]))
			break;
	if (!probe || i < sizeof(scl_uring_opcodes)) {
		if (probe)
			io_uring_free_probe(probe);
		io_uring_queue_exit(ring);
		free(ring);
		return -EOPNOTSUPP;
	}
	io_uring_free_probe(probe);
	/* The child of a fork must never touch the parent's rings. */
	io_uring_ring_dontfork(ring);
	/* The ring's descriptor moves out of the way of the program's own. */
	ring->ring_fd = ring->enter_ring_fd = __mc_fd_out_of_the_way(ring->ring_fd);
	if (__mc_sys6(SYS_fstat, ring->ring_fd, (long)&st, 0, 0, 0, 0) == 0) {
		ctx->ring_dev = st.st_dev;
		ctx->ring_ino = st.st_ino;
	}
	ctx->ring = ring;
	ctx->ring_epoch = __mc_fork_epoch();
	return 0;
}

/* A ring inherited through fork: its memory is not mapped here
 * (MADV_DONTFORK); close our copy of its descriptor if it is still that. */
static void ring_forget(struct mc_ctx *ctx)
{
	struct stat st;

	if (__mc_sys6(SYS_fstat, ctx->ring->ring_fd, (long)&st, 0, 0, 0, 0) == 0 &&
	    st.st_dev == ctx->ring_dev && st.st_ino == ctx->ring_ino)
		__mc_sys6(SYS_close, ctx->ring->ring_fd, 0, 0, 0, 0, 0);
	free(ctx->ring);
	ctx->ring = NULL;
}

int __mc_uring_setup(struct mc_ctx *ctx)
{
	return ring_create(ctx);
}

void __mc_uring_free(struct mc_ctx *ctx)
{
	if (!ctx->ring)
		return;
	if (ctx->ring_epoch != __mc_fork_epoch()) {
		ring_forget(ctx);
		return;
	}
	io_uring_queue_exit(ctx->ring);
	free(ctx->ring);
	ctx->ring = NULL;
}

static int ring_ready(struct mc_ctx *ctx)
{
	if (ctx->ring && ctx->ring_epoch != __mc_fork_epoch())
		ring_forget(ctx);
	if (!ctx->ring) {
		if (ctx->ring_broken)
			return -1;
		if (ring_create(ctx) < 0) {
			ctx->ring_broken = 1;
			return -1;
		}
	}
	return 0;
}

static int rw_class_ok(struct __mc_run *run, long fd, int at_pos)
{
	int reg;
	struct __mc_fdinfo fi;

	if (fd < 0 || fd > INT32_MAX)
		return 0;
	fi = __mc_run_fdinfo(run, (int)fd, at_pos, &reg);
	if (fi.cls != FDC_FILE && fi.cls != FDC_BLOCK)
		return 0;
	/* Calls at the file position get explicit offsets (below); with
	 * O_APPEND the position after a write is the end of file, which an
	 * explicit offset does not give: those run directly. */
	return !at_pos || !(fi.flags & (FDF_APPEND | FDF_OPATH));
}

/* Whether call i can go to the ring.  Arguments that are results of
 * earlier calls are checked at submission; here only what is known. */
int __mc_uring_expressible(struct __mc_run *run, unsigned i)
{
	const struct mc_call *cl = &run->c[i];
	long fd = cl->args[0];

	/* The table says which calls the backend runs; the switch, how. */
	if (!scl_uring_call(cl->nr))
		return 0;
	switch (cl->nr) {
	case SYS_read:
	case SYS_write:
	case SYS_readv:
	case SYS_writev:
		if (cl->ref[0])
			return 0;
		return rw_class_ok(run, fd, 1);
	case SYS_fsync:
	case SYS_fdatasync:
	case SYS_fallocate:
		if (cl->ref[0])
			return 0;
		return rw_class_ok(run, fd, 0);
	case SYS_pread64:
	case SYS_pwrite64:
	case SYS_preadv:
	case SYS_pwritev:
		if (cl->ref[0] || cl->ref[3] || cl->args[3] < 0)
			return 0;
		if ((cl->nr == SYS_preadv || cl->nr == SYS_pwritev) && cl->args[4] != 0)
			return 0;
		return rw_class_ok(run, fd, 0);
	case SYS_openat:
	case SYS_statx:
	case SYS_unlinkat:
	case SYS_mkdirat:
		return 1;
	case SYS_close: {
		int reg;
		struct __mc_fdinfo fi;

		if (cl->ref[0] || fd < 0 || fd > INT32_MAX)
			return 0;
		/* io_uring refuses to close a ring; those close directly. */
		fi = __mc_run_fdinfo(run, (int)fd, 0, &reg);
		return fi.cls != FDC_OTHER && fi.cls != FDC_UNKNOWN;
	}
	default:
		return 0;
	}
}

static int is_rw(long nr)
{
	return nr == SYS_read || nr == SYS_write || nr == SYS_pread64 || nr == SYS_pwrite64;
}

static int is_write(long nr)
{
	return nr == SYS_write || nr == SYS_pwrite64 || nr == SYS_writev || nr == SYS_pwritev;
}

/* Value of argument j of call m, submitted in a batch starting at pos:
 * 1 known, 2 predicted (the producer is in the batch and predicts a full
 * transfer), 0 not available (the batch must end before m). */
static int sub_arg(const struct mc_call *c, unsigned pos, unsigned m, unsigned j, long *v)
{
	unsigned r = c[m].ref[j], k;

	if (!r) {
		*v = c[m].args[j];
		return 1;
	}
	k = r - 1u;
	if (k < pos || k >= m) {
		/* already run, or loop-carried from the previous iteration */
		*v = c[k].result;
		return 1;
	}
	if ((c[k].flags & MC_PREDICT) && is_rw(c[k].nr) && !c[k].ref[2]) {
		*v = c[k].args[2];
		return 2;
	}
	return 0;
}

/* Whether the request can carry these values (lengths are 32 bits in an
 * SQE; an offset of -1 means "the file position" to io_uring but is
 * EINVAL for pread). */
static int prep_ok(long nr, const long *a)
{
	switch (nr) {
	case SYS_read:
	case SYS_write:
		return a[2] >= 0 && a[2] <= MAX_RW;
	case SYS_pread64:
	case SYS_pwrite64:
		return a[2] >= 0 && a[2] <= MAX_RW && a[3] >= 0;
	case SYS_readv:
	case SYS_writev:
		return a[2] >= 0 && a[2] <= 1024;
	case SYS_preadv:
	case SYS_pwritev:
		return a[2] >= 0 && a[2] <= 1024 && a[3] >= 0 && a[4] == 0;
	case SYS_fsync:
	case SYS_fdatasync:
	case SYS_fallocate:
	case SYS_openat:
	case SYS_statx:
	case SYS_unlinkat:
	case SYS_mkdirat:
	case SYS_close:
		return a[0] >= INT32_MIN && a[0] <= INT32_MAX;
	default:
		return 0;
	}
}

static void prep(struct io_uring_sqe *sqe, long nr, const long *a)
{
	switch (nr) {
	case SYS_read:
		io_uring_prep_read(sqe, (int)a[0], (void *)a[1], (unsigned)a[2], (__u64)-1);
		break;
	case SYS_write:
		io_uring_prep_write(sqe, (int)a[0], (const void *)a[1], (unsigned)a[2], (__u64)-1);
		break;
	case SYS_pread64:
		io_uring_prep_read(sqe, (int)a[0], (void *)a[1], (unsigned)a[2], (__u64)a[3]);
		break;
	case SYS_pwrite64:
		io_uring_prep_write(sqe, (int)a[0], (const void *)a[1], (unsigned)a[2], (__u64)a[3]);
		break;
	case SYS_readv:
		io_uring_prep_readv(sqe, (int)a[0], (const struct iovec *)a[1], (unsigned)a[2],
				    (__u64)-1);
		break;
	case SYS_writev:
		io_uring_prep_writev(sqe, (int)a[0], (const struct iovec *)a[1], (unsigned)a[2],
				     (__u64)-1);
		break;
	case SYS_preadv:
		io_uring_prep_readv(sqe, (int)a[0], (const struct iovec *)a[1], (unsigned)a[2],
				    (__u64)a[3]);
		break;
	case SYS_pwritev:
		io_uring_prep_writev(sqe, (int)a[0], (const struct iovec *)a[1], (unsigned)a[2],
				     (__u64)a[3]);
		break;
	case SYS_fsync:
		io_uring_prep_fsync(sqe, (int)a[0], 0);
		break;
	case SYS_fdatasync:
		io_uring_prep_fsync(sqe, (int)a[0], IORING_FSYNC_DATASYNC);
		break;
	case SYS_fallocate:
		io_uring_prep_fallocate(sqe, (int)a[0], (int)a[1], (off_t)a[2], (off_t)a[3]);
		break;
	case SYS_openat:
		io_uring_prep_openat(sqe, (int)a[0], (const char *)a[1], (int)a[2], (mode_t)a[3]);
		break;
	case SYS_statx:
		io_uring_prep_statx(sqe, (int)a[0], (const char *)a[1], (int)a[2], (unsigned)a[3],
				    (struct statx *)a[4]);
		break;
	case SYS_unlinkat:
		io_uring_prep_unlinkat(sqe, (int)a[0], (const char *)a[1], (int)a[2]);
		break;
	case SYS_mkdirat:
		io_uring_prep_mkdirat(sqe, (int)a[0], (const char *)a[1], (mode_t)a[2]);
		break;
	case SYS_close:
		io_uring_prep_close(sqe, (int)a[0]);
		break;
	}
}

/* Calls at the file position (read, write, readv, writev) are submitted at
 * explicit offsets that the library keeps, and the position is set once
 * when the batch is done: io_uring updates a file position after it posts
 * the completion when a transfer was retried in a worker, so the next call
 * (ours or the program's) could see a stale one. */
struct posfd {
	int fd;
	int closed;             /* a readv/writev took an unknown length */
	unsigned long dev, ino;
	long base, next, done;
};

#define MAX_POSFD 8

static int at_pos(long nr)
{
	return nr == SYS_read || nr == SYS_write || nr == SYS_readv || nr == SYS_writev;
}

/* Runs calls [first, end) through the ring, in order.  Returns the index
 * of the next call to run; *stop is set when a checked call failed (the
 * returned index is that call).  Returns first when the ring is not
 * available or the first call cannot be submitted, so that the caller runs
 * it itself. */
int __mc_uring_run(struct __mc_run *run, unsigned first, unsigned end, unsigned *stop)
{
	struct mc_ctx *ctx = run->ctx;
	struct mc_call *c = run->c;
	unsigned pos = first;
	long a[RING_ENTRIES][6];
	long res[RING_ENTRIES];
	unsigned char hard[RING_ENTRIES];
	signed char pfi[RING_ENTRIES];

	*stop = 0;
	if (ring_ready(ctx) < 0)
		return (int)first;
	while (pos < end) {
		struct io_uring *ring = ctx->ring;
		struct posfd pf[MAX_POSFD];
		unsigned cnt = 0, x, got = 0, npf = 0, p;
		int ret, stopped = 0;

		/* The batch: calls whose arguments are known now, or predicted by
		 * a producer in the batch that breaks the link if it is wrong. */
		while (pos + cnt < end && cnt < RING_ENTRIES) {
			unsigned m = pos + cnt, j;

			for (j = 0; j < 6; j++)
				if (!sub_arg(c, pos, m, j, &a[cnt][j]))
					break;
			if (j < 6 || !prep_ok(c[m].nr, a[cnt]))
				break;
			pfi[cnt] = -1;
			if (at_pos(c[m].nr)) {
				int reg;
				struct __mc_fdinfo fi = __mc_run_fdinfo(run, (int)a[cnt][0], 1, &reg);

				for (p = 0; p < npf; p++)
					if (pf[p].fd == (int)a[cnt][0] ||
					    (pf[p].dev == fi.dev && pf[p].ino == fi.ino))
						break;
				if (p < npf && (pf[p].fd != (int)a[cnt][0] || pf[p].closed))
					break; /* another descriptor of the same file: its own batch */
				if (p == npf) {
					long b;

					if (npf == MAX_POSFD)
						break;
					b = __mc_sys(ctx, SYS_lseek, a[cnt][0], 0, SEEK_CUR, 0, 0, 0);
					if (b < 0)
						break;
					pf[p].fd = (int)a[cnt][0];
					pf[p].closed = 0;
					pf[p].dev = fi.dev;
					pf[p].ino = fi.ino;
					pf[p].base = pf[p].next = b;
					pf[p].done = 0;
					npf++;
				}
				pfi[cnt] = (signed char)p;
				a[cnt][3] = pf[p].next;
				a[cnt][4] = 0;
				if (c[m].nr == SYS_readv || c[m].nr == SYS_writev)
					pf[p].closed = 1;
				else
					pf[p].next += a[cnt][2];
			}
			/* Checked calls, predicted producers, transfers at the file
			 * position (the next offset assumes this one was whole) and
			 * writes (an EFBIG must stop the chain: only the call run
			 * directly raises SIGXFSZ) break the link when they fail or
			 * fall short; the rest hold it. */
			hard[cnt] = !((c[m].flags & (MC_CHECK | MC_CHECK_FULL | MC_PREDICT)) || is_write(c[m].nr) ||
				      pfi[cnt] >= 0);
			cnt++;
		}
		if (cnt == 0)
			return (int)pos;
		for (x = 0; x < cnt; x++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
			long nr = c[pos + x].nr;

			if (pfi[x] >= 0)
				nr = nr == SYS_read ? SYS_pread64 : nr == SYS_write ? SYS_pwrite64 :
				     nr == SYS_readv ? SYS_preadv : SYS_pwritev;
			prep(sqe, nr, a[x]);
			sqe->user_data = x;
			if (x + 1 < cnt)
				sqe->flags |= hard[x] ? IOSQE_IO_HARDLINK : IOSQE_IO_LINK;
		}
		do {
			ret = io_uring_submit_and_wait(ring, cnt);
		} while (ret == -EINTR);
		ctx->stats.crossings++;
		if (ret < 0) {
			/* The ring is unusable (its descriptor closed under us, say):
			 * nothing was submitted; drop it and run directly from here. */
			io_uring_queue_exit(ring);
			free(ring);
			ctx->ring = NULL;
			ctx->ring_broken = 1;
			return (int)pos;
		}
		while (got < cnt) {
			struct io_uring_cqe *cqe;
			unsigned head, seen = 0;

			io_uring_for_each_cqe(ring, head, cqe) {
				if (cqe->user_data < cnt)
					res[cqe->user_data] = cqe->res;
				seen++;
			}
			io_uring_cq_advance(ring, seen);
			got += seen;
			if (got < cnt) {
				do {
					ret = io_uring_wait_cqe_nr(ring, &cqe, cnt - got);
				} while (ret == -EINTR);
				ctx->stats.crossings++;
			}
		}
		/* Results in order; the first broken link ends the batch. */
		for (x = 0; x < cnt; x++) {
			unsigned m = pos + x;
			long r = res[x];

			if (is_write(c[m].nr) && r == -EFBIG) {
				/* Past RLIMIT_FSIZE nothing was written; the call run
				 * directly raises SIGXFSZ as the program expects (at the
				 * same offset, and leaving the position alone). */
				long nr = c[m].nr;

				if (pfi[x] >= 0)
					nr = nr == SYS_write ? SYS_pwrite64 : SYS_pwritev;
				r = __mc_sys(ctx, nr, a[x][0], a[x][1], a[x][2], a[x][3], a[x][4], 0);
			}
			c[m].result = r;
			ctx->stats.uring++;
			ctx->stats.calls++;
			if (pfi[x] >= 0 && r > 0)
				pf[(int)pfi[x]].done += r;
			if (__mc_stops(c, m)) {
				stopped = 1;
				break;
			}
			if (x + 1 < cnt && !hard[x] && res[x + 1] == -ECANCELED) {
				/* The link broke on a short transfer or a failure the
				 * chain goes past: resume after this call, with real
				 * values for whatever used it. */
				ctx->stats.completions++;
				break;
			}
		}
		for (p = 0; p < npf; p++)
			__mc_sys(ctx, SYS_lseek, pf[p].fd, pf[p].base + pf[p].done, SEEK_SET, 0, 0, 0);
		if (stopped) {
			*stop = 1;
			return (int)(pos + x);
		}
		pos += x < cnt ? x + 1 : cnt;
	}
	return (int)pos;
}
