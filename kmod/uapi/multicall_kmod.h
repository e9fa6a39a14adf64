/* SPDX-License-Identifier: MIT */
/*
 * The ioctl ABI of multicall.ko (/dev/multicall), shared by the module and
 * libmulticall's kmod backend.  One MC_IOC_RUN runs a whole libmulticall
 * program -- the struct mc_call array of <multicall.h>, as it is in user
 * memory -- in one crossing, with exactly the results of the direct
 * backend.  See docs/KMOD.md.
 */
#ifndef MULTICALL_KMOD_H
#define MULTICALL_KMOD_H

#ifdef __KERNEL__
#include <linux/ioctl.h>
#include <linux/types.h>
#include <asm/unistd.h>
#else
#include <linux/types.h>
#include <asm/unistd.h>
#include <sys/ioctl.h>

#endif

/* Bumped whenever struct mc_call or struct mc_kmod_run changes layout:
 * MC_ABI_VERSION of <multicall.h>, which a device must answer to
 * MC_IOC_VERSION to be taken for the module. */
#define MC_KMOD_ABI 1

/* struct mc_call of <multicall.h>, as the module reads it (80 bytes). */
struct mc_kmod_call {
	__s64 nr;
	__s64 args[6];
	__s64 result;
	__u32 flags;
	__u8 ref[6];
	__u8 pad[2];
};

struct mc_kmod_loop {
	__u32 call;            /* index in the body of the tested call */
	__u32 cond;            /* MC_WHILE_* of <multicall.h> */
	__s64 value;
	__u64 max_iterations;  /* at least 1 */
};

/* struct mc_kmod_run.flags */
#define MC_KRUN_LOOP 1u /* a looped multi-call: .loop is its condition */
#define MC_KRUN_FLAGS MC_KRUN_LOOP
/* Set by the module when it stops in a call cut by a signal inside a
 * restart block (nanosleep, poll, futex with a timeout...): the restarted
 * ioctl resumes that call where the kernel left it. */
#define MC_KRUN_RESUME (1u << 31)

struct mc_kmod_run {
	__u32 abi;             /* MC_KMOD_ABI */
	__u32 flags;           /* MC_KRUN_* */
	__u64 calls;           /* user address of struct mc_call[n] */
	__u32 n;               /* 1 .. MC_KMOD_MAX_CALLS */
	__u32 next;            /* in: 0.  out: the call the run stopped before
	                        * (see "Signals" in docs/KMOD.md) */
	__u64 iterations;      /* in: 0.  out: iterations begun (loops) */
	struct mc_kmod_loop loop;
};

#define MC_KMOD_MAX_CALLS 1024 /* MC_MAX_CALLS */

/*
 * MC_IOC_RUN returns what mc_run/mc_run_loop return: the index of the
 * checked call that failed, or n.  -EINTR: call .next was interrupted by
 * a signal whose handler does not restart calls; it failed with EINTR and
 * the calls before it ran (their results are filled in), those after it
 * did not.  Any other negative value: nothing ran (-EINVAL: an invalid
 * program, as the library answers it, also for more than
 * MC_KMOD_MAX_CALLS calls; -EFAULT: a bad address; -EPERM: the caller is
 * under a seccomp filter, which the module cannot apply per call).
 */
#ifndef MC_IOC_VERSION /* also in <multicall.h> */
#define MC_IOC_VERSION _IO('M', 0)                          /* returns MC_KMOD_ABI */
#endif
#define MC_IOC_RUN     _IOWR('M', 1, struct mc_kmod_run)

/* Whether a looped multi-call goes on: result r against the loop's value
 * by its condition (MC_WHILE_GT, _GE, _EQ, _NE, _LT, _LE of <multicall.h>,
 * 0 to 5).  The module and libmulticall's backends decide it alike. */
static inline int mc_loop_goes_on(__u32 cond, __s64 value, __s64 r)
{
	switch (cond) {
	case 0:
		return r > value;
	case 1:
		return r >= value;
	case 2:
		return r == value;
	case 3:
		return r != value;
	case 4:
		return r < value;
	default:
		return r <= value;
	}
}

/*
 * The module's own ioctl may not run inside a multi-call (a multi-call in
 * a multi-call would escape the bounds): refused, by the module and the
 * library alike, when an ioctl's request is one of the module's, or is not
 * a literal.  (The calls refused whatever their arguments come from the
 * project's syscall table: data/syscall_properties.tsv, generated into
 * data/gen/syscall_lists.h.)
 */
static inline int mc_kmod_refused_args(long nr, const __s64 *args, const __u8 *ref)
{
	return nr == __NR_ioctl &&
	       (ref[1] || (unsigned int)args[1] == MC_IOC_RUN || (unsigned int)args[1] == MC_IOC_VERSION);
}

#endif
