/* SPDX-License-Identifier: MIT */
/*
 * Description: looped multi-calls (seed 000 §3.4).  The copy loop in both
 * rotations (read/write, and write/read as §3.3.3 rotates it), which fusion
 * turns into copy_file_range; loops that stop at end of file, at the bound,
 * on a checked error (closed output, closed input) or go on past unchecked
 * ones; generic bodies with other conditions.  Compared: return value,
 * iteration count, both results, both file offsets, the output file and the
 * buffer's bytes.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

struct ccase {
	int rotated;
	long bs;
	long size;
	unsigned long max;
	int rchk, wchk;
	int fault; /* 0 none, 1 closed output, 2 closed input, 3 output read-only,
		    * 4 output on the same file (must stay a loop) */
	long skip; /* bytes already read from the input when the loop starts */
};

static char buf[1 << 17];

static void copy_loop(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct ccase *k = arg;
	struct mc_call body[2];
	struct mc_loop loop = { 0, MC_WHILE_GT, 0, k->max };
	unsigned long it = 0;
	int in, out, ret, r = 0, w = 1;
	long n0 = 0;

	t_write_file(t_path(dir, "in"), (size_t)k->size, 11);
	in = t_open(t_path(dir, "in"), O_RDONLY);
	if (k->fault == 3)
		out = t_open(t_path(dir, "out"), O_RDONLY | O_CREAT);
	else if (k->fault == 4)
		out = t_open(t_path(dir, "in"), O_WRONLY);
	else
		out = t_open(t_path(dir, "out"), O_WRONLY | O_CREAT | O_TRUNC);
	if (k->skip)
		lseek(in, k->skip, SEEK_SET);
	memset(buf, 0x33, sizeof(buf));
	if (k->rotated) {
		/* The caller has read the first block (the loop's header). */
		n0 = read(in, buf, (size_t)k->bs);
		r = 1;
		w = 0;
		loop.call = 1;
	}
	mc_prep_read(&body[r], in, buf, (size_t)k->bs);
	mc_prep_write(&body[w], out, buf, 0);
	mc_set_ref(&body[w], 2, (unsigned)r);
	if (k->rchk)
		mc_set_check(&body[r]);
	if (k->wchk)
		mc_set_check(&body[w]);
	body[r].result = n0;
	if (k->fault == 1)
		close(out);
	if (k->fault == 2)
		close(in);
	ret = mc_run_loop(ctx, body, 2, &loop, &it);
	t_rec(o, "ret", ret);
	t_rec(o, "iterations", (long long)it);
	t_rec(o, "read.result", body[r].result);
	t_rec(o, "write.result", body[w].result);
	t_rec_fd_offset(o, "in.offset", in);
	t_rec_fd_offset(o, "out.offset", out);
	t_rec_file(o, "out", t_path(dir, "out"));
	t_rec_file(o, "in", t_path(dir, "in"));
	t_rec_mem(o, "buf", buf, sizeof(buf));
	if (t_backend_of(ctx) == MC_BACKEND_FUSION && !k->fault && k->size >= 4 * k->bs &&
	    k->max >= 4 && n0 == k->bs) {
		struct mc_stats s = t_stats(ctx);

		long blocks = k->size / k->bs;
		unsigned long long want = 2ULL * (unsigned long long)((unsigned long)blocks < k->max ? blocks : (long)k->max) - 6;

		/* Fused: the pairs between the first and the last went through
		 * one fused call, and the crossings do not grow with the size. */
		T_ASSERT(s.fused >= want, "copy loop not fused: %llu calls fused, want %llu", s.fused,
			 want);
		T_ASSERT(s.crossings < 40, "copy loop: %llu crossings for %ld blocks", s.crossings,
			 blocks);
	}
	if (k->fault != 1)
		close(out);
	if (k->fault != 2)
		close(in);
}

/* A generic body: write a counter to a pipe, read it back, loop while the
 * read returns exactly what was written (EQ), bounded. */
static void pipe_echo(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	unsigned long max = *(unsigned long *)arg, it = 0;
	struct mc_call body[3];
	struct mc_loop loop = { 2, MC_WHILE_EQ, 8, max };
	char rb[16] = { 0 };
	int p[2], ret;

	(void)dir;
	if (pipe(p) < 0)
		t_fail("pipe");
	mc_prep_write(&body[0], p[1], "12345678", 8);
	mc_prep_syscall(&body[1], SYS_getppid, 0, 0, 0, 0, 0, 0);
	mc_prep_read(&body[2], p[0], rb, 8);
	mc_set_check(&body[0]);
	ret = mc_run_loop(ctx, body, 3, &loop, &it);
	t_rec(o, "ret", ret);
	t_rec(o, "iterations", (long long)it);
	t_rec(o, "r0", body[0].result);
	t_rec(o, "r2", body[2].result);
	t_rec_mem(o, "rb", rb, sizeof(rb));
	close(p[1]);
	/* Now the write end is closed: a loop of reads ends at EOF (LT 1 is
	 * false at 0), checked write fails with EBADF on the closed end. */
	mc_prep_write(&body[0], p[1], "x", 1);
	mc_set_check(&body[0]);
	ret = mc_run_loop(ctx, body, 3, &loop, &it);
	t_rec(o, "ret.closed", ret);
	t_rec(o, "iterations.closed", (long long)it);
	t_rec_calls(o, "closed", body, 3);
	close(p[0]);
}

/* A loop whose tested call is in the middle: lseek, read, write; the
 * loop-carried reference feeds the read's count to the next write. */
static void middle(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	unsigned long it = 0;
	struct mc_call body[3];
	struct mc_loop loop = { 1, MC_WHILE_GE, 100, 50 };
	int in, out, ret;

	(void)arg;
	t_write_file(t_path(dir, "in"), 1234, 3);
	in = t_open(t_path(dir, "in"), O_RDONLY);
	out = t_open(t_path(dir, "out"), O_WRONLY | O_CREAT | O_TRUNC);
	mc_prep_write(&body[0], out, buf, 0);
	mc_set_ref(&body[0], 2, 2);            /* loop-carried: last iteration's read */
	mc_prep_read(&body[1], in, buf, 100);
	mc_prep_syscall(&body[2], SYS_lseek, in, 0, SEEK_CUR, 0, 0, 0);
	body[2].result = 0;                     /* first write writes 0 bytes */
	ret = mc_run_loop(ctx, body, 3, &loop, &it);
	t_rec(o, "ret", ret);
	t_rec(o, "iterations", (long long)it);
	t_rec_calls(o, "c", body, 3);
	t_rec_file(o, "out", t_path(dir, "out"));
	close(in);
	close(out);
}

int main(void)
{
	static const long sizes[] = { 0, 1, 511, 512, 513, 5000, 81920 + 3, 300000 };
	static const long bss[] = { 512, 4096, 3000, 16384 };
	static const unsigned long maxes[] = { 1, 2, 3, 7, 1000000 };
	char what[200];

	for (int rot = 0; rot < 2; rot++)
		for (unsigned b = 0; b < 4; b++)
			for (unsigned s = 0; s < 8; s++)
				for (unsigned m = 0; m < 5; m++) {
					struct ccase k = { rot, bss[b], sizes[s], maxes[m], 1, 1, 0, 0 };

					if (rot && sizes[s] == 0)
						continue; /* the rotated loop starts after a read > 0 */
					snprintf(what, sizeof(what), "copy rot=%d bs=%ld size=%ld max=%lu", rot,
						 k.bs, k.size, k.max);
					t_compare(what, copy_loop, &k);
				}
	/* Faults: checked and unchecked reads and writes. */
	for (int rot = 0; rot < 2; rot++)
		for (int fault = 1; fault <= 4; fault++)
			for (int chk = 0; chk < 4; chk++) {
				struct ccase k = { rot, 4096, 50000, 1000, chk & 1, chk >> 1, fault, 0 };

				if (rot && fault == 2)
					continue; /* the caller's first read would have failed */
				snprintf(what, sizeof(what), "copy rot=%d fault=%d rchk=%d wchk=%d", rot,
					 fault, k.rchk, k.wchk);
				t_compare(what, copy_loop, &k);
			}
	/* Starting mid-file, and a bound reached exactly at end of file. */
	{
		struct ccase k = { 0, 4096, 40960, 1000, 1, 1, 0, 1000 };

		t_compare("copy from offset 1000", copy_loop, &k);
		k.skip = 0;
		k.max = 10;
		t_compare("copy bound at eof", copy_loop, &k);
		k.max = 11;
		t_compare("copy bound at eof+1", copy_loop, &k);
		k.rotated = 1;
		k.max = 10;
		t_compare("rotated copy bound at eof", copy_loop, &k);
	}
	for (unsigned long max = 1; max <= 5; max += 2) {
		snprintf(what, sizeof(what), "pipe echo max=%lu", max);
		t_compare(what, pipe_echo, &max);
	}
	t_compare("tested call in the middle", middle, NULL);
	return t_finish();
}
