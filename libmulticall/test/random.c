/* SPDX-License-Identifier: MIT */
/*
 * Description: random multi-calls, compared with direct.  Each seed
 * builds the same world (files, one registered, one write-only, one
 * O_APPEND, a pipe, a stream socket pair, a UDP pair, /dev/null, a closed
 * descriptor, all non-blocking so nothing waits) and the same sequence of
 * runs of writes, reads, preads, pwrites, lseeks, sendtos, recvfroms and
 * other calls, with random lengths (some zero, some bad pointers), random
 * MC_CHECK and MC_PREDICT flags and references from writes to earlier
 * reads.  Every
 * backend must leave what direct leaves: results, stop index, files,
 * offsets, bytes in pipes and sockets, datagrams, buffers.
 *   random [SEEDS [FIRST]]
 */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

enum { F1, F2, FW, FA, PW, PR, SA, SB, UT, UR, DN, XX, NFD };

static char src[1 << 16];
static char bufs[8][8192];

static unsigned long rng;
/* MC_TEST_ASYNC_LOOPBACK (the kernel module's TCG guest): loopback
 * datagrams may arrive after the next call, so programs send none. */
static int async_loopback;

static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((rng >> 33) % n);
}

static void run(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	unsigned long seed = *(unsigned long *)arg;
	struct mc_call c[MC_MAX_CALLS];
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	struct stat st;
	int fd[NFD], p[2], s[2], big = 8 << 20, ret;
	unsigned n = 0, last_read = ~0u, target;
	char l[32];

	rng = seed;
	t_write_file(t_path(dir, "f1"), 20000, (unsigned)seed);
	t_write_file(t_path(dir, "f2"), 3000, (unsigned)seed + 1);
	fd[F1] = t_open(t_path(dir, "f1"), O_RDWR);
	fd[F2] = t_open(t_path(dir, "f2"), O_RDWR);
	fd[FW] = t_open(t_path(dir, "f1"), O_WRONLY);
	fd[FA] = t_open(t_path(dir, "f2"), O_RDWR | O_APPEND);
	if (pipe2(p, O_NONBLOCK) < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s) < 0)
		t_fail("pipe/socketpair");
	fd[PW] = p[1];
	fd[PR] = p[0];
	fd[SA] = s[0];
	fd[SB] = s[1];
	fd[UT] = socket(AF_INET, SOCK_DGRAM, 0);
	fd[UR] = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	setsockopt(fd[UR], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind(fd[UR], (struct sockaddr *)&a, sizeof(a));
	getsockname(fd[UR], (struct sockaddr *)&a, &al);
	fd[DN] = t_open_null(dir);
	fd[XX] = dup(0);
	close(fd[XX]);
	if (rnd(2))
		mc_fd_register(ctx, fd[F2]);
	if (rnd(2))
		mc_fd_register(ctx, fd[PW]);
	/* a little data waiting in the pipe, the socket and the UDP queue */
	if (write(fd[PW], src, rnd(3000)) < 0 || write(fd[SB], src + 7, rnd(3000)) < 0)
		t_fail("prefill");
	for (unsigned i = rnd(4); i > 0; i--)
		sendto(fd[UT], src + i, 10 + i, 0, (struct sockaddr *)&a, al);
	t_udp_settle(fd[UT], (struct sockaddr *)&a, al);
	memset(bufs, 0x5c, sizeof(bufs));

	target = 8 + rnd(120);
	while (n < target) {
		unsigned kind = rnd(10), run = 1 + rnd(rnd(3) ? 16 : 3), f;
		static const int wfds[] = { F1, F2, FW, FA, PW, SA, DN, XX, PR };
		static const int rfds[] = { F1, F2, FW, FA, PR, SB, XX, PW };

		if (kind <= 2)
			f = (unsigned)wfds[rnd(9)];
		else if (kind <= 4)
			f = (unsigned)rfds[rnd(8)];
		else
			f = rnd(2) ? F1 : F2;
		for (unsigned r = 0; r < run && n < target; r++, n++) {
			struct mc_call *cl = &c[n];
			unsigned len = rnd(5) == 0 ? rnd(3) : rnd(rnd(2) ? 64 : 3000);
			char *b = bufs[rnd(8)];
			long off = (long)rnd(25000);

			switch (kind) {
			case 0:
			case 1:
			case 2:
				mc_prep_write(cl, fd[f], src + rnd(60000), len);
				if (rnd(12) == 0)
					cl->args[1] = (long)t_bad_ptr();
				if (last_read != ~0u && rnd(4) == 0) {
					cl->args[1] = c[last_read].args[1];
					mc_set_ref(cl, 2, last_read);
				}
				break;
			case 3:
			case 4:
				mc_prep_read(cl, fd[f], b, len);
				if (rnd(12) == 0)
					cl->args[1] = (long)t_bad_ptr();
				last_read = n;
				break;
			case 5:
				mc_prep_pread(cl, fd[f], b, len, off);
				if (r > 0 && rnd(3))
					cl->args[3] = c[n - 1].args[3] + c[n - 1].args[2];
				break;
			case 6:
				mc_prep_pwrite(cl, fd[f], src + rnd(60000), len, off);
				if (r > 0 && rnd(3))
					cl->args[3] = c[n - 1].args[3] + c[n - 1].args[2];
				break;
			case 7:
				if (rnd(2)) {
					mc_prep_lseek(cl, fd[f], off, SEEK_SET);
				} else {
					mc_prep_read(cl, fd[f], b, len);
					last_read = n;
				}
				break;
			case 8:
				if (async_loopback) {
					/* Whether a datagram sent a moment ago is there
					 * depends on when ksoftirqd runs: not on the
					 * program, on direct neither. */
					rnd(2);
					mc_prep_syscall(cl, SYS_getppid, 0, 0, 0, 0, 0, 0);
				} else if (rnd(2))
					mc_prep_sendto(cl, fd[UT], src + rnd(60000), len, 0,
						       (struct sockaddr *)&a, al);
				else
					mc_prep_recvfrom(cl, fd[UR], b, len, MSG_DONTWAIT, NULL, NULL);
				break;
			default:
				switch (rnd(4)) {
				case 0:
					mc_prep_syscall(cl, SYS_getppid, 0, 0, 0, 0, 0, 0);
					break;
				case 1:
					mc_prep_syscall(cl, SYS_fstat, fd[rnd(NFD)], (long)&st, 0, 0, 0, 0);
					break;
				case 2:
					mc_prep_lseek(cl, fd[rnd(NFD)], (long)rnd(5000) - 100, rnd(3));
					break;
				default:
					mc_prep_fsync(cl, fd[rnd(4)]);
					break;
				}
				break;
			}
			if (rnd(5) == 0)
				mc_set_check(cl);
			if ((cl->nr == SYS_read || cl->nr == SYS_write || cl->nr == SYS_pread64 ||
			     cl->nr == SYS_pwrite64) && rnd(4) == 0)
				mc_set_predict(cl);
		}
	}
	ret = mc_run(ctx, c, n);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, n);
	t_rec_mem(o, "bufs", bufs, sizeof(bufs));
	for (unsigned i = 0; i < 4; i++) {
		snprintf(l, sizeof(l), "offset[%u]", i);
		t_rec_fd_offset(o, l, fd[i]);
	}
	t_rec_file(o, "f1", t_path(dir, "f1"));
	t_rec_file(o, "f2", t_path(dir, "f2"));
	t_rec_drain(o, "pipe", fd[PR]);
	t_rec_drain(o, "sock", fd[SB]);
	t_rec_drain(o, "sockA", fd[SA]);
	t_udp_settle(fd[UT], (struct sockaddr *)&a, al);
	t_rec_drain(o, "udp", fd[UR]);
	for (unsigned i = 0; i < NFD; i++)
		if (i != XX)
			close(fd[i]);
}

int main(int argc, char **argv)
{
	unsigned long seeds = argc > 1 ? strtoul(argv[1], NULL, 0) : 300;
	unsigned long first = argc > 2 ? strtoul(argv[2], NULL, 0) : 1;
	char what[64];

	async_loopback = getenv("MC_TEST_ASYNC_LOOPBACK") != NULL;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (char)(i * 131 + (i >> 8));
	for (unsigned long sd = first; sd < first + seeds; sd++) {
		snprintf(what, sizeof(what), "random seed %lu", sd);
		t_compare(what, run, &sd);
		if (t_failures > 20)
			break;
	}
	return t_finish();
}
