/* SPDX-License-Identifier: MIT */
/*
 * Description: a fused call that ends short.  RLIMIT_FSIZE cuts a writev
 * in the middle of one of its writes (the write alone returns the bytes
 * that fit), and the next write fails with EFBIG and raises SIGXFSZ.  The
 * results, the stop index, the file, and the number of SIGXFSZ delivered
 * must all be direct's, for runs of writes, pwrites, and copy loops (whose
 * copy_file_range ends inside a block), checked or not.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static volatile sig_atomic_t xfsz;

static void on_xfsz(int sig)
{
	(void)sig;
	xfsz++;
}

static void set_limit(rlim_t soft)
{
	struct rlimit rl;

	getrlimit(RLIMIT_FSIZE, &rl);
	rl.rlim_cur = soft;
	if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
		t_fail("setrlimit: %s", strerror(errno));
}

struct wcase {
	unsigned n;
	long len;
	long limit;
	int check;     /* -1 none, -2 all, else that index */
	int positional; /* pwrite at consecutive offsets instead of write */
	int pre;        /* bytes in the file before */
};

static char data[1 << 16];

static void writes(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct wcase *w = arg;
	struct mc_call c[64];
	int fd, ret;

	fd = t_open(t_path(dir, "out"), O_RDWR | O_CREAT | O_TRUNC);
	if (w->pre && write(fd, data, (size_t)w->pre) != w->pre)
		t_fail("pre");
	for (unsigned i = 0; i < w->n; i++) {
		if (w->positional)
			mc_prep_pwrite(&c[i], fd, data + i * w->len, (size_t)w->len, w->pre + i * w->len);
		else
			mc_prep_write(&c[i], fd, data + i * w->len, (size_t)w->len);
		if (w->check == -2 || (int)i == w->check)
			mc_set_check(&c[i]);
	}
	xfsz = 0;
	set_limit((rlim_t)w->limit);
	ret = mc_run(ctx, c, w->n);
	set_limit(RLIM_INFINITY);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, w->n);
	t_rec(o, "sigxfsz", xfsz);
	t_rec_fd_offset(o, "offset", fd);
	t_rec_file(o, "out", t_path(dir, "out"));
	if (t_backend_of(ctx) == MC_BACKEND_FUSION) {
		struct mc_stats s = t_stats(ctx);

		T_ASSERT(s.fused >= 1, "nothing fused");
	}
	close(fd);
}

struct ccase {
	long bs, size, limit;
	int wchk;
};

static char buf[1 << 15];

static void copy(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct ccase *k = arg;
	struct mc_call body[2];
	struct mc_loop loop = { 0, MC_WHILE_GT, 0, 100000 };
	unsigned long it = 0;
	int in, out, ret;

	t_write_file(t_path(dir, "in"), (size_t)k->size, 5);
	in = t_open(t_path(dir, "in"), O_RDONLY);
	out = t_open(t_path(dir, "out"), O_WRONLY | O_CREAT | O_TRUNC);
	memset(buf, 0, sizeof(buf));
	mc_prep_read(&body[0], in, buf, (size_t)k->bs);
	mc_prep_write(&body[1], out, buf, 0);
	mc_set_ref(&body[1], 2, 0);
	mc_set_check(&body[0]);
	if (k->wchk)
		mc_set_check(&body[1]);
	xfsz = 0;
	set_limit((rlim_t)k->limit);
	ret = mc_run_loop(ctx, body, 2, &loop, &it);
	set_limit(RLIM_INFINITY);
	t_rec(o, "ret", ret);
	t_rec(o, "iterations", (long long)it);
	t_rec_calls(o, "c", body, 2);
	t_rec(o, "sigxfsz", xfsz);
	t_rec_fd_offset(o, "in.offset", in);
	t_rec_fd_offset(o, "out.offset", out);
	t_rec_file(o, "out", t_path(dir, "out"));
	t_rec_mem(o, "buf", buf, sizeof(buf));
	close(in);
	close(out);
}

int main(void)
{
	struct sigaction sa;
	char what[160];

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_xfsz;
	sigaction(SIGXFSZ, &sa, NULL);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 13 + 1);

	for (int pos = 0; pos < 2; pos++)
		for (int chk = -2; chk < 12; chk += 6) {
			/* The limit falls inside write 10, at a write boundary, at 0. */
			static const long limits[] = { 10500, 10000, 0, 1 };

			for (unsigned l = 0; l < 4; l++) {
				struct wcase w = { 16, 1000, limits[l], chk == 10 ? 10 : chk, pos, 0 };

				snprintf(what, sizeof(what), "%s 16x1000 limit=%ld check=%d",
					 pos ? "pwrite" : "write", w.limit, w.check);
				t_compare(what, writes, &w);
			}
		}
	{
		struct wcase w = { 16, 8, 100, 13, 0, 50 };

		t_compare("write 16x8 limit inside, file not empty", writes, &w);
	}
	for (int wchk = 0; wchk < 2; wchk++) {
		static const long bss[] = { 512, 3000, 4096, 16384 };
		static const long limits[] = { 100000, 102400, 1000, 0 };

		for (unsigned b = 0; b < 4; b++)
			for (unsigned l = 0; l < 4; l++) {
				struct ccase k = { bss[b], 300000, limits[l], wchk };

				snprintf(what, sizeof(what), "copy bs=%ld limit=%ld wchk=%d", k.bs, k.limit,
					 wchk);
				t_compare(what, copy, &k);
			}
	}
	return t_finish();
}
