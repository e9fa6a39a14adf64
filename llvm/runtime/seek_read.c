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
 * *kind caches the descriptor's kind (0 unknown, 1 pread, 2 as written);
 * the plugin's code forgets it at every store into the global and every
 * close of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KIND_UNKNOWN 0
#define KIND_PREAD 1
#define KIND_AS_WRITTEN 2

long __syscluster_seek_read(int fd, long pos, void *buf, unsigned long count, int seek_checked_full,
			    long *seek_result, int *kind, long *pending);
void __syscluster_position_sync(int fd, int *kind, long *pending);

void __syscluster_position_sync(int fd, int *kind, long *pending)
{
	long p = __atomic_exchange_n(pending, -1L, __ATOMIC_RELAXED);

	if (p >= 0) {
		int saved = errno;

		lseek(fd, p, SEEK_SET);
		errno = saved;
	}
	if (kind)
		__atomic_store_n(kind, KIND_UNKNOWN, __ATOMIC_RELAXED);
}

long __syscluster_seek_read(int fd, long pos, void *buf, unsigned long count, int seek_checked_full,
			    long *seek_result, int *kind, long *pending)
{
	int k = __atomic_load_n(kind, __ATOMIC_RELAXED);

	if (k == KIND_UNKNOWN) {
		const char *backend = secure_getenv("MULTICALL_BACKEND");
		int saved = errno;
		struct stat st;

		k = KIND_AS_WRITTEN;
		if (!(backend && strcmp(backend, "direct") == 0) && fstat(fd, &st) == 0 &&
		    (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)))
			k = KIND_PREAD;
		errno = saved;
		__atomic_store_n(kind, k, __ATOMIC_RELAXED);
	}
	if (k == KIND_PREAD && count > 0 && count <= 0x7ffff000 && pos >= 0) {
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
	__syscluster_position_sync(fd, NULL, pending);
	*seek_result = lseek(fd, pos, SEEK_SET);
	/* The program leaves for its handler (which does not return) on a
	 * failed lseek, or on one checked `!= pos` that did not return pos:
	 * the read is not made there. */
	if (*seek_result < 0 || (seek_checked_full && *seek_result != pos))
		return -1;
	return read(fd, buf, count);
}
