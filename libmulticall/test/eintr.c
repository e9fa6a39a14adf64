/* SPDX-License-Identifier: MIT */
/*
 * Description: a signal during a blocking call.  A read from an empty
 * pipe, a recvfrom on an empty datagram socket and a write to a full pipe
 * block; a signal arrives 50 ms later.  Without SA_RESTART the call
 * returns EINTR; with SA_RESTART it goes on and completes when a helper
 * thread supplies data or room 100 ms later.  Every backend must agree,
 * and no backend may block where direct would have returned.  (Reads
 * from pipes are never fused; recvfroms and writes to the pipe are.)
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t hits;

static void on_usr1(int sig)
{
	(void)sig;
	hits++;
}

struct helper {
	pthread_t target;
	pid_t tid;
	int restart;
	int fd;       /* where to supply data (or drain room from) */
	int drain;
	int sock;
	struct sockaddr_storage to;
	socklen_t tolen;
};

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Whether thread tid is asleep (blocked in the kernel). */
static int asleep(pid_t tid)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

static void *helper(void *arg)
{
	struct helper *h = arg;
	char big[65536];

	/* The signal must come while the call waits, however loaded the
	 * machine: wait until the thread sleeps, and a little more. */
	sleep_ms(20);
	for (int i = 0; i < 500 && !asleep(h->tid); i++)
		sleep_ms(10);
	sleep_ms(20);
	pthread_kill(h->target, SIGUSR1);
	sleep_ms(100);
	/* With SA_RESTART the call is still waiting: let it finish. */
	if (h->drain) {
		while (read(h->fd, big, sizeof(big)) == (ssize_t)sizeof(big))
			;
	} else if (h->sock) {
		for (int i = 0; i < 8; i++)
			sendto(h->fd, "datagram", 8, 0, (struct sockaddr *)&h->to, h->tolen);
	} else {
		if (write(h->fd, "late data", 9) != 9)
			return NULL;
		close(h->fd); /* the reads after the first see end of file */
	}
	return NULL;
}

struct ecase {
	int kind; /* 0 read pipe, 1 recvfrom udp, 2 write full pipe */
	int restart;
};

static void run(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct ecase *k = arg;
	struct sigaction sa;
	struct helper h;
	struct mc_call c[8];
	char rb[8][64];
	int p[2], ret, s1 = -1, s2 = -1;
	pthread_t th;
	static char fill[1 << 16];

	(void)dir;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = k->restart ? SA_RESTART : 0;
	sigaction(SIGUSR1, &sa, NULL);
	memset(&h, 0, sizeof(h));
	memset(rb, 0, sizeof(rb));
	h.target = pthread_self();
	h.tid = gettid();
	h.restart = k->restart;
	if (pipe(p) < 0)
		t_fail("pipe");
	if (k->kind == 1) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
		socklen_t al = sizeof(a);

		s1 = socket(AF_INET, SOCK_DGRAM, 0);
		s2 = socket(AF_INET, SOCK_DGRAM, 0);
		bind(s1, (struct sockaddr *)&a, sizeof(a));
		getsockname(s1, (struct sockaddr *)&a, &al);
		memcpy(&h.to, &a, sizeof(a));
		h.tolen = al;
		h.sock = 1;
		h.fd = s2;
		for (int i = 0; i < 8; i++)
			mc_prep_recvfrom(&c[i], s1, rb[i], sizeof(rb[i]), 0, NULL, NULL);
	} else if (k->kind == 0) {
		h.fd = p[1];
		for (int i = 0; i < 8; i++)
			mc_prep_read(&c[i], p[0], rb[i], sizeof(rb[i]));
	} else {
		/* Fill the pipe but for 20 bytes: the first write of 16 fits, the
		 * second does not. */
		fcntl(p[1], F_SETFL, O_NONBLOCK);
		while (write(p[1], fill, sizeof(fill)) > 0)
			;
		while (write(p[1], fill, 1) > 0)
			;
		fcntl(p[1], F_SETFL, 0);
		if (read(p[0], fill, 20) != 20)
			t_fail("make room");
		h.fd = p[0];
		h.drain = 1;
		for (int i = 0; i < 8; i++)
			mc_prep_write(&c[i], p[1], "0123456789abcdef", 16);
	}
	mc_set_check(&c[0]);
	mc_set_check(&c[1]);
	hits = 0;
	pthread_create(&th, NULL, helper, &h);
	ret = mc_run(ctx, c, 8);
	pthread_join(th, NULL);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, 8);
	t_rec(o, "signals", hits);
	if (k->kind != 2)
		t_rec_mem(o, "rb", rb, sizeof(rb));
	if (t_backend_of(ctx) == MC_BACKEND_FUSION && k->kind != 0) {
		struct mc_stats st = t_stats(ctx);

		T_ASSERT(st.fused + st.completions >= 1, "no fused call tried");
	}
	close(p[0]);
	if (k->kind != 0)
		close(p[1]);
	if (s1 >= 0)
		close(s1), close(s2);
}

int main(void)
{
	char what[64];

	for (int kind = 0; kind < 3; kind++)
		for (int restart = 0; restart < 2; restart++) {
			struct ecase k = { kind, restart };

			snprintf(what, sizeof(what), "%s %s",
				 kind == 0 ? "read pipe" : kind == 1 ? "recvfrom udp" : "write full pipe",
				 restart ? "SA_RESTART" : "EINTR");
			t_compare(what, run, &k);
		}
	return t_finish();
}
