/* SPDX-License-Identifier: MIT */
/*
 * Description: short reads.  A fused readv that gets less than asked
 * gives each read what it alone would have got, at end of a file; reads
 * from a pipe holding less than asked (then EOF when the writer is gone,
 * or EAGAIN when it is non-blocking and still open), from a stream socket,
 * and from a packet-mode pipe (each read takes one packet, and the reader
 * cannot see that mode) are never fused and must come out the same.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct rcase {
	int kind;       /* 0 pipe, writer closed; 1 pipe nonblocking, writer open;
			 * 2 stream socket, peer shut down; 3 file; 4 packet pipe */
	long have;      /* bytes available */
	unsigned n;
	long len;
	int check;
};

static char bufs[32][4096];

static void run(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct rcase *k = arg;
	struct mc_call c[32];
	char src[1 << 16];
	int fds[2] = { -1, -1 }, rfd, ret;

	for (long i = 0; i < (long)sizeof(src); i++)
		src[i] = (char)(i * 3);
	switch (k->kind) {
	case 0:
	case 1:
	case 4:
		if (pipe2(fds, k->kind == 4 ? O_DIRECT : 0) < 0)
			t_fail("pipe");
		if (k->kind == 4) {
			/* packets of 100 bytes */
			for (long w = 0; w < k->have; w += 100)
				if (write(fds[1], src + w, 100) != 100)
					t_fail("packet");
		} else if (write(fds[1], src, (size_t)k->have) != k->have) {
			t_fail("fill");
		}
		if (k->kind == 1)
			fcntl(fds[0], F_SETFL, O_NONBLOCK);
		else
			close(fds[1]), fds[1] = -1;
		rfd = fds[0];
		break;
	case 2:
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) < 0)
			t_fail("socketpair");
		if (write(fds[1], src, (size_t)k->have) != k->have)
			t_fail("fill");
		shutdown(fds[1], SHUT_WR);
		rfd = fds[0];
		break;
	default:
		t_write_file(t_path(dir, "in"), (size_t)k->have, 1);
		rfd = t_open(t_path(dir, "in"), O_RDONLY);
		break;
	}
	memset(bufs, 0xab, sizeof(bufs));
	for (unsigned i = 0; i < k->n; i++) {
		mc_prep_read(&c[i], rfd, bufs[i], (size_t)k->len);
		if (k->check == -2 || (int)i == k->check)
			mc_set_check(&c[i]);
	}
	ret = mc_run(ctx, c, k->n);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, k->n);
	t_rec_mem(o, "bufs", bufs, sizeof(bufs));
	if (k->kind == 3)
		t_rec_fd_offset(o, "offset", rfd);
	else
		t_rec_drain(o, "left", rfd);
	if (t_backend_of(ctx) == MC_BACKEND_FUSION && k->kind == 3) {
		struct mc_stats s = t_stats(ctx);

		T_ASSERT(s.fused >= 1, "nothing fused (kind %d)", k->kind);
	}
	close(rfd);
	if (fds[1] >= 0)
		close(fds[1]);
}

int main(void)
{
	char what[128];

	signal(SIGPIPE, SIG_IGN);
	for (int kind = 0; kind < 5; kind++) {
		static const long haves[] = { 100, 1000, 4095, 4096, 20000 };

		for (unsigned h = 0; h < 5; h++)
			for (int chk = -2; chk < 0; chk++) {
				struct rcase k = { kind, haves[h], 16, kind == 4 ? 64 : 1000, chk };

				/* a packet takes a pipe slot: at most 16 */
				if (kind == 4 && (haves[h] % 100 || haves[h] > 1600))
					continue;
				snprintf(what, sizeof(what), "read kind=%d have=%ld check=%d", kind, k.have,
					 chk);
				t_compare(what, run, &k);
			}
	}
	return t_finish();
}
