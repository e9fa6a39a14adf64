/* SPDX-License-Identifier: MIT */
/*
 * Description: MC_BACKEND_KMOD without the kernel module (this kernel
 * cannot load modules; the module does not exist yet).  mc_ctx_init
 * returns -ENODEV and leaves *ctxp NULL; mc_ctx_new returns NULL with
 * errno untouched; nothing else changes (no descriptor is left open).
 * If the module is present (a device that answers MC_IOC_VERSION with
 * MC_ABI_VERSION) this test skips: its own tests cover it.  A bare
 * /dev/multicall is not the module: the library refuses it as it refuses a
 * missing one, and so does this test.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	struct mc_ctx *ctx = (void *)1;
	struct stat st;
	int r, before, after;

	{
		int fd = open(MC_KMOD_DEVICE, O_RDWR | O_CLOEXEC);

		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) &&
		    ioctl(fd, MC_IOC_VERSION) == MC_ABI_VERSION)
			t_skip("kmod: the module answers at " MC_KMOD_DEVICE "; its own tests apply");
		if (fd >= 0)
			close(fd);
	}
	before = dup(0);
	close(before);
	errno = 4242;
	r = mc_ctx_init(&ctx, MC_BACKEND_KMOD);
	T_ASSERT(r == -ENODEV, "mc_ctx_init(KMOD) = %d, want -ENODEV", r);
	T_ASSERT(ctx == NULL, "ctx not cleared");
	T_ASSERT(errno == 4242, "errno changed to %d", errno);
	T_ASSERT(mc_ctx_new(MC_BACKEND_KMOD) == NULL, "mc_ctx_new(KMOD) succeeded");
	T_ASSERT(errno == 4242, "errno changed to %d", errno);
	after = dup(0);
	close(after);
	T_ASSERT(before == after, "a descriptor leaked (%d then %d)", before, after);
	T_ASSERT(!strcmp(mc_backend_name(MC_BACKEND_KMOD), "kmod"), "name");
	return t_finish();
}
