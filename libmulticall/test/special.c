/* SPDX-License-Identifier: MIT */
/*
 * Description: the specialized multi-calls of the seeds' clusters.
 * mc_copy (the copy loop), mc_read_sendto (the web server's read ->
 * sendto loop, readv + sendmmsg when fused) and mc_select_time
 * (mpeg_play's select -> gettimeofday, the time through the vDSO), each
 * compared with direct: results, iterations, files, datagrams, buffers.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 17];

struct ccase {
	long size, bs;
	unsigned long max;
};

static void copy(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct ccase *k = arg;
	unsigned long it = 0;
	long res[2] = { 0, 0 };
	int in, out, ret;

	t_write_file(t_path(dir, "in"), (size_t)k->size, 2);
	in = t_open(t_path(dir, "in"), O_RDONLY);
	out = t_open(t_path(dir, "out"), O_WRONLY | O_CREAT | O_TRUNC);
	memset(buf, 1, sizeof(buf));
	ret = mc_copy(ctx, in, out, buf, (size_t)k->bs, k->max, res, &it);
	t_rec(o, "ret", ret);
	t_rec(o, "iterations", (long long)it);
	t_rec(o, "res0", res[0]);
	t_rec(o, "res1", res[1]);
	t_rec_file(o, "out", t_path(dir, "out"));
	t_rec_fd_offset(o, "in", in);
	t_rec_mem(o, "buf", buf, sizeof(buf));
	close(in);
	close(out);
}

struct scase {
	long size, len;
	unsigned long max;
	int closed_sock;
};

static void read_sendto(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct scase *k = arg;
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	unsigned long it = 0;
	long res[2] = { 0, 0 };
	int in, tx, rx, ret, big = 16 << 20;
	char got[70000];
	ssize_t r;

	t_write_file(t_path(dir, "in"), (size_t)k->size, 6);
	in = t_open(t_path(dir, "in"), O_RDONLY);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	tx = socket(AF_INET, SOCK_DGRAM, 0);
	rx = socket(AF_INET, SOCK_DGRAM, 0);
	/* Room for every datagram of the largest case: past rmem_max where
	 * allowed (root: the tests' CI, the kmod guest), else as much as may be. */
	if (setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) != 0)
		setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	bind(rx, (struct sockaddr *)&a, sizeof(a));
	getsockname(rx, (struct sockaddr *)&a, &al);
	if (k->closed_sock)
		close(tx);
	memset(buf, 2, sizeof(buf));
	ret = mc_read_sendto(ctx, in, buf, (size_t)k->len, tx, 0, (struct sockaddr *)&a, al, k->max,
			     res, &it);
	t_rec(o, "ret", ret);
	t_rec(o, "iterations", (long long)it);
	t_rec(o, "res0", res[0]);
	t_rec(o, "res1", res[1]);
	t_rec_fd_offset(o, "in", in);
	t_rec_mem(o, "buf", buf, sizeof(buf));
	/* Loopback delivers through the backlog softirq, which a loaded machine
	 * (the kmod guest under TCG) may run in ksoftirqd after sendto has
	 * returned: wait up to 200 ms for each next datagram, not for none. */
	fcntl(rx, F_SETFL, O_NONBLOCK);
	for (unsigned i = 0;; i++) {
		struct pollfd pf = { .fd = rx, .events = POLLIN };
		char l[32];

		if (poll(&pf, 1, 200) <= 0 || (r = recv(rx, got, sizeof(got), 0)) < 0)
			break;
		snprintf(l, sizeof(l), "dgram[%u]", i);
		t_rec(o, l, (long long)t_hash(got, (size_t)r));
	}
	if (t_backend_of(ctx) == MC_BACKEND_FUSION && !k->closed_sock && k->size > 8 * k->len &&
	    k->len <= 65507 && k->max > 8) {
		struct mc_stats s = t_stats(ctx);

		T_ASSERT(s.fused > 8, "readv + sendmmsg not used (%llu fused)", s.fused);
	}
	close(in);
	if (!k->closed_sock)
		close(tx);
	close(rx);
}

static void select_time(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	int bad = *(int *)arg, p[2], ret;
	struct timeval tv = { 0, 0 }, now = { 0, 0 };
	fd_set r;
	long res[2] = { 0, 0 };

	(void)dir;
	if (pipe(p) < 0 || write(p[1], "x", 1) != 1)
		t_fail("pipe");
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	if (bad)
		FD_SET(1000, &r); /* not open: EBADF */
	ret = mc_select_time(ctx, bad ? 1001 : p[0] + 1, &r, NULL, NULL, &tv, &now, res);
	t_rec(o, "ret", ret);
	t_rec(o, "res0", res[0]);
	t_rec(o, "res1", res[1]);
	t_rec(o, "ready", FD_ISSET(p[0], &r));
	t_rec(o, "tv", tv.tv_sec * 1000000 + tv.tv_usec);
	if (!bad) {
		long d = (long)now.tv_sec - (long)time(NULL);

		T_ASSERT(d >= -5 && d <= 5, "%s: the time is off by %ld s",
			 mc_backend_name(t_backend_of(ctx)), d);
	}
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	char what[128];

	for (unsigned s = 0; s < 4; s++) {
		static const long sizes[] = { 0, 1000, 81920, 925 * 1024 };
		static const long bss[] = { 512, 4096 };

		for (unsigned b = 0; b < 2; b++) {
			struct ccase k = { sizes[s], bss[b], 1UL << 40 };

			snprintf(what, sizeof(what), "mc_copy size=%ld bs=%ld", k.size, k.bs);
			t_compare(what, copy, &k);
		}
	}
	{
		struct ccase k = { 81920, 4096, 5 };

		t_compare("mc_copy bound 5", copy, &k);
	}
	for (unsigned s = 0; s < 3; s++) {
		static const long sizes[] = { 0, 5000, 300000 };
		static const long lens[] = { 1000, 1024, 8192 };

		for (unsigned l = 0; l < 3; l++) {
			struct scase k = { sizes[s], lens[l], 1000000, 0 };

			snprintf(what, sizeof(what), "mc_read_sendto size=%ld len=%ld", k.size, k.len);
			t_compare(what, read_sendto, &k);
		}
	}
	{
		struct scase k = { 300000, 1000, 77, 0 };

		t_compare("mc_read_sendto bound 77", read_sendto, &k);
		k.len = 66000;
		t_compare("mc_read_sendto EMSGSIZE", read_sendto, &k);
		k.len = 1000;
		k.closed_sock = 1;
		t_compare("mc_read_sendto closed socket", read_sendto, &k);
	}
	for (int bad = 0; bad < 2; bad++) {
		snprintf(what, sizeof(what), "mc_select_time bad=%d", bad);
		t_compare(what, select_time, &bad);
	}
	return t_finish();
}
