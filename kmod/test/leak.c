/* SPDX-License-Identifier: MIT */
/*
 * Description: nothing the module allocates outlives an ioctl.  Thousands
 * of 1024-call programs (80 KiB copied in each time), refused at their
 * last entry or run, must not lower the guest's available memory by more
 * than a few MiB (a leak of the program copy would cost 80 KiB each: over
 * 150 MiB here), nor raise the system's count of open files.  Debian's
 * kernel has neither KASAN nor kmemleak; the harness also checks that the
 * module unloads (no reference to it outlives the tests).
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../uapi/multicall_kmod.h"

/* Open files in the whole system (approximate by a per-CPU batch, under 64
 * here: a leak of one file per ioctl would show as thousands). */
static long open_files(void)
{
	long n = -1;
	FILE *f = fopen("/proc/sys/fs/file-nr", "r");

	if (f && fscanf(f, "%ld", &n) != 1)
		n = -1;
	if (f)
		fclose(f);
	return n;
}

static long available_kib(void)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %ld kB", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

int main(void)
{
	static struct mc_call c[MC_KMOD_MAX_CALLS];
	struct mc_kmod_run h = { .abi = MC_KMOD_ABI, .calls = (unsigned long)c, .n = MC_KMOD_MAX_CALLS };
	int dev = open("/dev/multicall", O_RDWR);
	long before, after, files_before, files_after, refused = 0, ran = 0;

	if (dev < 0)
		t_need("kmod", "no /dev/multicall");
	for (int i = 0; i < MC_KMOD_MAX_CALLS; i++)
		mc_prep_syscall(&c[i], SYS_getppid, 0, 0, 0, 0, 0, 0);
	/* Warm up the allocator's caches, then measure. */
	for (int i = 0; i < 50; i++)
		ioctl(dev, MC_IOC_RUN, &h);
	before = available_kib();
	files_before = open_files();
	for (int i = 0; i < 2000; i++) {
		c[MC_KMOD_MAX_CALLS - 1].nr = i % 10 ? SYS_fork : SYS_getppid;
		h.next = 0;
		if (ioctl(dev, MC_IOC_RUN, &h) < 0)
			refused += errno == EINVAL;
		else
			ran++;
	}
	after = available_kib();
	files_after = open_files();
	printf("note: leak: %ld programs refused, %ld run; MemAvailable %ld -> %ld KiB; open files %ld -> %ld\n",
	       refused, ran, before, after, files_before, files_after);
	T_ASSERT(refused == 1800 && ran == 200, "%ld refused, %ld ran", refused, ran);
	T_ASSERT(before - after < 16 * 1024, "available memory fell by %ld KiB", before - after);
	T_ASSERT(files_after - files_before < 64, "open files grew from %ld to %ld", files_before, files_after);
	return t_finish();
}
