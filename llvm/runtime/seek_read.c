/* SPDX-License-Identifier: MIT */
/*
 * What the compiler plugin puts in place of `lseek(fd, pos, SEEK_SET)` →
 * `read(fd, buf, count)` on a descriptor global of one translation unit
 * (llvm/lib/SeekRead.cpp): one pread, one crossing instead of two.
 *
 * A pread that transfers its whole count from a regular file or a block
 * device is the pair: data exists at pos, so the lseek would have returned
 * pos (a regular file's position can be set anywhere below its
 * filesystem's maximum size, which the data lies below; a block device's
 * anywhere up to its size), and the read at pos returns the same bytes.
 * The position the pair would have left, pos + count, is kept in *pending;
 * __syscluster_position_sync sets it (one lseek) before anything else is
 * given the descriptor — the plugin calls it there — so every other use
 * sees the position the program would have left.  Anything else runs the
 * two calls as written (after setting a pending position, and after a
 * pread that had no effect): a short or empty transfer (the end of the
 * file, or of a device, where lseek may refuse the offset that pread
 * accepts), a failure (whose errno lseek, not read, may have to give), a
 * descriptor of another kind (a pipe, a character device whose lseek is
 * its own), and every call under MULTICALL_BACKEND=direct (syscluster
 * verify injects faults into the K-th lseek and read the source issues).
 * *kind caches the descriptor's kind (0 unknown, 1 pread, 2 as written)
 * and, above it, the fork generation of the last store into the global:
 * the plugin's code makes it unknown at every store and "as written" at
 * every close (a number the global still holds after a close may be
 * reused by another open it did not see), and starts it "as written" when
 * the global's initial value is a descriptor (0: standard input, not
 * opened here).
 *
 * Nothing else may see a pending position (docs/COMPILER.md):
 * - a pread is made only on a descriptor with FD_CLOEXEC (an fcntl, once
 *   per store): exec, from any code of the process (posix_spawn, system,
 *   vfork + exec, which run no fork handlers), would hand the new program
 *   the open file with the position unset.  Without it the pair runs as
 *   written: no gain, nothing different;
 * - before fork, a pthread_atfork handler sets every pending position;
 *   after it (in the parent and the child) the open file is shared, so a
 *   descriptor stored before the fork runs its pairs as written from then
 *   on (the generation in *kind no longer matches);
 * - at exit (atexit), every pending position is set.
 * The handlers are registered once, when a position is first kept
 * pending (if either registration fails, nothing is ever kept pending;
 * while another thread registers them, the pair runs as written); the
 * globals kept are at most MAX_PENDING (the pair runs as written beyond).
 * No lock is taken: a pair may run in a signal handler.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h> /* pthread_atfork */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "direct.h"

#define KIND_UNKNOWN 0
#define KIND_PREAD 1
#define KIND_AS_WRITTEN 2
#define KIND_MASK 3
/* __syscluster_position_sync's how */
#define SYNC_USE 0
#define SYNC_STORE 1
#define SYNC_CLOSE 2
#define MAX_PENDING 64

long __syscluster_seek_read(int fd, long pos, void *buf, unsigned long count, int seek_checked_full,
			    long *seek_result, int *kind, long *pending);
void __syscluster_position_sync(int fd, int how, int *kind, long *pending);

/* The pending positions a fork or the exit must set, with the descriptor
 * each is for (written before the position is kept pending).  Added to
 * without a lock (a pair may run in a signal handler): a slot is reserved,
 * its descriptor written, then its pending pointer published; a slot not
 * yet published is NULL and skipped. */
static long *kept_pending[MAX_PENDING];
static int kept_fd[MAX_PENDING];
static int nreserved;
static unsigned generation; /* forks so far, in this process and its parents */
#define GENERATION_BITS 0x1fffffffu
/* The fork and exit handlers: 0 not registered, 1 being registered, 2 in
 * place, 3 failed (then nothing is ever kept pending). */
static int handlers;

static void set_position(int fd, long *pending)
{
	long p = __atomic_exchange_n(pending, -1L, __ATOMIC_RELAXED);

	if (p >= 0) {
		int saved = errno;

		lseek(fd, p, SEEK_SET);
		errno = saved;
	}
}

static void set_all(void)
{
	int n = __atomic_load_n(&nreserved, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n && i < MAX_PENDING; i++) {
		long *pending = __atomic_load_n(&kept_pending[i], __ATOMIC_ACQUIRE);

		if (pending)
			set_position(kept_fd[i], pending);
	}
}

static void forked(void)
{
	__atomic_add_fetch(&generation, 1, __ATOMIC_RELAXED);
}

/* Whether the handlers are in place: registered here the first time. */
static int handlers_in_place(void)
{
	int state = __atomic_load_n(&handlers, __ATOMIC_ACQUIRE), expected = 0;

	if (state == 0 && __atomic_compare_exchange_n(&handlers, &expected, 1, 0, __ATOMIC_ACQ_REL,
						      __ATOMIC_ACQUIRE)) {
		int saved = errno;

		state = pthread_atfork(set_all, forked, forked) == 0 && atexit(set_all) == 0 ? 2 : 3;
		errno = saved;
		__atomic_store_n(&handlers, state, __ATOMIC_RELEASE);
	} else if (state == 0) {
		state = expected;
	}
	return state == 2;
}

/* Whether the position may be kept pending in *pending for fd: the
 * handlers are in place and *pending is in the table (every slot of it
 * told the descriptor). */
static int keep(int fd, long *pending)
{
	int n = __atomic_load_n(&nreserved, __ATOMIC_ACQUIRE), found = 0, slot;

	if (!handlers_in_place())
		return 0;
	for (int i = 0; i < n && i < MAX_PENDING; i++)
		if (__atomic_load_n(&kept_pending[i], __ATOMIC_ACQUIRE) == pending) {
			kept_fd[i] = fd;
			found = 1;
		}
	if (found)
		return 1;
	slot = __atomic_fetch_add(&nreserved, 1, __ATOMIC_ACQ_REL);
	if (slot >= MAX_PENDING)
		return 0;
	kept_fd[slot] = fd;
	__atomic_store_n(&kept_pending[slot], pending, __ATOMIC_RELEASE);
	return 1;
}

void __syscluster_position_sync(int fd, int how, int *kind, long *pending)
{
	set_position(fd, pending);
	if (how != SYNC_USE)
		__atomic_store_n(kind,
				 (int)((__atomic_load_n(&generation, __ATOMIC_RELAXED) & GENERATION_BITS) << 2) |
					 (how == SYNC_STORE ? KIND_UNKNOWN : KIND_AS_WRITTEN),
				 __ATOMIC_RELAXED);
}

/* What fd is: a regular file or block device with FD_CLOEXEC whose
 * position only this process sees (pread), or anything else. */
static int kind_of(int fd)
{
	int saved = errno, k = KIND_AS_WRITTEN, flags;
	struct stat st;

	if (!__syscluster_direct_asked() && (flags = fcntl(fd, F_GETFD)) >= 0 &&
	    (flags & FD_CLOEXEC) && fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)))
		k = KIND_PREAD;
	errno = saved;
	return k;
}

long __syscluster_seek_read(int fd, long pos, void *buf, unsigned long count, int seek_checked_full,
			    long *seek_result, int *kind, long *pending)
{
	int word = __atomic_load_n(kind, __ATOMIC_RELAXED), k = word & KIND_MASK;

	if (k != KIND_AS_WRITTEN &&
	    ((unsigned)word >> 2) != (__atomic_load_n(&generation, __ATOMIC_RELAXED) & GENERATION_BITS))
		k = KIND_AS_WRITTEN; /* stored before a fork: the open file is shared */
	else if (k == KIND_UNKNOWN)
		k = kind_of(fd);
	if (k != (word & KIND_MASK))
		__atomic_store_n(kind, (word & ~KIND_MASK) | k, __ATOMIC_RELAXED);
	if (k == KIND_PREAD && count > 0 && count <= 0x7ffff000 && pos >= 0 && keep(fd, pending)) {
		int saved = errno;
		ssize_t r = pread(fd, buf, count, pos);

		if (r == (ssize_t)count) {
			*seek_result = pos;
			__atomic_store_n(pending, pos + r, __ATOMIC_RELAXED);
			return r;
		}
		errno = saved;
	}
	/* As written, from the position the program would have left. */
	set_position(fd, pending);
	*seek_result = lseek(fd, pos, SEEK_SET);
	/* The program leaves for its handler (which does not return) on a
	 * failed lseek, or on one checked `!= pos` that did not return pos:
	 * the read is not made there. */
	if (*seek_result < 0 || (seek_checked_full && *seek_result != pos))
		return -1;
	return read(fd, buf, count);
}
