/* SPDX-License-Identifier: MIT */
/*
 * What the compiler plugin puts in front of a loop whose body is one
 * `write(fd, buf, n)` with the same three arguments in every iteration
 * (llvm/lib/BatchWrite.cpp): the loop's iterations written by writev, up
 * to IOV_MAX blocks per call, every iovec the same buf and n.
 *
 * On a regular file a writev of k blocks is the k writes: the bytes land
 * at the same offsets (the file position, or the end under O_APPEND), and
 * the position moves as far.  Where a writev stops early, the loop itself
 * takes over at the first iteration not done, so that the program's own
 * code sees what the writes would have given it:
 * - *done is the number of whole blocks written;
 * - a block written in part (the file size limit, or a filesystem that
 *   filled up inside the block) is a legitimate short write of that
 *   iteration: its count is returned, and the plugin's code gives it to
 *   the program as the result of that iteration's write, whose check
 *   (the handler) then runs with it, errno untouched as a short write
 *   leaves it;
 * - a writev that failed (-1) or stopped on a block boundary: -1 is
 *   returned and errno is what it was on entry; the loop resumes at
 *   iteration *done and makes the real write, which fails with the real
 *   errno (and runs the real handler) or succeeds if the condition was
 *   passing (EINTR, a signal).
 * Everything else returns -1 with *done = 0, before any byte is written:
 * the loop runs as written — a descriptor that is not a regular file (a
 * pipe or socket splits and blocks differently: a write of at most
 * PIPE_BUF bytes is atomic, a writev is not), a failed fstat (EBADF: the
 * first real write fails as it would have), a count of 0 or above what one
 * writev of two blocks may carry, fewer than three iterations (an fstat
 * and one writev would cross as often as they) or than min_iterations
 * (where the plugin's estimate says a run starts to gain: 0 when it did
 * not price the loop), and every
 * loop under MULTICALL_BACKEND=direct (syscluster verify injects faults
 * into the K-th write the source issues).  The fstat and the writev are
 * made only through the C library's wrappers: a signal handler or another
 * thread sees the file as it would have between two of the writes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "direct.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif
/* The most one read or write moves on Linux (MAX_RW_COUNT): a writev of
 * more returns short although every byte could have been written. */
#define MAX_RW 0x7ffff000UL

long __syscluster_batch_write(int fd, const void *buf, unsigned long n, unsigned long iterations,
			      unsigned long min_iterations, unsigned long *done);

long __syscluster_batch_write(int fd, const void *buf, unsigned long n, unsigned long iterations,
			      unsigned long min_iterations, unsigned long *done)
{
	struct iovec iov[IOV_MAX];
	struct stat st;
	int saved = errno;
	unsigned long per_call, i;

	*done = 0;
	if (n == 0 || n > MAX_RW / 2 || iterations < 3 || iterations < min_iterations || __syscluster_direct_asked())
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		errno = saved;
		return -1;
	}
	per_call = MAX_RW / n < IOV_MAX ? MAX_RW / n : IOV_MAX;
	if (per_call > iterations)
		per_call = iterations;
	for (i = 0; i < per_call; i++) {
		iov[i].iov_base = (void *)buf;
		iov[i].iov_len = n;
	}
	while (*done < iterations) {
		unsigned long k = iterations - *done < per_call ? iterations - *done : per_call;
		ssize_t r = writev(fd, iov, (int)k);
		if (r < 0) {
			errno = saved;
			return -1;
		}
		*done += (unsigned long)r / n;
		if ((unsigned long)r % n)
			return (long)((unsigned long)r % n);
		if ((unsigned long)r < k * n)
			return -1; /* stopped on a block boundary: the real write says why */
	}
	return -1;
}
