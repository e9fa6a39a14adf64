/* SPDX-License-Identifier: MIT */
/*
 * Description: sendto and recvfrom runs on datagram sockets, which fusion
 * turns into sendmmsg and recvmmsg.  Each datagram must stay one
 * datagram, in order, with the same results: fewer datagrams waiting than
 * calls (non-blocking: EAGAIN), an oversized datagram (EMSGSIZE) and a bad
 * buffer (EFAULT) in the middle of a run, checked or not; also over
 * AF_UNIX datagram sockets.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct mcase {
	int unix_dgram;
	unsigned n;
	int bad_at;   /* -1 none */
	int bad_kind; /* 0 EMSGSIZE, 1 EFAULT buffer, 2 EFAULT address */
	int check;
	unsigned queued; /* datagrams waiting for the recvfrom run */
};

static char payload[70000];

static void pair(int unix_dgram, int *tx, int *rx, struct sockaddr_storage *to, socklen_t *tolen)
{
	if (unix_dgram) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0)
			t_fail("socketpair");
		*tx = sv[0];
		*rx = sv[1];
		*tolen = 0;
	} else {
		struct sockaddr_in a = { .sin_family = AF_INET };
		socklen_t al = sizeof(a);
		int big = 8 << 20;

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*tx = socket(AF_INET, SOCK_DGRAM, 0);
		*rx = socket(AF_INET, SOCK_DGRAM, 0);
		setsockopt(*rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
		bind(*rx, (struct sockaddr *)&a, sizeof(a));
		getsockname(*rx, (struct sockaddr *)&a, &al);
		memcpy(to, &a, sizeof(a));
		*tolen = al;
	}
}

static void sends(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct mcase *k = arg;
	struct sockaddr_storage to;
	socklen_t tolen;
	struct mc_call c[32];
	char got[2048];
	int tx, rx, ret;
	ssize_t r;

	(void)dir;
	pair(k->unix_dgram, &tx, &rx, &to, &tolen);
	for (unsigned i = 0; i < k->n; i++) {
		mc_prep_sendto(&c[i], tx, payload + i * 37, 100 + i, 0,
			       tolen ? (struct sockaddr *)&to : NULL, tolen);
		if ((int)i == k->bad_at) {
			if (k->bad_kind == 0)
				c[i].args[2] = 66000;
			else if (k->bad_kind == 1)
				c[i].args[1] = (long)t_bad_ptr();
			else if (tolen)
				c[i].args[4] = (long)t_bad_ptr();
		}
		if (k->check == -2 || (int)i == k->check)
			mc_set_check(&c[i]);
	}
	ret = mc_run(ctx, c, k->n);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, k->n);
	/* every datagram, in order, each its own */
	if (tolen)
		t_udp_settle(tx, (struct sockaddr *)&to, tolen);
	fcntl(rx, F_SETFL, O_NONBLOCK);
	for (unsigned i = 0; (r = recv(rx, got, sizeof(got), 0)) >= 0; i++) {
		char l[32];

		snprintf(l, sizeof(l), "dgram[%u]", i);
		t_rec(o, l, (long long)t_hash(got, (size_t)r));
	}
	if (t_backend_of(ctx) == MC_BACKEND_FUSION && k->bad_at != 0) {
		struct mc_stats s = t_stats(ctx);

		T_ASSERT(s.fused + s.completions >= 1, "sendmmsg not used");
	}
	close(tx);
	close(rx);
}

static void recvs(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct mcase *k = arg;
	struct sockaddr_storage to;
	socklen_t tolen;
	struct mc_call c[32];
	static char bufs[32][512];
	int tx, rx, ret;

	(void)dir;
	pair(k->unix_dgram, &tx, &rx, &to, &tolen);
	for (unsigned i = 0; i < k->queued; i++)
		sendto(tx, payload + i, 50 + i * 20, 0, tolen ? (struct sockaddr *)&to : NULL, tolen);
	if (tolen)
		t_udp_settle(tx, (struct sockaddr *)&to, tolen);
	memset(bufs, 0, sizeof(bufs));
	for (unsigned i = 0; i < k->n; i++) {
		/* MSG_TRUNC: the result is the datagram's size, also when it is
		 * larger than the buffer */
		mc_prep_recvfrom(&c[i], rx, bufs[i], i == 3 ? 60 : 512, MSG_DONTWAIT | MSG_TRUNC, NULL,
				 NULL);
		if ((int)i == k->bad_at)
			c[i].args[1] = (long)t_bad_ptr();
		if (k->check == -2 || (int)i == k->check)
			mc_set_check(&c[i]);
	}
	ret = mc_run(ctx, c, k->n);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, k->n);
	t_rec_mem(o, "bufs", bufs, sizeof(bufs));
	if (t_backend_of(ctx) == MC_BACKEND_FUSION && k->queued > 1 && k->bad_at != 0) {
		struct mc_stats s = t_stats(ctx);

		T_ASSERT(s.fused >= 2, "recvmmsg not used");
	}
	close(tx);
	close(rx);
}

int main(void)
{
	char what[128];

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (char)(i * 11);
	for (int u = 0; u < 2; u++)
		for (int bad = -1; bad < 3; bad++)
			for (int chk = -2; chk < 0; chk++) {
				struct mcase k = { u, 16, bad < 0 ? -1 : 7, bad < 0 ? 0 : bad, chk, 0 };

				if (u && bad == 2)
					continue; /* no address on a connected pair */
				snprintf(what, sizeof(what), "sendto %s bad=%d check=%d", u ? "unix" : "udp",
					 bad, chk);
				t_compare(what, sends, &k);
			}
	for (int u = 0; u < 2; u++)
		for (unsigned q = 0; q <= 20; q += 5)
			for (int bad = -1; bad <= 2; bad += 3) {
				struct mcase k = { u, 16, bad, 1, -1, q };

				snprintf(what, sizeof(what), "recvfrom %s queued=%u bad=%d", u ? "unix" : "udp",
					 q, bad);
				t_compare(what, recvs, &k);
			}
	return t_finish();
}
