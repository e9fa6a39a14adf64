/* SPDX-License-Identifier: MIT */
/*
 * Description: writes to a pipe with no reader and to a stream socket
 * whose peer is gone.  Each write fails with EPIPE and raises SIGPIPE; a
 * fused write must raise it exactly as often as the writes would, and give
 * the same results.  Run with SIGPIPE ignored and with a handler that
 * counts, for checked and unchecked runs.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t pipes;

static void on_pipe(int sig)
{
	(void)sig;
	pipes++;
}

struct pcase {
	int sock;   /* 0: pipe, 1: AF_UNIX stream, 2: TCP over loopback */
	int check;  /* -1 none, -2 all, else index */
	int good;   /* writes that succeed before the reader goes */
};

static void run(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct pcase *p = arg;
	struct mc_call c[16];
	int fds[2], ret;

	(void)dir;
	if (p->sock == 0) {
		if (pipe(fds) < 0)
			t_fail("pipe");
	} else if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) < 0) {
		t_fail("socketpair");
	}
	close(fds[0]);
	for (unsigned i = 0; i < 16; i++) {
		mc_prep_write(&c[i], fds[1], "01234567", 8);
		if (p->check == -2 || (int)i == p->check)
			mc_set_check(&c[i]);
	}
	pipes = 0;
	ret = mc_run(ctx, c, 16);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, 16);
	t_rec(o, "sigpipe", pipes);
	close(fds[1]);
}

int main(void)
{
	struct sigaction sa;
	char what[128];

	for (int handler = 0; handler < 2; handler++) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = handler ? on_pipe : SIG_IGN;
		sigaction(SIGPIPE, &sa, NULL);
		for (int sock = 0; sock < 2; sock++)
			for (int chk = -2; chk <= 5; chk += 7) {
				struct pcase p = { sock, chk == 5 ? 5 : chk, 0 };

				for (int k = 0; k < 3; k++) {
					p.check = k == 0 ? -1 : k == 1 ? -2 : 5;
					snprintf(what, sizeof(what), "%s %s check=%d",
						 sock ? "socket" : "pipe", handler ? "counted" : "ignored",
						 p.check);
					t_compare(what, run, &p);
				}
			}
	}
	return t_finish();
}
