/* SPDX-License-Identifier: MIT */
/*
 * Description: the module refuses, before anything runs, every program the
 * library refuses, and answers as the library does: bad pointers (-EFAULT),
 * unknown flags, forward references, a reference
 * to itself outside a loop, calls that may not run inside a multi-call
 * (the generated list), the multicall ioctl inside a multi-call,
 * prctl(PR_SET_SECCOMP), a loop without a bound, a bad loop condition
 * or too many calls (-EINVAL).  Loop-carried references are accepted.  "Nothing ran" is
 * checked by a write to a pipe placed first in every refused program.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../uapi/multicall_kmod.h"

static int dev, p[2];

static long krun(struct mc_call *c, unsigned n, unsigned flags, const struct mc_kmod_loop *loop)
{
	struct mc_kmod_run h = { .abi = MC_KMOD_ABI, .flags = flags, .calls = (unsigned long)c, .n = n };

	if (loop)
		h.loop = *loop;
	long r = ioctl(dev, MC_IOC_RUN, &h);

	return r < 0 ? -errno : r;
}

static long run_hdr(struct mc_kmod_run *h)
{
	long r = ioctl(dev, MC_IOC_RUN, h);

	return r < 0 ? -errno : r;
}

/* The pipe holds nothing: the refused program's first write never ran. */
static void nothing_ran(const char *what)
{
	char b[8];
	ssize_t r = read(p[0], b, sizeof(b));

	T_ASSERT(r < 0 && errno == EAGAIN, "%s: a call ran (%zd bytes in the pipe)", what, r);
}

/* A refused program, also through the library: same answer. */
static void refused(const char *what, struct mc_call *c, unsigned n, long want, int loop)
{
	struct mc_kmod_loop l = { 0, MC_WHILE_GT, 0, 3 };
	struct mc_ctx *direct = mc_ctx_new(MC_BACKEND_DIRECT);
	struct mc_loop ml = { 0, MC_WHILE_GT, 0, 3 };
	long r = krun(c, n, loop ? MC_KRUN_LOOP : 0, loop ? &l : NULL);
	long lib;

	T_ASSERT(r == want, "%s: module answered %ld, want %ld", what, r, want);
	nothing_ran(what);
	lib = loop ? mc_run_loop(direct, c, n, &ml, NULL) : mc_run(direct, c, n);
	T_ASSERT(lib == want, "%s: library answered %ld, module %ld", what, lib, r);
	nothing_ran(what);
	mc_ctx_free(direct);
}

int main(void)
{
	struct mc_call c[4];
	struct mc_kmod_run h;
	long r;

	dev = open("/dev/multicall", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		t_need("kmod", "no /dev/multicall: %s", strerror(errno));
	T_ASSERT(ioctl(dev, MC_IOC_VERSION) == MC_KMOD_ABI, "version");
	T_ASSERT(ioctl(dev, _IO('M', 0x7f)) < 0 && errno == ENOTTY, "unknown ioctl: %s", strerror(errno));
	if (pipe2(p, O_NONBLOCK) < 0)
		return T_EXIT_FAIL;

	memset(c, 0, sizeof(c));
	mc_prep_write(&c[0], p[1], "x", 1);
	mc_prep_syscall(&c[1], SYS_getpid, 0, 0, 0, 0, 0, 0);

	/* The header and the array. */
	T_ASSERT(ioctl(dev, MC_IOC_RUN, (void *)8) < 0 && errno == EFAULT, "bad header pointer");
	T_ASSERT(krun(t_bad_ptr(), 2, 0, NULL) == -EFAULT, "bad calls pointer");
	T_ASSERT(krun(c, MC_KMOD_MAX_CALLS + 1, 0, NULL) == -EINVAL, "too many calls");
	T_ASSERT(krun(c, 0xffffffffu, 0, NULL) == -EINVAL, "huge count");
	T_ASSERT(krun(c, 0, 0, NULL) == -EINVAL, "no calls");
	T_ASSERT(krun(c, 2, 0x10, NULL) == -EINVAL, "unknown run flag");
	h = (struct mc_kmod_run){ .abi = MC_KMOD_ABI + 1, .calls = (unsigned long)c, .n = 2 };
	T_ASSERT(run_hdr(&h) == -EINVAL, "other ABI");
	h = (struct mc_kmod_run){ .abi = MC_KMOD_ABI, .calls = (unsigned long)c, .n = 2, .next = 2 };
	T_ASSERT(run_hdr(&h) == -EINVAL, "resume past the end");
	nothing_ran("header checks");

	/* Programs both refuse. */
	c[1].flags = 0x80;
	refused("unknown call flag", c, 2, -EINVAL, 0);
	c[1].flags = MC_PREDICT;
	refused("MC_PREDICT on getpid", c, 2, -EINVAL, 0);
	c[1].flags = 0;
	c[1].ref[0] = 3;
	refused("forward reference", c, 2, -EINVAL, 0);
	c[1].ref[0] = 2;
	refused("reference to itself", c, 2, -EINVAL, 0);
	c[1].ref[0] = 0;
	{
		static const long banned[] = { SYS_execve, SYS_execveat, SYS_fork, SYS_vfork, SYS_clone,
					       SYS_clone3, SYS_exit, SYS_exit_group, SYS_rt_sigreturn,
					       SYS_ptrace, SYS_seccomp, SYS_rt_sigsuspend,
					       SYS_sigaltstack, SYS_restart_syscall };
		for (unsigned k = 0; k < sizeof(banned) / sizeof(banned[0]); k++) {
			char what[64];

			c[1].nr = banned[k];
			snprintf(what, sizeof(what), "system call %ld", banned[k]);
			refused(what, c, 2, -EINVAL, 0);
		}
	}
	mc_prep_syscall(&c[1], SYS_ioctl, dev, MC_IOC_RUN, 0, 0, 0, 0);
	refused("the multicall ioctl inside", c, 2, -EINVAL, 0);
	mc_prep_syscall(&c[1], SYS_ioctl, dev, 0, 0, 0, 0, 0);
	mc_set_ref(&c[1], 1, 0);
	refused("an ioctl request taken from a result", c, 2, -EINVAL, 0);
	mc_prep_syscall(&c[1], SYS_prctl, PR_SET_SECCOMP, 1, 0, 0, 0, 0);
	refused("prctl(PR_SET_SECCOMP)", c, 2, -EINVAL, 0);

	/* Loops: a bound is required, the condition must exist; loop-carried
	 * references are accepted (and run). */
	{
		struct mc_kmod_loop l = { 0, MC_WHILE_GT, 0, 0 };

		mc_prep_write(&c[0], p[1], "x", 1);
		mc_prep_syscall(&c[1], SYS_getpid, 0, 0, 0, 0, 0, 0);
		T_ASSERT(krun(c, 2, MC_KRUN_LOOP, &l) == -EINVAL, "loop without a bound");
		l = (struct mc_kmod_loop){ 2, MC_WHILE_GT, 0, 1 };
		T_ASSERT(krun(c, 2, MC_KRUN_LOOP, &l) == -EINVAL, "loop tests a call that does not exist");
		l = (struct mc_kmod_loop){ 0, 6, 0, 1 };
		T_ASSERT(krun(c, 2, MC_KRUN_LOOP, &l) == -EINVAL, "loop condition 6");
		nothing_ran("loop checks");
		c[0].ref[2] = 2; /* write's length: getpid's result of the last iteration */
		c[1].result = 1;  /* ... on the first, the value on entry */
		l = (struct mc_kmod_loop){ 0, MC_WHILE_GT, 0, 1 };
		r = krun(c, 2, MC_KRUN_LOOP, &l);
		T_ASSERT(r == 2 && c[0].result == 1, "loop-carried reference: %ld, result %ld", r,
			 c[0].result);
		{
			char b[8];

			T_ASSERT(read(p[0], b, sizeof(b)) == 1, "the loop wrote once");
		}
	}
	return t_finish();
}
