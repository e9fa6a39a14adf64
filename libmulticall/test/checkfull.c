/* SPDX-License-Identifier: MIT */
/*
 * Description: MC_CHECK_FULL, the short-transfer check of
 * `if (write(fd, buf, n) != n) err(...)`.  A marked call that transfers
 * less than its count (or fails) stops the multi-call at its index and the
 * later calls are not run; one that transfers everything lets it go on.
 * Short transfers are real: reads at the end of a file (fused into readv),
 * preads past the end (preadv), non-blocking writes into a full pipe, and
 * counts given by a reference to an earlier read.  Every backend must give
 * direct's record, and direct's stop index is checked against the rule.
 * A failure counts as libc's -1 (a count of (size_t)-1 is met by it).
 * lseek(SEEK_SET) checked full: its result must be the offset.
 * In a loop body: the rotated copy loop's write, checked full, stops the
 * loop at the first short or failed write (RLIMIT_FSIZE cuts one inside a
 * block, a full non-blocking pipe refuses one), and the read after it
 * keeps the count that write asked for.
 * Refused: the flag on a call without a count, on a loop body's call
 * whose count is its own previous result, and on lseek in a loop body.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static char bufs[16][4096];

struct rcase {
	int pread;      /* pread64 at consecutive offsets, else read */
	unsigned fsize; /* bytes in the file */
	unsigned n, len;
	int full_at;    /* the call marked MC_CHECK_FULL, -2 all */
	int expect;     /* mc_run's return */
};

static void reads(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct rcase *k = arg;
	struct mc_call c[16];
	int fd, ret;

	t_write_file(t_path(dir, "in"), k->fsize, 3);
	fd = t_open(t_path(dir, "in"), O_RDONLY);
	memset(bufs, 0xee, sizeof(bufs));
	for (unsigned i = 0; i < k->n; i++) {
		if (k->pread)
			mc_prep_pread(&c[i], fd, bufs[i], k->len, (off_t)i * k->len);
		else
			mc_prep_read(&c[i], fd, bufs[i], k->len);
		if (k->full_at == -2 || (int)i == k->full_at)
			mc_set_check_full(&c[i]);
	}
	ret = mc_run(ctx, c, k->n);
	T_ASSERT(ret == k->expect, "%s: ret %d, expected %d", mc_backend_name(t_backend_of(ctx)), ret,
		 k->expect);
	for (unsigned i = (unsigned)k->expect + 1; i < k->n; i++)
		T_ASSERT(c[i].result == -ECANCELED, "call %u after the stop ran: %ld", i, c[i].result);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, k->n);
	t_rec_fd_offset(o, "offset", fd);
	t_rec_mem(o, "bufs", bufs, sizeof(bufs));
	close(fd);
}

/* Non-blocking writes into a pipe of one page: a write of at most a page
 * that does not fit fails (EAGAIN: PIPE_BUF writes are atomic), a longer
 * one writes what fits. */
struct wcase {
	unsigned n, len;
	int full_at;
	int expect;
};

static void pipe_writes(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct wcase *k = arg;
	static char data[4 * 4096];
	struct mc_call c[16];
	int p[2], ret;

	(void)dir;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 5 + 1);
	if (pipe2(p, O_NONBLOCK) < 0 || fcntl(p[1], F_SETPIPE_SZ, 4096) < 0)
		t_fail("pipe");
	for (unsigned i = 0; i < k->n; i++) {
		mc_prep_write(&c[i], p[1], data + i * k->len, k->len);
		if (k->full_at == -2 || (int)i == k->full_at)
			mc_set_check_full(&c[i]);
	}
	ret = mc_run(ctx, c, k->n);
	T_ASSERT(ret == k->expect, "%s: ret %d, expected %d", mc_backend_name(t_backend_of(ctx)), ret,
		 k->expect);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, k->n);
	t_rec_drain(o, "peer", p[0]);
	close(p[0]);
	close(p[1]);
}

/* read(in, buf, len) then write(out, buf, <the read's result>) checked
 * full: the count is the reference's value, so a short read followed by a
 * whole write of it goes on. */
struct refcase {
	unsigned fsize, len;
	int expect;
};

static void ref_count(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct refcase *k = arg;
	struct mc_call c[3];
	int in, out, ret;

	t_write_file(t_path(dir, "in"), k->fsize, 9);
	in = t_open(t_path(dir, "in"), O_RDONLY);
	out = t_open(t_path(dir, "out"), O_RDWR | O_CREAT | O_TRUNC);
	mc_prep_read(&c[0], in, bufs[0], k->len);
	mc_set_check(&c[0]);
	mc_prep_write(&c[1], out, bufs[0], 0);
	mc_set_ref(&c[1], 2, 0);
	mc_set_check_full(&c[1]);
	mc_prep_write(&c[2], out, "end", 3);
	mc_set_check_full(&c[2]);
	ret = mc_run(ctx, c, 3);
	T_ASSERT(ret == k->expect, "%s: ret %d, expected %d", mc_backend_name(t_backend_of(ctx)), ret,
		 k->expect);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, 3);
	t_rec_fd_offset(o, "in.offset", in);
	t_rec_file(o, "out", t_path(dir, "out"));
	close(in);
	close(out);
}

/* lseek(fd, pos, SEEK_SET) != pos then a read, as fsck.fat's fs_read:
 * the seek is checked full (its result must be the offset asked for),
 * fused with the read into a preadv where the calibration allows.  A
 * negative offset fails (EINVAL) and stops it; pos == -1 does not (libc's
 * -1 is the offset asked for, so the program goes on). */
struct scase {
	long pos;
	int expect;
};

static void seek_read(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct scase *k = arg;
	struct mc_call c[3];
	int fd, ret;

	t_write_file(t_path(dir, "in"), 1000, 5);
	fd = t_open(t_path(dir, "in"), O_RDONLY);
	memset(bufs, 0xee, 2 * 4096);
	mc_prep_lseek(&c[0], fd, k->pos, SEEK_SET);
	mc_set_check_full(&c[0]);
	mc_prep_read(&c[1], fd, bufs[0], 100);
	mc_prep_read(&c[2], fd, bufs[1], 100);
	ret = mc_run(ctx, c, 3);
	T_ASSERT(ret == k->expect, "%s: lseek to %ld: ret %d, expected %d", mc_backend_name(t_backend_of(ctx)),
		 k->pos, ret, k->expect);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, 3);
	t_rec_fd_offset(o, "offset", fd);
	t_rec_mem(o, "bufs", bufs, 2 * 4096);
	close(fd);
}

/* The test is the program's, on libc's result: a failed write whose count
 * is (size_t)-1 returns -1, which equals the count, so the chain goes on. */
static void minus_one(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	struct mc_call c[2];
	int out, closed = dup(2), ret;

	(void)arg;
	close(closed);
	out = t_open(t_path(dir, "out"), O_RDWR | O_CREAT | O_TRUNC);
	mc_prep_write(&c[0], closed, "x", (size_t)-1);
	mc_set_check_full(&c[0]);
	mc_prep_write(&c[1], out, "next", 4);
	mc_set_check_full(&c[1]);
	ret = mc_run(ctx, c, 2);
	T_ASSERT(ret == 2 && c[0].result < 0 && c[1].result == 4, "%s: ret %d, results %ld %ld",
		 mc_backend_name(t_backend_of(ctx)), ret, c[0].result, c[1].result);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, 2);
	t_rec_file(o, "out", t_path(dir, "out"));
	close(out);
}

/* The rotated copy loop { write(out, buf, <previous read>) checked full;
 * read(in, buf, bs) } after a first read, into a file limited to limit
 * bytes (SIGXFSZ ignored: the write past it fails with EFBIG) or a
 * non-blocking pipe of one page (limit 0). */
struct lcase {
	long fsize, bs, limit;
	int expect;
};

static void loop_copy(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct lcase *k = arg;
	struct mc_call body[2];
	struct mc_loop loop = { 1, MC_WHILE_GT, 0, 100000 };
	struct rlimit rl, old;
	unsigned long it = 0;
	int in, out, p[2] = { -1, -1 }, ret;

	t_write_file(t_path(dir, "in"), (unsigned)k->fsize, 7);
	in = t_open(t_path(dir, "in"), O_RDONLY);
	if (k->limit) {
		out = t_open(t_path(dir, "out"), O_RDWR | O_CREAT | O_TRUNC);
	} else {
		if (pipe2(p, O_NONBLOCK) < 0 || fcntl(p[1], F_SETPIPE_SZ, 4096) < 0)
			t_fail("pipe");
		out = p[1];
	}
	memset(bufs, 0xee, sizeof(bufs));
	mc_prep_write(&body[0], out, bufs[0], 0);
	mc_set_ref(&body[0], 2, 1);
	mc_set_check(&body[0]);
	mc_set_check_full(&body[0]);
	mc_prep_read(&body[1], in, bufs[0], (size_t)k->bs);
	mc_set_check(&body[1]);
	body[1].result = read(in, bufs[0], (size_t)k->bs);
	getrlimit(RLIMIT_FSIZE, &old);
	rl = old;
	if (k->limit)
		rl.rlim_cur = (rlim_t)k->limit;
	signal(SIGXFSZ, SIG_IGN);
	setrlimit(RLIMIT_FSIZE, &rl);
	ret = mc_run_loop(ctx, body, 2, &loop, &it);
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_DFL);
	T_ASSERT(ret == k->expect, "%s: ret %d, expected %d", mc_backend_name(t_backend_of(ctx)), ret,
		 k->expect);
	if (ret == 0)
		T_ASSERT(body[1].result > 0 && body[1].result <= k->bs &&
				 (body[0].result < 0 || body[0].result < body[1].result),
			 "%s: the stopped write's count %ld (result %ld) is not kept",
			 mc_backend_name(t_backend_of(ctx)), body[1].result, body[0].result);
	t_rec(o, "ret", ret);
	t_rec(o, "iterations", (long long)it);
	t_rec_calls(o, "body", body, 2);
	t_rec_fd_offset(o, "in.offset", in);
	t_rec_mem(o, "buf", bufs[0], sizeof(bufs[0]));
	if (k->limit)
		t_rec_file(o, "out", t_path(dir, "out"));
	else
		t_rec_drain(o, "peer", p[0]);
	close(in);
	close(out);
	if (p[0] >= 0)
		close(p[0]);
}

static void refusals(void)
{
	struct mc_ctx *ctx = t_ctx(MC_BACKEND_DIRECT);
	struct mc_call c[2];
	struct mc_loop loop = { 0, MC_WHILE_GT, 0, 4 };
	unsigned long it;
	int fd = open("/dev/null", O_RDWR);

	if (!ctx || fd < 0) {
		t_fail("direct context or /dev/null");
		return;
	}
	mc_prep_syscall(&c[0], SYS_getpid, 0, 0, 0, 0, 0, 0);
	mc_set_check_full(&c[0]);
	T_ASSERT(mc_run(ctx, c, 1) == -EINVAL, "MC_CHECK_FULL on getpid accepted");
	mc_prep_read(&c[0], fd, bufs[0], 16);
	mc_prep_write(&c[1], fd, bufs[0], 0);
	mc_set_ref(&c[1], 2, 1);
	mc_set_check_full(&c[1]);
	T_ASSERT(mc_run_loop(ctx, c, 2, &loop, &it) == -EINVAL,
		 "MC_CHECK_FULL on a count that is the call's own previous result accepted");
	mc_prep_lseek(&c[1], fd, 0, SEEK_SET);
	mc_set_check_full(&c[1]);
	T_ASSERT(mc_run_loop(ctx, c, 2, &loop, &it) == -EINVAL, "MC_CHECK_FULL on lseek in a loop body accepted");
	mc_prep_lseek(&c[0], fd, 0, SEEK_CUR);
	mc_set_check_full(&c[0]);
	T_ASSERT(mc_run(ctx, c, 1) == -EINVAL, "MC_CHECK_FULL on lseek(SEEK_CUR) accepted");
	close(fd);
	mc_ctx_free(ctx);
}

int main(void)
{
	static const struct rcase rc[] = {
		{ 0, 1000, 8, 100, -2, 8 },   /* all whole */
		{ 0, 250, 8, 100, -2, 2 },    /* the third ends at 50 */
		{ 0, 200, 8, 100, -2, 2 },    /* the third gets 0 (EOF) */
		{ 0, 250, 8, 100, 5, 5 },     /* unmarked short reads go on */
		{ 0, 250, 8, 100, 1, 8 },     /* the marked one is whole */
		{ 1, 250, 8, 100, -2, 2 },    /* preadv */
		{ 1, 4096, 8, 512, -2, 8 },
		{ 1, 0, 4, 100, -2, 0 },
	};
	static const struct wcase wc[] = {
		{ 4, 1000, -2, 4 },  /* 4000 bytes fit */
		{ 6, 1000, -2, 4 },  /* the fifth fails (EAGAIN) */
		{ 6, 1000, 5, 5 },   /* the fifth fails unmarked, the sixth marked */
		{ 2, 6000, -2, 0 },  /* the first writes 4096 */
		{ 2, 6000, 1, 1 },
	};
	static const struct refcase fc[] = { { 100, 64, 3 }, { 30, 64, 3 }, { 0, 64, 3 } };
	char what[128];

	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < sizeof(rc) / sizeof(rc[0]); i++) {
		snprintf(what, sizeof(what), "%s fsize=%u %ux%u full_at=%d", rc[i].pread ? "pread" : "read",
			 rc[i].fsize, rc[i].n, rc[i].len, rc[i].full_at);
		t_compare(what, reads, (void *)&rc[i]);
	}
	for (size_t i = 0; i < sizeof(wc) / sizeof(wc[0]); i++) {
		snprintf(what, sizeof(what), "pipe write %ux%u full_at=%d", wc[i].n, wc[i].len,
			 wc[i].full_at);
		t_compare(what, pipe_writes, (void *)&wc[i]);
	}
	for (size_t i = 0; i < sizeof(fc) / sizeof(fc[0]); i++) {
		snprintf(what, sizeof(what), "read %u of %u, write of its result", fc[i].len, fc[i].fsize);
		t_compare(what, ref_count, (void *)&fc[i]);
	}
	t_compare("a failed write of (size_t)-1 bytes equals its count", minus_one, NULL);
	{
		static const struct scase sc[] = { { 0, 3 }, { 500, 3 }, { 5000, 3 }, { -5, 0 }, { -1, 3 } };

		for (size_t i = 0; i < sizeof(sc) / sizeof(sc[0]); i++) {
			snprintf(what, sizeof(what), "lseek to %ld checked full, two reads", sc[i].pos);
			t_compare(what, seek_read, (void *)&sc[i]);
		}
	}
	{
		static const struct lcase lc[] = {
			{ 20000, 4096, 1 << 20, 2 }, /* whole: the loop ends at EOF */
			{ 20000, 4096, 9000, 0 },    /* the third write is short (808 B) */
			{ 20000, 4096, 8192, 0 },    /* the third write fails (EFBIG) */
			{ 300000, 4096, 150000, 0 }, /* fused: copy_file_range ends inside a block */
			{ 20000, 1000, 0, 0 },       /* a pipe of 4096 B: the fifth write fails (EAGAIN) */
			{ 20000, 3000, 0, 0 },       /* the second write is short (1096 B) */
		};

		for (size_t i = 0; i < sizeof(lc) / sizeof(lc[0]); i++) {
			snprintf(what, sizeof(what), "copy loop, write checked full: %ld B at %ld into %s %ld",
				 lc[i].fsize, lc[i].bs, lc[i].limit ? "a file limited to" : "a pipe", lc[i].limit);
			t_compare(what, loop_copy, (void *)&lc[i]);
		}
	}
	refusals();
	return t_finish();
}
