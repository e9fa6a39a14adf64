/* SPDX-License-Identifier: MIT */
/* What the library owns in the program's process, apart from contexts:
 * fork detection (a ring or a device opened by the parent is not the
 * child's) and the library's own descriptors, kept out of the program's
 * way.  Used by ctx.c and the backends that open descriptors (uring.c,
 * kmod.c); calls none of them. */
#include "internal.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>

/* ---- fork detection ----
 * A page mapped with MADV_WIPEONFORK reads as zeros in a child, so a
 * context can tell, with one load, that its io_uring belongs to the parent.
 * Where the kernel lacks it, a pthread_atfork handler bumps the epoch. */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static volatile unsigned long *fork_alive; /* 1 in this process, 0 in a fresh child */
static unsigned long fork_epoch = 1;       /* inherited: bumped by each child */

static void fork_child(void)
{
	__atomic_add_fetch(&fork_epoch, 1, __ATOMIC_RELAXED);
}

static void fork_init(void)
{
	long p = __mc_sys6(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p >= 0 && __mc_sys6(SYS_madvise, p, 4096, MADV_WIPEONFORK, 0, 0, 0) == 0) {
		fork_alive = (volatile unsigned long *)p;
		*fork_alive = 1;
		return;
	}
	if (p >= 0)
		__mc_sys6(SYS_munmap, p, 4096, 0, 0, 0, 0);
	pthread_atfork(NULL, NULL, fork_child);
}

unsigned long __mc_fork_epoch(void)
{
	int saved = errno;

	pthread_once(&fork_once, fork_init);
	errno = saved;
	if (fork_alive && __mc_unlikely(*fork_alive == 0)) {
		/* First look in a child (also one made by a raw clone or vfork
		 * that skipped the atfork handlers). */
		__atomic_add_fetch(&fork_epoch, 1, __ATOMIC_RELAXED);
		*fork_alive = 1;
	}
	return __atomic_load_n(&fork_epoch, __ATOMIC_RELAXED);
}

/* The library's own descriptors (a ring, the module's device) move up, out
 * of the way of the low numbers a program gets, so that its own
 * descriptors keep the numbers they would have had (openat in a
 * multi-call returns what it returns without us).  Not above 992: a higher
 * one would grow the descriptor table.  Returns the descriptor to use. */
int __mc_fd_out_of_the_way(int fd)
{
	struct rlimit rl;
	long floor = 3, r;

	if (__mc_sys6(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&rl, 0, 0) == 0 && rl.rlim_cur > 64)
		floor = rl.rlim_cur - 32 < 992 ? (long)rl.rlim_cur - 32 : 992;
	r = __mc_sys6(SYS_fcntl, fd, F_DUPFD_CLOEXEC, floor, 0, 0, 0);
	if (r < 0)
		return fd;
	__mc_sys6(SYS_close, fd, 0, 0, 0, 0, 0);
	return (int)r;
}
