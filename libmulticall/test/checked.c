/* SPDX-License-Identifier: MIT */
/*
 * Description: checked and unchecked failures.  A checked call that fails
 * stops the multi-call at its index, later calls get -ECANCELED; an
 * unchecked one never stops it.  Failures are real: a closed descriptor
 * (EBADF), a PROT_NONE page (EFAULT), a read-only descriptor (EBADF), in
 * the middle of runs that fusion merges (writes to a file, a pipe, a
 * stream socket; reads from a file).
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

enum { TGT_FILE, TGT_PIPE, TGT_STREAM, TGT_TCP, TGT_COUNT };
static const char *const tgt_name[] = { "file", "pipe", "unix-stream", "tcp" };

static void tcp_pair(int *a, int *b)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t l = sizeof(sa);
	int ls = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 1) < 0 ||
	    getsockname(ls, (struct sockaddr *)&sa, &l) < 0)
		t_fail("tcp listen");
	*a = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(*a, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		t_fail("tcp connect");
	*b = accept(ls, NULL, NULL);
	close(ls);
}

struct wcase {
	int target;
	unsigned n;      /* writes */
	int bad_at;      /* index of the failing write, -1 none */
	int bad_kind;    /* 0 EBADF (closed fd), 1 EFAULT, 2 EFAULT half */
	int check_at;    /* index marked MC_CHECK, -1 none; -2 all */
	unsigned len;
};

static char data[65536];

static void writes(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct wcase *w = arg;
	struct mc_call c[64];
	int fd = -1, peer = -1, closed, sv[2], p[2];
	char *bad = t_bad_ptr();
	int ret;

	switch (w->target) {
	case TGT_FILE:
		fd = t_open(t_path(dir, "out"), O_RDWR | O_CREAT | O_TRUNC);
		break;
	case TGT_PIPE:
		if (pipe(p) < 0)
			t_fail("pipe");
		fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
		fd = p[1];
		peer = p[0];
		break;
	case TGT_STREAM:
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
			t_fail("socketpair");
		fd = sv[0];
		peer = sv[1];
		break;
	default:
		tcp_pair(&fd, &peer);
		break;
	}
	closed = dup(2); /* a number that was open, now closed */
	close(closed);
	for (unsigned i = 0; i < w->n; i++) {
		mc_prep_write(&c[i], fd, data + i * w->len, w->len);
		c[i].result = 0x5a5a; /* must be overwritten */
		if ((int)i == w->bad_at) {
			if (w->bad_kind == 0)
				c[i].args[0] = closed;
			else if (w->bad_kind == 1)
				c[i].args[1] = (long)bad;
			else
				c[i].args[1] = (long)t_half_bad(w->len);
		}
		if (w->check_at == -2 || (int)i == w->check_at)
			mc_set_check(&c[i]);
	}
	ret = mc_run(ctx, c, w->n);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, w->n);
	if (w->target == TGT_FILE) {
		t_rec_fd_offset(o, "offset", fd);
		t_rec_file(o, "file", t_path(dir, "out"));
	} else if (w->target == TGT_TCP) {
		/* all of it, however TCP cut it into segments: up to EOF */
		char b[65536];
		uint64_t h = 0;
		long total = 0;
		ssize_t r;

		shutdown(fd, SHUT_WR);
		while ((r = read(peer, b, sizeof(b))) > 0) {
			for (ssize_t x = 0; x < r; x++)
				h = h * 131 + (unsigned char)b[x];
			total += r;
		}
		t_rec(o, "peer.bytes", total);
		t_rec(o, "peer.hash", (long long)h);
		close(peer);
	} else {
		t_rec_drain(o, "peer", peer);
		close(peer);
	}
	if (t_backend_of(ctx) == MC_BACKEND_FUSION && w->bad_at != 0 && w->n >= 2 &&
	    w->target != TGT_TCP) {
		struct mc_stats s = t_stats(ctx);

		T_ASSERT(s.fused + s.completions >= 1, "fusion did not fuse (%s)", tgt_name[w->target]);
	}
	close(fd);
}

/* Reads from a file: EFAULT into a bad buffer, EBADF from a write-only
 * descriptor, checked or not. */
struct rcase {
	unsigned n;
	int bad_at, bad_kind, check_at;
	unsigned len, fsize;
};

static void reads(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct rcase *r = arg;
	static char buf[64][4096];
	struct mc_call c[64];
	int fd, wo;
	int ret;

	t_write_file(t_path(dir, "in"), r->fsize, 7);
	fd = t_open(t_path(dir, "in"), O_RDONLY);
	wo = t_open(t_path(dir, "in"), O_WRONLY);
	memset(buf, 0xee, sizeof(buf));
	for (unsigned i = 0; i < r->n; i++) {
		mc_prep_read(&c[i], fd, buf[i], r->len);
		if ((int)i == r->bad_at) {
			if (r->bad_kind == 0)
				c[i].args[0] = wo;
			else
				c[i].args[1] = (long)t_bad_ptr();
		}
		if (r->check_at == -2 || (int)i == r->check_at)
			mc_set_check(&c[i]);
	}
	ret = mc_run(ctx, c, r->n);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, r->n);
	t_rec_fd_offset(o, "offset", fd);
	t_rec_mem(o, "bufs", buf, sizeof(buf));
	close(fd);
	close(wo);
}

int main(void)
{
	char what[160];

	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7 + 3);

	for (int t = 0; t < TGT_COUNT; t++) {
		static const int bad_ats[] = { -1, 0, 5, 15 };
		static const int checks[] = { -1, -2, 5 };

		for (unsigned b = 0; b < 4; b++)
			for (unsigned k = 0; k < 3; k++)
				for (unsigned ch = 0; ch < 3; ch++) {
					struct wcase w = { t, 16, bad_ats[b], (int)k, checks[ch], 8 };

					if (bad_ats[b] < 0 && k > 0)
						continue;
					snprintf(what, sizeof(what), "write %s bad_at=%d kind=%u check=%d",
						 tgt_name[t], w.bad_at, k, w.check_at);
					t_compare(what, writes, &w);
				}
		/* Larger writes: several pages, and more calls than a pipe
		 * takes in one atomic chunk. */
		{
			struct wcase w = { t, 40, 20, 1, -1, 1000 };

			snprintf(what, sizeof(what), "write %s 40x1000 efault@20", tgt_name[t]);
			t_compare(what, writes, &w);
			w.bad_kind = 2;
			snprintf(what, sizeof(what), "write %s 40x1000 half-efault@20", tgt_name[t]);
			t_compare(what, writes, &w);
		}
	}
	for (unsigned b = 0; b < 3; b++)
		for (unsigned k = 0; k < 2; k++)
			for (int ch = -2; ch < 1; ch++) {
				static const int bad_ats[] = { 0, 3, 9 };
				struct rcase r = { 12, bad_ats[b], (int)k, ch == 0 ? bad_ats[b] : ch, 1000,
						   20000 };

				snprintf(what, sizeof(what), "read file bad_at=%d kind=%u check=%d",
					 r.bad_at, k, r.check_at);
				t_compare(what, reads, &r);
			}
	return t_finish();
}
