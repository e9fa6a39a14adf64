/* SPDX-License-Identifier: MIT */
/*
 * The multi-call the compiler plugin puts in place of a straight-line
 * region of system calls (seed 000 fig. 7): the calls, filled in by the
 * plugin as libmulticall's struct mc_call (literal arguments, result
 * references, MC_CHECK on a call whose failure the program sends to a
 * handler that does not return, §3.3.2, MC_CHECK_FULL on a read or write
 * whose short transfer it sends there: `!= n`), run by mc_run on the auto
 * backend.
 *
 * What the calls would have left, this leaves: each call's result in its
 * struct (the plugin turns -errno into libc's -1), errno set by the last
 * call that failed (as the wrappers would have set it, one after another)
 * and untouched when none did, and the calls after a failed checked call
 * not run (-ECANCELED), because the program would have left for its handler
 * there — which the plugin's code then does, on the failed call's result.
 *
 * Never slower (issue 12): a first context costs a program far more than a
 * region saves in one run, so until *runs reaches min_runs (the plugin's
 * break-even from the calibration; 0 with --assume-gain) the calls run as
 * the program wrote them, one system call each.  They do too when the
 * context cannot be made, when mc_run refuses them, and in a signal
 * handler that interrupts this thread inside a multi-call.
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "multicall.h"

static __thread struct mc_ctx *region_ctx;
static __thread int region_busy;

/* The calls one by one, as direct would run them: references resolved to
 * the raw result, a failed checked call (or a short one checked full)
 * cancels the rest.  Returns the stop
 * index as mc_run does. */
static unsigned run_plain(struct mc_call *calls, unsigned n)
{
	int saved = errno;
	unsigned i, j;

	for (i = 0; i < n; i++) {
		long a[6];

		for (j = 0; j < 6; j++)
			a[j] = calls[i].ref[j] ? calls[calls[i].ref[j] - 1].result : calls[i].args[j];
		calls[i].result = syscall(calls[i].nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		if (calls[i].result == -1)
			calls[i].result = -errno;
		if ((calls[i].result < 0 && (calls[i].flags & MC_CHECK)) ||
		    ((calls[i].flags & MC_CHECK_FULL) &&
		     (calls[i].result < 0 ? -1 : calls[i].result) != a[calls[i].nr == SYS_lseek ? 1 : 2])) {
			for (j = i + 1; j < n; j++)
				calls[j].result = -ECANCELED;
			break;
		}
	}
	errno = saved;
	return i;
}

/* errno as the wrappers leave it: the last failure's. */
static long finish(const struct mc_call *calls, unsigned n, long stop)
{
	unsigned ran = stop < (long)n ? (unsigned)stop + 1 : n;

	for (unsigned i = 0; i < ran; i++)
		if (calls[i].result < 0)
			errno = (int)-calls[i].result;
	return stop;
}

/* Descriptors of the function's own, registered once in region_ctx
 * (mc_fd_register: their class asked once, not in every multi-call).
 * Only descriptors the plugin proved its function's own are offered — the
 * result of an open in that function, given to nothing but system calls
 * (no dup, no store, no other function) and the pass's multi-calls
 * (llvm/lib/Specialize.cpp, ownDescriptor) — and the plugin calls
 * __syscluster_fd_release before every call of that function that may
 * change what a number names or its status flags (close, dup2/dup3 onto
 * it, fcntl, …; __syscluster_fd_release_all before close_range and
 * closefrom).  No other
 * code of the program was given the number, so nothing else may close or
 * change it (the promise mc_fd_register asks of its caller).
 *
 * Only regular files are registered (one fstat, once): what the library
 * keeps of them — the type, the filesystem, the identity — no process can
 * change; their status flags, which another process sharing the open file
 * (a child after fork, a program started with the descriptor) may change,
 * decide nothing for them but io_uring's O_APPEND test, which the auto
 * backend uses only where the calibration says io_uring wins.  A pipe's
 * class depends on O_DIRECT (a packet pipe): it stays classified in every
 * run.
 *
 * Per thread, as the context: a thread registers only descriptors of its
 * own calls of the function, whose changes it releases in its own
 * context.  A fork copies the bits with the context and the descriptor
 * table; an exec starts without either.  Bits per number below OWN_MAX:
 * registered, and asked (registered or not to be: not asked again until
 * released). */
#define OWN_MAX 1024
static __thread unsigned char own_registered[OWN_MAX / 8], own_asked[OWN_MAX / 8];

#define BIT(a, fd) ((a)[(fd) / 8] & (1u << (fd) % 8))

static void register_own(const struct mc_call *calls, unsigned n, unsigned long own)
{
	for (unsigned i = 0; i < n && i < 8 * sizeof(own); i++) {
		long fd = calls[i].args[0];
		struct stat st;
		int saved = errno;

		if (!(own >> i & 1) || calls[i].ref[0] || fd < 0 || fd >= OWN_MAX || BIT(own_asked, fd))
			continue;
		own_asked[fd / 8] |= (unsigned char)(1u << fd % 8);
		if (fstat((int)fd, &st) == 0 && S_ISREG(st.st_mode) && mc_fd_register(region_ctx, (int)fd) == 0)
			own_registered[fd / 8] |= (unsigned char)(1u << fd % 8);
		errno = saved;
	}
}

static void release_one(int fd)
{
	if (BIT(own_registered, fd))
		mc_fd_unregister(region_ctx, fd);
	own_registered[fd / 8] &= (unsigned char)~(1u << fd % 8);
	own_asked[fd / 8] &= (unsigned char)~(1u << fd % 8);
}

/* Before a call that may change what fd names. */
void __syscluster_fd_release(long fd)
{
	if (region_ctx && fd >= 0 && fd < OWN_MAX)
		release_one((int)fd);
}

/* Before close_range and closefrom: every number. */
void __syscluster_fd_release_all(void)
{
	if (region_ctx)
		for (int i = 0; i < OWN_MAX; i++)
			release_one(i);
}

static long run_region(struct mc_call *calls, unsigned n, unsigned long min_runs, unsigned long *runs,
		       unsigned long own)
{
	long stop = -1;

	if (!region_busy && !region_ctx && min_runs &&
	    __atomic_add_fetch(runs, 1, __ATOMIC_RELAXED) < min_runs)
		stop = run_plain(calls, n);
	else if (!region_busy && !region_ctx && !(region_ctx = mc_ctx_new(MC_BACKEND_AUTO)))
		stop = run_plain(calls, n);
	else if (region_busy)
		stop = run_plain(calls, n);
	if (stop < 0) {
		region_busy = 1;
		if (own)
			register_own(calls, n, own);
		stop = mc_run(region_ctx, calls, n);
		region_busy = 0;
		if (stop < 0) /* refused before anything ran */
			stop = run_plain(calls, n);
	}
	return finish(calls, n, stop);
}

long __syscluster_run(struct mc_call *calls, unsigned n, unsigned long min_runs, unsigned long *runs)
{
	return run_region(calls, n, min_runs, runs, 0);
}

/* The same, where the descriptors of the calls in the mask own (bit i:
 * calls[i].args[0]) are the function's own: registered at their first
 * multi-call. */
long __syscluster_run_own(struct mc_call *calls, unsigned n, unsigned long min_runs, unsigned long *runs,
			  unsigned long own)
{
	return run_region(calls, n, min_runs, runs, own);
}

/* A region specialized on the value profile for one descriptor (seed 000
 * §3.4): the multi-call when every call's descriptor is the first's, the
 * calls as written (no context, no bookkeeping beyond this test) when
 * they differ, where no fusion rule would merge them. */
long __syscluster_run_one_fd_own(struct mc_call *calls, unsigned n, unsigned long min_runs,
				 unsigned long *runs, unsigned long own)
{
	for (unsigned i = 1; i < n; i++)
		if (calls[i].ref[0] || calls[i].args[0] != calls[0].args[0])
			return finish(calls, n, run_plain(calls, n));
	return run_region(calls, n, min_runs, runs, own);
}

long __syscluster_run_one_fd(struct mc_call *calls, unsigned n, unsigned long min_runs, unsigned long *runs)
{
	return __syscluster_run_one_fd_own(calls, n, min_runs, runs, 0);
}
