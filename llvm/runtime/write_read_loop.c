/* SPDX-License-Identifier: MIT */
/*
 * The looped multi-call the compiler plugin puts in place of a rotated
 * copy loop (seed 000 §3.3.3, §3.4):
 *
 *     do { write(out, wbuf, n); n = read(in, rbuf, bs); } while (n > 0);
 *     return n;
 *
 * with exactly what that loop leaves: every write's failure sets errno as
 * libc's write would and the loop goes on (the program ignored write's
 * result, which the plugin proved), short writes are not retried, the last
 * read's result is returned (-1 with errno set, or 0), and libmulticall
 * leaves the buffer holding what the reads would have left in it.
 *
 * Never slower (issue 12): a program pays once for its first context (the
 * calibration read, the context's memory, the library's code paged in: mc-
 * calibrate's first_context) and the multi-call gains a little per block.
 * The plugin computes from the calibration how many blocks pay for that
 * (min_blocks); until this thread has an auto context, the loop runs as
 * the program wrote it unless the input is a regular file with at least
 * that many blocks left to read and the output a regular file too — two
 * fstats and an lseek, nothing else, for a short copy, a pipe or a socket.
 *
 * The first context of a priced loop is cheap: once the plugin has priced
 * the loop from the calibration (min_blocks > 0) and the gate has found a
 * regular file at both ends, the fusion rule is decided, so the loop gets
 * a fusion context — no calibration read (its file, the machine's
 * identity, the parse) and no probe for the kernel module, which auto
 * would not use for a copy between two files anyway (it fuses it with
 * copy_file_range).  The plugin prices it so (mc-calibrate's
 * first_fusion_context).  A priced loop whose output is not a regular file
 * runs as the program wrote it: the saving per block it was priced by is a
 * copy between two files, and without the kernel module (the host a priced
 * loop is compiled for) auto fuses no copy into a pipe or socket, so an
 * auto context there would cost first_context and save nothing.  Any
 * other loop (--assume-gain, MULTICALL_BACKEND=direct) gets the auto
 * context as before.
 *
 * A program that checks its writes (`if (write(out, buf, n) != n) err(...)`,
 * or `< 0`) gets __syscluster_write_read_loop_checked: the loop stops at
 * the write its check rejects and hands back what the handler may read.
 *
 * The write is checked in the multi-call so that each failure comes back
 * here, where errno is set as it would have been and the loop resumes with
 * the read that followed it.  Without a context (no memory), or called again
 * from a signal handler while this thread is inside it, the loop runs as the
 * program wrote it.
 */
#define _GNU_SOURCE /* secure_getenv */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "direct.h"
#include "multicall.h"

static __thread struct mc_ctx *loop_ctx;  /* auto */
static __thread struct mc_ctx *fused_ctx; /* fusion: a priced copy between two files */
static __thread int loop_busy;

/* What the program does with the write's result (the plugin proved which):
 * ignores it, calls a handler that leaves the loop for good (ends the
 * program, returns, breaks or jumps out) when it fails (`< 0`), or when it
 * is not the count (`!= n`). */
enum { CHECK_NONE, CHECK_FAILED, CHECK_FULL };

/* The loop as the program wrote it.  A write its check rejects ends it:
 * *wres gets libc's result and the write's count is returned (> 0). */
static long plain_loop(int out, const void *wbuf, int in, void *rbuf, size_t bs, long n, int check,
		       long *wres)
{
	do {
		long w = write(out, wbuf, (size_t)n);

		if ((check != CHECK_NONE && w < 0) || (check == CHECK_FULL && w != n)) {
			*wres = w;
			return n;
		}
		n = read(in, rbuf, bs);
	} while (n > 0);
	return n;
}

/* What the gate found (GATE_FILES: both ends are regular files). */
enum { GATE_SHORT, GATE_LONG, GATE_FILES };

/* Whether in is a regular file with at least min_blocks blocks of bs bytes
 * left after its offset (what the first context needs to pay for itself),
 * and then whether out is a regular file too.  errno is left as it was. */
static int long_copy_ahead(int in, int out, size_t bs, unsigned long min_blocks)
{
	int saved = errno;
	struct stat st;
	off_t pos;
	int ok = GATE_SHORT;

	if (fstat(in, &st) == 0 && S_ISREG(st.st_mode) && (pos = lseek(in, 0, SEEK_CUR)) >= 0 &&
	    st.st_size > pos && (unsigned long)(st.st_size - pos) / bs >= min_blocks)
		ok = fstat(out, &st) == 0 && S_ISREG(st.st_mode) ? GATE_FILES : GATE_LONG;
	errno = saved;
	return ok;
}

/* The context for a loop the gate let through: fusion where the gate found
 * two files (unless MULTICALL_BACKEND asks for direct: auto then becomes
 * direct), else auto.  NULL without memory. */
static struct mc_ctx *gate_ctx(int gate)
{
	if (gate == GATE_FILES) {
		if (!__syscluster_direct_asked()) {
			if (!fused_ctx)
				fused_ctx = mc_ctx_new(MC_BACKEND_FUSION);
			return fused_ctx;
		}
	}
	if (!loop_ctx)
		loop_ctx = mc_ctx_new(MC_BACKEND_AUTO);
	return loop_ctx;
}

static long write_read_loop(int out, const void *wbuf, int in, void *rbuf, size_t bs, long n,
			    unsigned long min_blocks, int check, long *wres)
{
	struct mc_call body[2];
	const struct mc_loop loop = {1, MC_WHILE_GT, 0, ULONG_MAX};
	unsigned long iterations;
	struct mc_ctx *ctx;
	int r;

	if (loop_busy)
		return plain_loop(out, wbuf, in, rbuf, bs, n, check, wres);
	if (!min_blocks) {
		/* --assume-gain: the multi-call whatever the input, on auto. */
		ctx = gate_ctx(GATE_LONG);
	} else if (loop_ctx) {
		/* This thread paid for a first context already. */
		ctx = loop_ctx;
	} else {
		int gate = long_copy_ahead(in, out, bs, min_blocks);

		/* Priced for a copy between two files only (above). */
		if (gate != GATE_FILES)
			return plain_loop(out, wbuf, in, rbuf, bs, n, check, wres);
		ctx = gate_ctx(gate);
	}
	if (!ctx)
		return plain_loop(out, wbuf, in, rbuf, bs, n, check, wres);
	loop_busy = 1;
	for (;;) {
		mc_prep_write(&body[0], out, wbuf, 0);
		mc_set_ref(&body[0], 2, 1); /* write's count is the previous read's result */
		mc_set_check(&body[0]);
		/* A checked loop stops at any write that is not whole: the read
		 * then keeps that write's count (docs/MULTICALL.md), which the
		 * program's handler may read. */
		if (check != CHECK_NONE)
			mc_set_check_full(&body[0]);
		mc_prep_read(&body[1], in, rbuf, bs);
		mc_set_check(&body[1]);
		body[1].result = n;
		r = mc_run_loop(ctx, body, 2, &loop, &iterations);
		if (r < 0) { /* refused before running anything */
			loop_busy = 0;
			return plain_loop(out, wbuf, in, rbuf, bs, n, check, wres);
		}
		if (r == 0) {
			long w = body[0].result;

			if (check != CHECK_NONE && (w < 0 || check == CHECK_FULL)) {
				/* The program's check calls its handler: with errno as
				 * the write left it, libc's result, the write's count. */
				if (w < 0)
					errno = (int)-w;
				*wres = w < 0 ? -1 : w;
				n = body[1].result;
				break;
			}
			/* A failed write the program ignores, or a short one it
			 * lets pass: its errno, then its next read. */
			if (w < 0)
				errno = (int)-w;
			n = read(in, rbuf, bs);
			if (n > 0)
				continue;
			break;
		}
		n = body[1].result; /* the read that ended the loop */
		if (n < 0) {
			errno = (int)-n;
			n = -1;
		}
		break;
	}
	loop_busy = 0;
	return n;
}

long __syscluster_write_read_loop(int out, const void *wbuf, int in, void *rbuf, size_t bs,
				  long n, unsigned long min_blocks)
{
	long w;

	return write_read_loop(out, wbuf, in, rbuf, bs, n, min_blocks, CHECK_NONE, &w);
}

/* The copy loop whose write the program checks (full: `!= n`, else
 * `< 0`) with a handler that never resumes the loop.  Returns the last read's
 * result (<= 0) when the loop ends as the program's would, or the count
 * of the write its check rejects (> 0), with libc's result of that write
 * in *wres and errno as it left it: the program then runs its handler. */
long __syscluster_write_read_loop_checked(int out, const void *wbuf, int in, void *rbuf, size_t bs,
					  long n, unsigned long min_blocks, int full, long *wres)
{
	return write_read_loop(out, wbuf, in, rbuf, bs, n, min_blocks, full ? CHECK_FULL : CHECK_FAILED,
			       wres);
}
