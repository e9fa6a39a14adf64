/* SPDX-License-Identifier: MIT */
/*
 * Description: a caller under a seccomp filter.  The module cannot run the
 * caller's filter for each entry, so it refuses the whole program with
 * EPERM before anything runs; libmulticall's kmod backend then runs the
 * program call by call, where the filter sees every call, and the results
 * are direct's.  A filter that refuses one of the calls is obeyed.  auto,
 * which chose the module before the filter came, falls back the same way
 * and stops asking the module (its descriptor closed).
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../uapi/multicall_kmod.h"

/* Allows everything but getppid, which fails with EACCES. */
static void install_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		t_fail("installing the filter: %s", strerror(errno));
}

int main(void)
{
	struct mc_ctx *kmod = t_ctx(MC_BACKEND_KMOD), *autox = t_ctx(MC_BACKEND_AUTO);
	struct mc_step step;
	struct mc_call c[3];
	struct mc_stats st;
	int p[2], dev, r;
	char b[8];

	if (!kmod || !autox)
		return t_finish();
	dev = open("/dev/multicall", O_RDWR);
	if (pipe2(p, O_NONBLOCK) < 0 || dev < 0)
		return T_EXIT_FAIL;
	install_filter();
	memset(c, 0, sizeof(c));
	mc_prep_write(&c[0], p[1], "ab", 2);
	mc_prep_syscall(&c[1], SYS_getppid, 0, 0, 0, 0, 0, 0);
	mc_prep_syscall(&c[2], SYS_getpid, 0, 0, 0, 0, 0, 0);
	{
		struct mc_kmod_run h = { .abi = MC_KMOD_ABI, .calls = (unsigned long)c, .n = 3 };

		r = ioctl(dev, MC_IOC_RUN, &h);
		T_ASSERT(r < 0 && errno == EPERM, "the module ran a filtered caller's program: %d", r);
		T_ASSERT(read(p[0], b, sizeof(b)) < 0 && errno == EAGAIN, "something ran");
	}
	mc_ctx_stats_reset(kmod);
	r = mc_run(kmod, c, 3);
	T_ASSERT(r == 3, "mc_run = %d", r);
	T_ASSERT(c[0].result == 2 && c[1].result == -EACCES && c[2].result == getpid(),
		 "results %ld %ld %ld: the filter must judge each call", c[0].result, c[1].result,
		 c[2].result);
	T_ASSERT(read(p[0], b, sizeof(b)) == 2, "the write ran once");
	mc_ctx_stats(kmod, &st);
	T_ASSERT(st.calls == 3 && st.crossings == 4, "calls %llu crossings %llu: the refused ioctl, then 3 calls",
		 st.calls, st.crossings);
	mc_ctx_free(kmod);

	/* auto: planned on the module, refused, then call by call for good. */
	T_ASSERT(mc_explain(autox, c, 3, &step, 1) == 1 && step.mech == MC_MECH_KMOD,
		 "auto did not plan the module before the refusal");
	mc_ctx_stats_reset(autox);
	for (int k = 0; k < 2; k++) {
		r = mc_run(autox, c, 3);
		T_ASSERT(r == 3 && c[0].result == 2 && c[1].result == -EACCES && c[2].result == getpid(),
			 "auto, run %d: %d, results %ld %ld %ld", k, r, c[0].result, c[1].result, c[2].result);
		T_ASSERT(read(p[0], b, sizeof(b)) == 2, "auto, run %d: the write ran once", k);
	}
	mc_ctx_stats(autox, &st);
	/* The refused ioctl and the close of the device, then 3 calls twice. */
	T_ASSERT(st.calls == 6 && st.crossings == 8, "auto: calls %llu crossings %llu", st.calls, st.crossings);
	T_ASSERT(mc_explain(autox, c, 3, &step, 1) >= 1 && step.mech != MC_MECH_KMOD, "auto still plans the module");
	mc_ctx_free(autox);
	return t_finish();
}
