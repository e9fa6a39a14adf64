/* SPDX-License-Identifier: MIT */
/* Helpers shared by the measuring programs, mc-calibrate and mc-bench
 * (bench/multicall/bench.c): a clock, a comparison for qsort, and a null
 * device that is one.  Header-only so that each stays one source file. */
#ifndef MC_TOOLS_H
#define MC_TOOLS_H

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

static inline double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static inline int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The null device: /dev/null, or where a shared machine has had it
 * replaced by a regular file, a private node made and unlinked at once. */
static inline int open_null(const char *where)
{
	struct stat sb;
	char path[600];
	int fd = open("/dev/null", O_WRONLY);

	if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISCHR(sb.st_mode) && major(sb.st_rdev) == 1 &&
	    minor(sb.st_rdev) == 3)
		return fd;
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/.mc-null.%d", where, (int)getpid());
	if (mknod(path, S_IFCHR | 0600, makedev(1, 3)) < 0)
		return -1;
	fd = open(path, O_WRONLY);
	unlink(path);
	return fd;
}

#endif
