/* SPDX-License-Identifier: MIT */
/*
 * Description: random and malformed programs thrown at MC_IOC_RUN for a
 * bounded time (MC_FUZZ_SECONDS, 20 by default; a fixed seed, MC_FUZZ_SEED
 * to change it).  Every program is also given to the library's direct
 * backend: both refuse it with the same error, or both run it and leave
 * the same results and the same bytes in the same pipes.  The calls come
 * from a set that cannot harm the guest (reads and writes on pipes and bad
 * descriptors, getpid, lseek, close of descriptors that do not exist, a
 * zero sleep) plus calls the module must refuse and numbers that are no
 * system call; arguments, flags, references, loop conditions and pointers
 * are random, often invalid.  The guest's harness then checks the kernel
 * log (no oops, WARN or BUG) and that the module unloads.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../uapi/multicall_kmod.h"

static unsigned long long state;

static unsigned rnd(unsigned n)
{
	state = state * 6364136223846793005ULL + 1442695040888963407ULL;
	return n ? (unsigned)((state >> 33) % n) : 0;
}

static int pipes[2][2];
static char buf[2][64];

static long pick_fd(void)
{
	static const long odd[] = { -1, 1000, 0x7fffffff, -9 };

	switch (rnd(4)) {
	case 0:
		return pipes[rnd(2)][0];
	case 1:
		return pipes[rnd(2)][1];
	case 2:
		return odd[rnd(4)];
	default:
		return 100 + rnd(8); /* not open: stdio stays out of it */
	}
}

static long pick_ptr(void)
{
	switch (rnd(5)) {
	case 0:
		return 0;
	case 1:
		return (long)t_bad_ptr();
	case 2:
		return (long)0xffff888000000000ULL; /* a kernel address */
	default:
		return (long)buf[rnd(2)];
	}
}

static void random_call(struct mc_call *c, unsigned i, unsigned n)
{
	static const long refused[] = { SYS_execve, SYS_fork, SYS_clone, SYS_exit_group, SYS_rt_sigreturn,
					 SYS_ptrace, SYS_seccomp, SYS_vfork };
	unsigned k = rnd(12);

	memset(c, 0, sizeof(*c));
	switch (k) {
	case 0:
	case 1:
		mc_prep_write(c, pick_fd(), (void *)pick_ptr(), rnd(40));
		break;
	case 2:
	case 3:
		mc_prep_syscall(c, SYS_read, pick_fd(), pick_ptr(), rnd(40), 0, 0, 0);
		c->args[0] = pipes[rnd(2)][0]; /* reads only from the non-blocking pipes */
		break;
	case 4:
		mc_prep_syscall(c, SYS_getpid, 0, 0, 0, 0, 0, 0);
		break;
	case 5:
		mc_prep_lseek(c, pick_fd(), rnd(100) - 50, rnd(5));
		break;
	case 6:
		mc_prep_close(c, 1000 + rnd(50));
		break;
	case 7:
		mc_prep_syscall(c, refused[rnd(8)], 0, 0, 0, 0, 0, 0);
		break;
	case 8:
		mc_prep_syscall(c, (long)rnd(3) - 2 + (rnd(2) ? 600 : 0), 1, 2, 3, 4, 5, 6); /* no such call */
		break;
	case 9:
		mc_prep_syscall(c, SYS_getppid, 0, 0, 0, 0, 0, 0);
		break;
	default: {
		static struct timespec zero;

		mc_prep_syscall(c, SYS_nanosleep, rnd(4) ? (long)&zero : pick_ptr(), 0, 0, 0, 0, 0);
		break;
	}
	}
	if (!rnd(3))
		c->flags |= MC_CHECK;
	if (!rnd(20))
		c->flags |= rnd(2) ? MC_PREDICT : 1u << (2 + rnd(30));
	if (!rnd(4) && c->nr != SYS_close) {
		/* A reference on a count or an offset (a descriptor taken from a
		 * result could close or write the test's own): mostly earlier
		 * calls; sometimes itself, later ones or beyond. */
		unsigned j = c->nr == SYS_write || c->nr == SYS_read ? 2 : c->nr == SYS_lseek ? 1 : rnd(6);

		c->ref[j] = (unsigned char)(rnd(4) ? (i ? rnd(i) + 1 : 0) : rnd(n + 3));
	}
}

static void drain(int fd, char *out, size_t *len)
{
	ssize_t r;

	*len = 0;
	while ((r = read(fd, out + *len, 4096)) > 0)
		*len += (size_t)r;
}

int main(void)
{
	struct mc_ctx *direct = t_ctx(MC_BACKEND_DIRECT), *kmod = t_ctx(MC_BACKEND_KMOD);
	const char *s = getenv("MC_FUZZ_SECONDS"), *seed = getenv("MC_FUZZ_SEED");
	long seconds = s ? atol(s) : 20, runs = 0, refusals = 0;
	static struct mc_call a[64], b[64];
	static char out_a[2][1 << 16], out_b[2][1 << 16];
	time_t end = time(NULL) + seconds;
	int dev = open("/dev/multicall", O_RDWR);

	if (!direct || !kmod || dev < 0)
		return t_finish();
	state = seed ? strtoull(seed, NULL, 0) : 0x5ca1ab1e;
	for (int k = 0; k < 2; k++)
		if (pipe2(pipes[k], O_NONBLOCK) < 0)
			return T_EXIT_FAIL;
	while (time(NULL) < end && t_failures == 0) {
		unsigned n = rnd(10) ? rnd(8) + 1 : rnd(4) ? rnd(64) + 1 : 0;
		int loop = !rnd(3), ra, rb;
		struct mc_loop l = { rnd(n + 2), rnd(8), (long)rnd(3) - 1, rnd(5) ? rnd(4) + 1 : rnd(2) * 1000 };
		unsigned long ia = 0, ib = 0;
		size_t la[2], lb[2];

		for (unsigned i = 0; i < n; i++)
			random_call(&a[i], i, n);
		if (!rnd(50)) {
			/* Malformed headers straight at the module: refused, no crash. */
			struct mc_kmod_run h = { rnd(3), rnd(4) | (rnd(2) << 31), rnd(2) ? pick_ptr() : (long)a,
						 rnd(2) ? n : rnd(0xffffffffu), rnd(3), rnd(3),
						 { rnd(3), rnd(8), 0, rnd(3) } };
			ioctl(dev, MC_IOC_RUN, &h);
			for (int k = 0; k < 2; k++)
				drain(pipes[k][0], out_a[k], &la[k]);
			continue;
		}
		memcpy(b, a, sizeof(a));
		ra = loop ? mc_run_loop(direct, a, n, &l, &ia) : mc_run(direct, a, n);
		for (int k = 0; k < 2; k++)
			drain(pipes[k][0], out_a[k], &la[k]);
		rb = loop ? mc_run_loop(kmod, b, n, &l, &ib) : mc_run(kmod, b, n);
		for (int k = 0; k < 2; k++)
			drain(pipes[k][0], out_b[k], &lb[k]);
		runs++;
		refusals += ra < 0;
		T_ASSERT(ra == rb, "run %ld: direct %d, kmod %d", runs, ra, rb);
		T_ASSERT(ia == ib, "run %ld: iterations %lu and %lu", runs, ia, ib);
		for (unsigned i = 0; i < n && ra >= 0; i++)
			if (a[i].nr != SYS_getpid && a[i].nr != SYS_getppid)
				T_ASSERT(a[i].result == b[i].result, "run %ld call %u (nr %ld): %ld and %ld", runs, i,
					 a[i].nr, a[i].result, b[i].result);
		for (int k = 0; k < 2; k++)
			T_ASSERT(la[k] == lb[k] && !memcmp(out_a[k], out_b[k], la[k]),
				 "run %ld: pipe %d got %zu and %zu bytes", runs, k, la[k], lb[k]);
	}
	printf("note: fuzz: %ld programs (%ld refused) in %ld s, seed %#llx\n", runs, refusals, seconds,
	       seed ? strtoull(seed, NULL, 0) : 0x5ca1ab1eULL);
	mc_ctx_free(direct);
	mc_ctx_free(kmod);
	return t_finish();
}
