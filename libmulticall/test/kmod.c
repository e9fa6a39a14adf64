/* SPDX-License-Identifier: MIT */
/*
 * Description: MC_BACKEND_KMOD with and without the kernel module.
 * Without it (this host: its kernel cannot load modules; or a bare
 * /dev/multicall that does not answer MC_IOC_VERSION with MC_ABI_VERSION)
 * mc_ctx_init returns -ENODEV and leaves *ctxp NULL; mc_ctx_new returns
 * NULL with errno untouched; no descriptor is left open.  With the module
 * (the QEMU guest of kmod/guest/run.sh) the context opens, a multi-call
 * of four calls is one crossing, and freeing the context closes the
 * device.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <string.h>
#include <unistd.h>

static int next_fd(void)
{
	int fd = dup(0);

	close(fd);
	return fd;
}

int main(void)
{
	struct mc_ctx *ctx = (void *)1;
	struct stat st;
	int r, before = next_fd();

	int fd = open(MC_KMOD_DEVICE, O_RDWR | O_CLOEXEC);
	int device = fd >= 0 && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) &&
		     ioctl(fd, MC_IOC_VERSION) == MC_ABI_VERSION;

	if (fd >= 0)
		close(fd);

	errno = 4242;
	r = mc_ctx_init(&ctx, MC_BACKEND_KMOD);
	if (!device) {
		T_ASSERT(!t_required("kmod"), "kmod is required but no module answers at " MC_KMOD_DEVICE);
		T_ASSERT(r == -ENODEV, "mc_ctx_init(KMOD) = %d, want -ENODEV", r);
		T_ASSERT(ctx == NULL, "ctx not cleared");
		T_ASSERT(errno == 4242, "errno changed to %d", errno);
		T_ASSERT(mc_ctx_new(MC_BACKEND_KMOD) == NULL, "mc_ctx_new(KMOD) succeeded");
		T_ASSERT(errno == 4242, "errno changed to %d", errno);
	} else {
		struct mc_call c[4];
		struct mc_stats s;
		int p[2];

		T_ASSERT(r == 0 && ctx, "mc_ctx_init(KMOD) = %d with /dev/multicall", r);
		if (r == 0 && pipe(p) == 0) {
			for (int i = 0; i < 4; i++)
				mc_prep_write(&c[i], p[1], "ab", 2);
			mc_ctx_stats_reset(ctx);
			r = mc_run(ctx, c, 4);
			mc_ctx_stats(ctx, &s);
			T_ASSERT(r == 4 && c[3].result == 2, "mc_run = %d", r);
			T_ASSERT(s.crossings == 1 && s.calls == 4, "%llu crossings for %llu calls", s.crossings,
				 s.calls);
			close(p[0]), close(p[1]);
			mc_ctx_free(ctx);
		}
	}
	T_ASSERT(next_fd() == before, "a descriptor leaked");
	T_ASSERT(!strcmp(mc_backend_name(MC_BACKEND_KMOD), "kmod"), "name");
	return t_finish();
}
