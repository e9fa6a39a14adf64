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

long __syscluster_run(struct mc_call *calls, unsigned n, unsigned long min_runs, unsigned long *runs)
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
		stop = mc_run(region_ctx, calls, n);
		region_busy = 0;
		if (stop < 0) /* refused before anything ran */
			stop = run_plain(calls, n);
	}
	return finish(calls, n, stop);
}

/* A region specialized on the value profile for one descriptor (seed 000
 * §3.4): the multi-call when every call's descriptor is the first's, the
 * calls as written (no context, no bookkeeping beyond this test) when
 * they differ, where no fusion rule would merge them. */
long __syscluster_run_one_fd(struct mc_call *calls, unsigned n, unsigned long min_runs, unsigned long *runs)
{
	for (unsigned i = 1; i < n; i++)
		if (calls[i].ref[0] || calls[i].args[0] != calls[0].args[0])
			return finish(calls, n, run_plain(calls, n));
	return __syscluster_run(calls, n, min_runs, runs);
}
