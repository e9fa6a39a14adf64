/* SPDX-License-Identifier: MIT */
/*
 * Description: signals and a multi-call in the module.  A pending signal
 * stops the program between entries and the run goes on after the handler
 * without running anything twice; an inner call cut by a signal is
 * restarted when the handler asks for it (SA_RESTART), fails with EINTR
 * when it does not, and its -ERESTART* code never reaches user space; a
 * sleep cut by a handler fails with EINTR as it does directly.  Every
 * scenario runs on direct and kmod and must leave the same state.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t handled;
static int feed = -1; /* the handler writes a byte here, if set */

static void on_alarm(int sig)
{
	(void)sig;
	handled++;
	if (feed >= 0) {
		int saved = errno;

		if (write(feed, "s", 1) < 0)
			abort();
		errno = saved;
	}
}

static void arm(int restart, long usec, long interval)
{
	struct sigaction sa;
	struct itimerval it = { { 0, interval }, { 0, usec } };

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigaction(SIGALRM, &sa, NULL);
	handled = 0;
	setitimer(ITIMER_REAL, &it, NULL);
}

static void disarm(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };

	setitimer(ITIMER_REAL, &it, NULL);
	signal(SIGALRM, SIG_IGN);
}

/* write(A,"a"); read(B) blocks until the handler feeds B; write(A,"b").
 * arg: 0 no SA_RESTART, 1 SA_RESTART, 2 no SA_RESTART and the read checked. */
static void blocked_read(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	int mode = (int)(long)arg, a[2], b[2];
	struct mc_call c[3];
	char buf[4];
	int r;

	(void)dir;
	if (pipe2(a, O_NONBLOCK) < 0 || pipe(b) < 0)
		return;
	memset(c, 0, sizeof(c));
	mc_prep_write(&c[0], a[1], "a", 1);
	mc_prep_read(&c[1], b[0], buf, 1);
	if (mode == 2)
		mc_set_check(&c[1]);
	mc_prep_write(&c[2], a[1], "b", 1);
	feed = mode == 1 ? b[1] : -1;
	arm(mode == 1, 200000, 0);
	r = mc_run(ctx, c, 3);
	disarm();
	feed = -1;
	t_rec(o, "ret", r);
	t_rec_calls(o, "calls", c, 3);
	t_rec(o, "handled", handled);
	t_rec_drain(o, "a", a[0]);
	close(a[0]), close(a[1]), close(b[0]), close(b[1]);
}

/* A looped multi-call of 1-byte writes to a file, with a 1 ms timer
 * firing all along: every iteration exactly once. */
static void interrupted_loop(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const unsigned long N = 20000;
	struct mc_loop loop = { 0, MC_WHILE_GT, 0, N };
	struct mc_call c[2];
	unsigned long it = 0;
	struct stat st;
	int fd = t_open(t_path(dir, "out"), O_WRONLY | O_CREAT | O_TRUNC), r;

	(void)arg;
	memset(c, 0, sizeof(c));
	mc_prep_write(&c[0], fd, "x", 1);
	mc_prep_syscall(&c[1], SYS_getppid, 0, 0, 0, 0, 0, 0);
	arm(1, 1000, 1000);
	r = mc_run_loop(ctx, c, 2, &loop, &it);
	disarm();
	fstat(fd, &st);
	t_rec(o, "ret", r);
	t_rec(o, "iterations", (long long)it);
	t_rec(o, "size", st.st_size);
	t_rec(o, "signals arrived", handled > 0);
	close(fd);
}

/* nanosleep cut by a handler: EINTR (its restart block is never used for
 * a handled signal), the calls after it run. */
static void cut_sleep(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	struct timespec ts = { 5, 0 };
	struct mc_call c[2];
	int p[2], r;

	(void)dir, (void)arg;
	if (pipe2(p, O_NONBLOCK) < 0)
		return;
	memset(c, 0, sizeof(c));
	mc_prep_syscall(&c[0], SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
	mc_prep_write(&c[1], p[1], "z", 1);
	arm(0, 100000, 0);
	r = mc_run(ctx, c, 2);
	disarm();
	t_rec(o, "ret", r);
	t_rec_calls(o, "calls", c, 2);
	t_rec(o, "handled", handled);
	t_rec_drain(o, "p", p[0]);
	close(p[0]), close(p[1]);
}

int main(void)
{
	static const char *what[] = { "read cut, no SA_RESTART", "read cut, SA_RESTART",
				      "checked read cut, no SA_RESTART" };

	for (long m = 0; m < 3; m++)
		t_compare(what[m], blocked_read, (void *)m);
	t_compare("1-byte writes under a 1 ms timer", interrupted_loop, NULL);
	t_compare("nanosleep cut by a handler", cut_sleep, NULL);
	return t_finish();
}
