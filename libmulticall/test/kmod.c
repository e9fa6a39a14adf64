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
 *
 * auto: without the module it plans and runs as ever, and leaves no
 * descriptor open; with it, mc_explain plans a multi-call as one
 * MC_MECH_KMOD step and it runs in one crossing, a looped multi-call
 * between pipes too; fusion keeps a program one fused call covers on a
 * registered descriptor (a writev), and the copy loop between regular
 * files (copy_file_range).  A program that closes the library's
 * descriptor and reuses its number runs without the module, its
 * descriptor untouched.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int next_fd(void)
{
	int fd = dup(0);

	close(fd);
	return fd;
}

/* Crossings of mc_run / mc_run_loop on ctx, less those spent classifying
 * descriptors, and what mc_explain planned for the first step of a plain
 * multi-call. */
static unsigned long long crossings(struct mc_ctx *ctx, struct mc_call *c, unsigned n,
				    const struct mc_loop *loop, unsigned *mech)
{
	struct mc_step step = { 0, 0, MC_MECH_COUNT, 0 };
	struct mc_stats s;
	int r;

	if (!loop)
		T_ASSERT(mc_explain(ctx, c, n, &step, 1) >= 1, "mc_explain");
	*mech = step.mech;
	mc_ctx_stats_reset(ctx);
	r = loop ? mc_run_loop(ctx, c, n, loop, NULL) : mc_run(ctx, c, n);
	T_ASSERT(r == (int)n, "auto: mc_run%s = %d", loop ? "_loop" : "", r);
	mc_ctx_stats(ctx, &s);
	return s.crossings - s.probes;
}

/* The descriptor this process holds on the module's device, or -1. */
static int device_fd(void)
{
	char path[64], link[64];

	for (int fd = 0; fd < 1024; fd++) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0 && (link[n] = 0, !strcmp(link, MC_KMOD_DEVICE)))
			return fd;
	}
	return -1;
}

/* A program that closes the library's descriptor and reuses its number
 * (daemons close every descriptor): auto's ioctl then reaches another file,
 * which answers ENOTTY; the program runs without the module, exactly, and
 * the library never closes the number, which is the program's now. */
static void auto_device_taken(void)
{
	struct mc_ctx *ctx;
	struct mc_call c[3];
	int p[2], fd, r;
	char buf[16];

	T_ASSERT(mc_ctx_init(&ctx, MC_BACKEND_AUTO) == 0 && ctx, "mc_ctx_init(AUTO)");
	fd = device_fd();
	T_ASSERT(fd > 2, "auto holds the device at %d", fd);
	if (!ctx || fd < 0 || pipe(p) < 0)
		return;
	T_ASSERT(dup2(p[1], fd) == fd, "dup2");
	for (int k = 0; k < 2; k++) {
		mc_prep_write(&c[0], fd, "ab", 2);
		mc_prep_write(&c[1], fd, "cd", 2);
		mc_prep_syscall(&c[2], SYS_getppid, 0, 0, 0, 0, 0, 0);
		r = mc_run(ctx, c, 3);
		T_ASSERT(r == 3 && c[1].result == 2 && c[2].result == getppid(), "run %d: %d, %ld %ld", k, r,
			 c[1].result, c[2].result);
		T_ASSERT(read(p[0], buf, sizeof(buf)) == 4 && !memcmp(buf, "abcd", 4), "run %d: the pipe", k);
	}
	mc_ctx_free(ctx);
	T_ASSERT(fcntl(fd, F_GETFD) >= 0, "the library closed the program's descriptor %d", fd);
	close(fd), close(p[0]), close(p[1]);
}

static void auto_backend(int device)
{
	struct mc_ctx *ctx;
	struct mc_call c[4];
	struct mc_loop loop = { 0, MC_WHILE_GT, 0, 1000 };
	unsigned mech;
	unsigned long long x;
	char buf[64], path[2][256];
	int p[2], q[2], f[2], before = next_fd();

	struct mc_info info;
	int builtin;

	T_ASSERT(mc_ctx_init(&ctx, MC_BACKEND_AUTO) == 0, "mc_ctx_init(AUTO)");
	if (!ctx || pipe(p) < 0 || pipe(q) < 0)
		return;
	builtin = mc_ctx_info(ctx, &info) == 0 && info.calibration == MC_CALIB_BUILTIN;
	/* Four writes and a getppid: no fusion rule covers them all. */
	for (int i = 0; i < 3; i++)
		mc_prep_write(&c[i], p[1], "ab", 2);
	mc_prep_syscall(&c[3], SYS_getppid, 0, 0, 0, 0, 0, 0);
	x = crossings(ctx, c, 4, NULL, &mech);
	T_ASSERT(c[2].result == 2 && c[3].result == getppid(), "auto: results");
	if (device)
		T_ASSERT(x == 1 && mech == MC_MECH_KMOD, "auto with the module: %llu crossings, planned as %s", x,
			 mc_mech_name(mech));
	else
		T_ASSERT(x >= 2 && mech != MC_MECH_KMOD, "auto without the module: %llu crossings, planned as %s", x,
			 mc_mech_name(mech));
	T_ASSERT(read(p[0], buf, sizeof(buf)) == 6, "auto: the pipe");

	/* A copy loop between pipes: q -> p, 3 blocks, then end of input. */
	T_ASSERT(write(q[1], "xyzxyzxyz", 9) == 9, "fill");
	close(q[1]);
	mc_prep_read(&c[0], q[0], buf, 3);
	mc_set_check(&c[0]);
	mc_prep_write(&c[1], p[1], buf, 0);
	mc_set_ref(&c[1], 2, 0);
	x = crossings(ctx, c, 2, &loop, &mech);
	T_ASSERT(read(p[0], buf, sizeof(buf)) == 9, "auto: the copy loop's output");
	if (device)
		T_ASSERT(x == 1, "auto with the module: a looped multi-call of 4 iterations in %llu crossings (and the probes of its descriptors)", x);
	else
		T_ASSERT(x >= 7, "auto without the module: a loop of 4 iterations in %llu crossings", x);

	/* Fusion keeps what one fused call covers on a registered descriptor
	 * (/dev/null: a pipe's fused write, pwritev2 with RWF_NOWAIT, is
	 * refused by 6.1's pipes and redone call by call). */
	f[0] = open("/dev/null", O_WRONLY | O_CLOEXEC);
	T_ASSERT(f[0] >= 0 && mc_fd_register(ctx, f[0]) == 0, "register /dev/null");
	for (int i = 0; i < 4; i++)
		mc_prep_write(&c[i], f[0], "cd", 2);
	x = crossings(ctx, c, 4, NULL, &mech);
	if (builtin) /* the built-in choices fuse two writes to a registered /dev/null */
		T_ASSERT(mech == MC_MECH_WRITEV, "four writes to /dev/null planned as %s", mc_mech_name(mech));
	if (mech == MC_MECH_WRITEV || device)
		T_ASSERT(x == 1 && mech != MC_MECH_DIRECT && c[3].result == 2,
			 "four writes to a registered /dev/null: %llu crossings, planned as %s", x, mc_mech_name(mech));
	mc_fd_unregister(ctx, f[0]);
	close(f[0]);

	/* The copy loop between regular files: copy_file_range, not the module. */
	for (int k = 0; k < 2; k++) {
		snprintf(path[k], sizeof(path[k]), "%s/mc-kmod-auto-%d-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(), k);
		f[k] = open(path[k], O_RDWR | O_CREAT | O_TRUNC, 0600);
	}
	if (f[0] >= 0 && f[1] >= 0) {
		struct mc_stats s;

		memset(buf, 'q', sizeof(buf));
		for (int k = 0; k < 64; k++)
			T_ASSERT(write(f[0], buf, sizeof(buf)) == (ssize_t)sizeof(buf), "fill the file");
		lseek(f[0], 0, SEEK_SET);
		mc_prep_read(&c[0], f[0], buf, 64);
		mc_set_check(&c[0]);
		mc_prep_write(&c[1], f[1], buf, 0);
		mc_set_ref(&c[1], 2, 0);
		mc_ctx_stats_reset(ctx);
		T_ASSERT(mc_run_loop(ctx, c, 2, &loop, NULL) == 2, "file copy loop");
		mc_ctx_stats(ctx, &s);
		T_ASSERT(lseek(f[1], 0, SEEK_END) == 64 * 64, "file copy loop: the output's size");
		if (builtin)
			T_ASSERT(s.fused > 0, "the copy loop between files was not fused (%llu crossings)", s.crossings);
	}
	for (int k = 0; k < 2; k++)
		close(f[k]), unlink(path[k]);
	close(p[0]), close(p[1]), close(q[0]);
	mc_ctx_free(ctx);
	T_ASSERT(next_fd() == before, "auto: a descriptor leaked");
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
	auto_backend(device);
	if (device)
		auto_device_taken();
	return t_finish();
}
