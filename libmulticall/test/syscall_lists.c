/* SPDX-License-Identifier: MIT */
/*
 * Description: the library follows data/syscall_properties.tsv.  Every
 * system call number 0..511 is planned with mc_explain, which validates and
 * runs nothing: the library refuses (-EINVAL) exactly the calls the table
 * refuses, as data/gen/syscall_lists.h (which the kernel module shares) says — ptrace and seccomp included, prctl only for
 * PR_SET_SECCOMP or a referenced option.  And its uring backend expresses
 * exactly the calls the table gives an io_uring opcode: each, on a regular
 * file, is planned as MC_MECH_URING; any other call (sendto, recvfrom,
 * accept, lseek, ...) is not.  Needs io_uring (skips without it, fails when
 * SYSCLUSTER_REQUIRE names uring or CI=true).
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "syscall_lists.h" /* data/gen/ */

#define MAX_NR 512

static int explain(struct mc_ctx *ctx, struct mc_call *c, unsigned n, struct mc_step *s)
{
	return mc_explain(ctx, c, n, s, s ? 1 : 0);
}

int main(void)
{
	struct mc_ctx *direct = t_ctx(MC_BACKEND_DIRECT), *uring;
	struct mc_call c[2];
	struct mc_step st;
	char path[] = "/tmp/mc-syscall-lists-XXXXXX";
	unsigned refused = 0, expressed = 0;
	int fd, r;
	long nr;

	if (!direct)
		return T_EXIT_FAIL;
	/* Refusals: the library's and the shared table's agree on every number. */
	for (nr = 0; nr < MAX_NR; nr++) {
		int want;

		mc_prep_syscall(&c[0], nr, 0, 0, 0, 0, 0, 0);
		want = scl_multicall_refused(nr, c[0].args, c[0].ref);
		r = explain(direct, c, 1, NULL);
		T_ASSERT(want ? r == -EINVAL : r == 1, "call %ld: mc_explain = %d, the table %s it", nr,
			 r, want ? "refuses" : "allows");
		refused += want;
	}
	T_ASSERT(refused >= 14, "only %u calls refused", refused);
	mc_prep_syscall(&c[0], SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0, 0, 0);
	T_ASSERT(explain(direct, c, 1, NULL) == -EINVAL, "ptrace allowed");
	mc_prep_syscall(&c[0], SYS_seccomp, 0, 0, 0, 0, 0, 0);
	T_ASSERT(explain(direct, c, 1, NULL) == -EINVAL, "seccomp allowed");
	mc_prep_syscall(&c[0], SYS_prctl, PR_SET_SECCOMP, 0, 0, 0, 0, 0);
	T_ASSERT(explain(direct, c, 1, NULL) == -EINVAL, "prctl(PR_SET_SECCOMP) allowed");
	mc_prep_syscall(&c[0], SYS_getppid, 0, 0, 0, 0, 0, 0);
	mc_prep_syscall(&c[1], SYS_prctl, PR_GET_DUMPABLE, 0, 0, 0, 0, 0);
	T_ASSERT(explain(direct, c, 2, NULL) == 2, "prctl(PR_GET_DUMPABLE) refused");
	mc_set_ref(&c[1], 0, 0);
	T_ASSERT(explain(direct, c, 2, NULL) == -EINVAL, "prctl with a referenced option allowed");
	r = mc_run(direct, c, 2);
	T_ASSERT(r == -EINVAL, "mc_run of prctl with a referenced option = %d", r);
	T_ASSERT(scl_multicall_refusal(SYS_execve) != NULL, "no reason for execve");
	mc_ctx_free(direct);

	/* io_uring: the calls the table gives an opcode, and only those. */
	uring = t_ctx(MC_BACKEND_URING);
	if (!uring)
		t_need("uring", "io_uring unavailable here");
	fd = mkstemp(path);
	if (fd < 0 || write(fd, "0123456789", 10) != 10)
		return T_EXIT_FAIL;
	for (nr = 0; nr < MAX_NR; nr++) {
		int want = scl_uring_call(nr);

		/* A regular file, offsets 0, no iovec: what every expressible call
		 * accepts (uring.c checks the descriptor and the arguments). */
		mc_prep_syscall(&c[0], nr, fd, 0, 0, 0, 0, 0);
		if (scl_multicall_refused(nr, c[0].args, c[0].ref))
			continue;
		memset(&st, 0, sizeof(st));
		r = explain(uring, c, 1, &st);
		T_ASSERT(r == 1, "call %ld: mc_explain = %d", nr, r);
		T_ASSERT((st.mech == MC_MECH_URING) == want, "call %ld: planned as %s, the table %s",
			 nr, mc_mech_name(st.mech), want ? "gives it an opcode" : "gives none");
		expressed += st.mech == MC_MECH_URING;
	}
	T_ASSERT(expressed == 16, "the uring backend expresses %u calls, want the table's 16",
		 expressed);
	mc_ctx_free(uring);
	close(fd);
	unlink(path);
	return t_finish();
}
