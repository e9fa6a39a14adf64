// SPDX-License-Identifier: GPL-2.0
/*
 * multicall.ko: runs a whole libmulticall program -- entries, result
 * references, checked calls, looped multi-calls -- in one crossing
 * (seed 000 §2.2, fig. 2; §3.4), with exactly the results of
 * libmulticall's direct backend.  The ABI is kmod/uapi/multicall_kmod.h;
 * the design, the safety rules and their reasons are in docs/KMOD.md.
 *
 * Calls are dispatched through the kernel's own dispatcher (x64_sys_call,
 * or the read-only sys_call_table on kernels without it) with a pt_regs
 * built per entry; nothing is patched.
 */
#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/kprobes.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/timekeeping.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/seccomp.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <asm/ptrace.h>
#include <asm/syscall.h>
#include <asm/unistd.h>

#include "uapi/multicall_kmod.h"
#include "mc_rules.h"

#define CREATE_TRACE_POINTS
#include "multicall_trace.h"

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("syscluster multi-call: many system calls, one crossing");

/* From <multicall.h>: call flags and loop conditions. */
#define MC_CHECK (1u << 0)
#define MC_PREDICT (1u << 1)
#define MC_CALL_FLAGS (MC_CHECK | MC_PREDICT)
#define MC_WHILE_LE 5u /* the last loop condition of <multicall.h> */

static_assert(sizeof(struct mc_kmod_call) == 80);

typedef long (*mc_dispatch_fn)(const struct pt_regs *, unsigned int);
typedef long (*mc_table_fn)(const struct pt_regs *);

static mc_dispatch_fn mc_x64_sys_call;
static const mc_table_fn *mc_sys_call_table;

/* ---- validation --------------------------------------------------------- */

static bool predictable(long nr)
{
	return nr == __NR_read || nr == __NR_write || nr == __NR_pread64 || nr == __NR_pwrite64;
}

static int validate(const struct mc_kmod_call *c, unsigned int n, bool loop)
{
	unsigned int i, j;

	for (i = 0; i < n; i++) {
		if (c[i].flags & ~MC_CALL_FLAGS)
			return -EINVAL;
		if (mc_refused(&c[i]))
			return -EINVAL;
		if ((c[i].flags & MC_PREDICT) && !predictable(c[i].nr))
			return -EINVAL;
		for (j = 0; j < 6; j++) {
			unsigned int r = c[i].ref[j];

			if (!r)
				continue;
			/* Earlier calls; in a loop also later ones (loop-carried). */
			if (loop ? r > n : r > i)
				return -EINVAL;
		}
	}
	return 0;
}

/* ---- execution ---------------------------------------------------------- */

static long arg_of(const struct mc_kmod_call *c, const struct mc_kmod_call *cl, unsigned int j)
{
	return cl->ref[j] ? c[cl->ref[j] - 1].result : cl->args[j];
}

/* One call through the kernel's own dispatcher, with the module's
 * tracepoints around it (what the recorder sees of it). */
static __always_inline long mc_call(long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
	struct pt_regs regs = {};
	long ret;

	regs.di = a0;
	regs.si = a1;
	regs.dx = a2;
	regs.r10 = a3;
	regs.r8 = a4;
	regs.r9 = a5;
	regs.orig_ax = nr;
	regs.ax = -ENOSYS;
	trace_mc_enter(nr, a0, a1, a2, a3, a4, a5);
	if (nr < 0 || nr >= NR_syscalls)
		ret = -ENOSYS; /* as the syscall instruction answers */
	else if (mc_x64_sys_call)
		ret = mc_x64_sys_call(&regs, (unsigned int)nr);
	else
		ret = mc_sys_call_table[nr](&regs);
	trace_mc_exit(nr, ret);
	return ret;
}

static bool is_restart(long r)
{
	return r == -ERESTARTSYS || r == -ERESTARTNOINTR || r == -ERESTARTNOHAND ||
	       r == -ERESTART_RESTARTBLOCK;
}

/* What one MC_IOC_RUN works on. */
struct mc_prog {
	struct mc_kmod_run hdr;
	struct mc_kmod_call *c;
	struct mc_kmod_call __user *uc;
	unsigned int n;
	bool resume_block; /* call hdr.next was cut by a signal inside a restart block */
};

static int put_result(struct mc_prog *p, unsigned int i)
{
	return put_user(p->c[i].result, &p->uc[i].result) ? -EFAULT : 0;
}

static int cancel_rest(struct mc_prog *p, unsigned int from, unsigned int to)
{
	unsigned int k;

	for (k = from; k < to; k++) {
		p->c[k].result = -ECANCELED;
		if (put_result(p, k))
			return -EFAULT;
	}
	return 0;
}

/*
 * One entry, its arguments known (the generic path's and every specialized
 * path's).  Returns 0 to go on, 1 when call i is checked and failed, or a
 * value to hand back at once: a restart code (hdr.next says where to
 * resume) or -EFAULT.  A pending signal stops the run only between two
 * calls ('first': no call ran yet in this crossing).  An inner call cut by
 * a signal never leaks and never re-runs the calls before i: the ioctl is
 * restarted at i, or call i gets EINTR.  put: write the result back now
 * (else the caller writes every result back when the run ends).
 */
static __always_inline long step(struct mc_prog *p, unsigned int i, bool put, bool *first, long nr, long a0,
				 long a1, long a2, long a3, long a4, long a5)
{
	long r;

	if (!*first && signal_pending(current)) {
		p->hdr.next = i;
		return -ERESTARTNOINTR;
	}
	if (unlikely(p->resume_block)) {
		struct restart_block *rb = &current->restart_block;

		p->resume_block = false;
		r = rb->fn(rb);
	} else {
		r = mc_call(nr, a0, a1, a2, a3, a4, a5);
	}
	*first = false;
	if (unlikely(is_restart(r))) {
		p->hdr.next = i;
		if (r == -ERESTART_RESTARTBLOCK) {
			p->hdr.flags |= MC_KRUN_RESUME;
			return -ERESTARTNOHAND;
		}
		return r;
	}
	p->c[i].result = r;
	if (put && put_result(p, i))
		return -EFAULT;
	if (r < 0 && (p->c[i].flags & MC_CHECK))
		return 1;
	cond_resched();
	return 0;
}

/*
 * Runs calls [i, end) of the current iteration.  Returns 0 when they all
 * ran or a checked one failed (*stop is its index, else end), or a value
 * to hand back to user space at once: a restart code (hdr.next says where
 * to resume) or -EFAULT.  'first' is whether no call ran yet in this
 * crossing: a pending signal stops the run only between two calls.
 */
static long run_span(struct mc_prog *p, unsigned int i, unsigned int end, unsigned int *stop, bool *first)
{
	for (; i < end; i++) {
		const struct mc_kmod_call *cl = &p->c[i];
		long r = step(p, i, true, first, cl->nr, arg_of(p->c, cl, 0), arg_of(p->c, cl, 1), arg_of(p->c, cl, 2),
			      arg_of(p->c, cl, 3), arg_of(p->c, cl, 4), arg_of(p->c, cl, 5));

		if (r < 0)
			return r;
		if (r > 0) {
			*stop = i;
			return 0;
		}
	}
	*stop = end;
	return 0;
}

static long run_plain(struct mc_prog *p)
{
	unsigned int stop;
	bool first = true;
	long r = run_span(p, p->hdr.next, p->n, &stop, &first);

	if (r)
		return r;
	if (stop < p->n && cancel_rest(p, stop + 1, p->n))
		return -EFAULT;
	return stop;
}

/* Where a looped run starts: at hdr.next, or in its first crossing at the
 * first call of the first iteration. */
static unsigned int loop_start(struct mc_prog *p)
{
	if (p->hdr.iterations == 0) {
		p->hdr.iterations = 1;
		return 0;
	}
	return p->hdr.next;
}

static long run_loop(struct mc_prog *p)
{
	const struct mc_kmod_loop *l = &p->hdr.loop;
	unsigned int i = loop_start(p), stop;
	bool first = true;
	long r;

	for (;;) {
		if (i <= l->call) {
			r = run_span(p, i, l->call + 1, &stop, &first);
			if (r)
				return r;
			if (stop <= l->call) {
				if (cancel_rest(p, stop + 1, p->n))
					return -EFAULT;
				return stop;
			}
			if (!mc_loop_goes_on(l->cond, l->value, p->c[l->call].result)) {
				if (cancel_rest(p, l->call + 1, p->n))
					return -EFAULT;
				return p->n;
			}
			i = l->call + 1;
		}
		r = run_span(p, i, p->n, &stop, &first);
		if (r)
			return r;
		if (stop < p->n) {
			if (cancel_rest(p, stop + 1, p->n))
				return -EFAULT;
			return stop;
		}
		if (p->hdr.iterations >= l->max_iterations)
			return p->n;
		p->hdr.iterations++;
		i = 0;
	}
}

/* ---- specialized multi-calls (seed 000 §3.4, seed 004 §4.2) -------------
 *
 * For shapes that recur -- the copy loop, select then the time of day --
 * the program's shape is recognized once, after validation, and a run of
 * straight-line code of its own replaces the interpreter: no reference is
 * resolved per entry (the copy loop's write takes the read's result
 * directly), no register file is read from the program, and the copy
 * loop's results are written back once when the run ends instead of after
 * every call.  Value specialization: the copy loop's block size is folded
 * as a constant where it is the seed's value profile's (4096 bytes), under
 * a guard -- every other value runs the same loop with the size as read.
 * Each call is still the kernel's own (dispatched as the generic path
 * does), with the same signal, restart, check and tracepoint rules, so the
 * results are the generic path's; only the interpreter around the calls is
 * specialized.  kmod-gen (syscluster kmod-gen, docs/KMOD.md) writes more of
 * these from a plan, into mc_plan.h.
 */
#define MC_SPEC_BLOCK 4096 /* the copy loop's block in the seed's value profile */

/* Runs of each path since the module loaded (read-only parameters in
 * /sys/module/multicall/parameters/: the tests check which path ran). */
static atomic_long_t mc_runs_generic, mc_runs_copy, mc_runs_copy_block, mc_runs_select_time, mc_runs_plan;

static int mc_stat_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%ld\n", atomic_long_read((atomic_long_t *)kp->arg));
}

static const struct kernel_param_ops mc_stat_ops = { .get = mc_stat_get };
module_param_cb(runs_generic, &mc_stat_ops, &mc_runs_generic, 0444);
module_param_cb(runs_copy, &mc_stat_ops, &mc_runs_copy, 0444);
module_param_cb(runs_copy_block, &mc_stat_ops, &mc_runs_copy_block, 0444);
module_param_cb(runs_select_time, &mc_stat_ops, &mc_runs_select_time, 0444);
module_param_cb(runs_plan, &mc_stat_ops, &mc_runs_plan, 0444);

static bool only_refs(const struct mc_kmod_call *c, unsigned int j, unsigned int to)
{
	unsigned int k;

	for (k = 0; k < 6; k++)
		if (c->ref[k] != (k == j ? to : 0))
			return false;
	return true;
}

/* The copy loop, both forms: A {read, write(ref read)} tested on the read
 * (fig. 5), B {write(ref read, loop-carried), read} (rotated, §3.3.3);
 * going on while the read returns more than 0.  Returns the read's index,
 * or -1. */
static int copy_shape(const struct mc_prog *p, bool loop)
{
	const struct mc_kmod_call *c = p->c;
	unsigned int ri, wi;

	if (!loop || p->n != 2 || p->hdr.loop.cond != 0 /* MC_WHILE_GT */ || p->hdr.loop.value != 0)
		return -1;
	ri = p->hdr.loop.call;
	wi = 1 - ri;
	if (c[ri].nr != __NR_read || c[wi].nr != __NR_write || !only_refs(&c[ri], 6, 0) ||
	    !only_refs(&c[wi], 2, ri + 1) || c[wi].args[1] != c[ri].args[1])
		return -1;
	return ri;
}

/* Whether [a, a + alen) and [b, b + blen) may share a byte (an overflowing
 * range counts as sharing). */
static bool overlaps(u64 a, u64 alen, u64 b, u64 blen)
{
	if (a + alen < a || b + blen < b)
		return true;
	return a < b + blen && b < a + alen;
}

/* The copy loop's body, bs folded where the caller passes a constant. */
static __always_inline long run_copy(struct mc_prog *p, unsigned int ri, long bs)
{
	const unsigned int wi = 1 - ri;
	const long in = p->c[ri].args[0], out = p->c[wi].args[0], buf = p->c[ri].args[1];
	const u64 max = p->hdr.loop.max_iterations;
	unsigned int i = loop_start(p);
	bool first = true;
	long r;

	for (;;) {
		for (; i < 2; i++) {
			if (i == ri)
				r = step(p, ri, false, &first, __NR_read, in, buf, bs, 0, 0, 0);
			else
				r = step(p, wi, false, &first, __NR_write, out, buf, p->c[ri].result, 0, 0, 0);
			if (r < 0)
				return r;
			if (r > 0) {
				if (i == 0)
					p->c[1].result = -ECANCELED;
				return i;
			}
			if (i == ri && p->c[ri].result <= 0) {
				if (ri == 0)
					p->c[1].result = -ECANCELED;
				return 2;
			}
		}
		if (p->hdr.iterations >= max)
			return 2;
		p->hdr.iterations++;
		i = 0;
	}
}

static long spec_copy(struct mc_prog *p, unsigned int ri)
{
	const long bs = p->c[ri].args[2];
	long ret;

	if (bs == MC_SPEC_BLOCK) {
		atomic_long_inc(&mc_runs_copy_block);
		ret = run_copy(p, ri, MC_SPEC_BLOCK);
	} else {
		atomic_long_inc(&mc_runs_copy);
		ret = run_copy(p, ri, bs);
	}
	/* The results, written back once (the caller checked that no call
	 * writes into the array and that the array is writable). */
	if (ret != -EFAULT && (put_result(p, 0) || put_result(p, 1)))
		return -EFAULT;
	return ret;
}

/* select, checked, then gettimeofday(tv, NULL): mpeg_play's cluster. */
static bool select_time_shape(const struct mc_prog *p, bool loop)
{
	const struct mc_kmod_call *c = p->c;

	return !loop && p->n == 2 && c[0].nr == __NR_select && c[1].nr == __NR_gettimeofday &&
	       (c[0].flags & MC_CHECK) && only_refs(&c[0], 6, 0) && only_refs(&c[1], 6, 0) && c[1].args[1] == 0;
}

/* gettimeofday(tv, NULL), inlined: what the kernel's own does, with the
 * tracepoints a dispatched call fires. */
static long time_of_day(long tv)
{
	struct __kernel_old_timeval __user *utv = (void __user *)tv;
	struct timespec64 ts;
	long r = 0;

	trace_mc_enter(__NR_gettimeofday, tv, 0, 0, 0, 0, 0);
	if (utv) {
		ktime_get_real_ts64(&ts);
		if (put_user(ts.tv_sec, &utv->tv_sec) || put_user(ts.tv_nsec / 1000, &utv->tv_usec))
			r = -EFAULT;
	}
	trace_mc_exit(__NR_gettimeofday, r);
	return r;
}

static long spec_select_time(struct mc_prog *p)
{
	const struct mc_kmod_call *c = p->c;
	bool first = true;
	long r;

	atomic_long_inc(&mc_runs_select_time);
	if (p->hdr.next == 0) {
		r = step(p, 0, true, &first, __NR_select, c[0].args[0], c[0].args[1], c[0].args[2],
			      c[0].args[3], c[0].args[4], c[0].args[5]);
		if (r < 0)
			return r;
		if (r > 0) {
			p->c[1].result = -ECANCELED;
			return put_result(p, 1) ? -EFAULT : 0;
		}
		if (signal_pending(current)) {
			p->hdr.next = 1;
			return -ERESTARTNOINTR;
		}
	}
	p->c[1].result = time_of_day(c[1].args[0]);
	if (put_result(p, 1))
		return -EFAULT;
	return p->c[1].result < 0 && (c[1].flags & MC_CHECK) ? 1 : 2;
}

#ifdef MC_PLAN
/* Call b ended the run (a checked call failed, or the loop's test said
 * stop): the calls after it get -ECANCELED.  Returns b, or -EFAULT. */
static long mc_spec_stop(struct mc_prog *p, unsigned int b)
{
	return cancel_rest(p, b + 1, p->n) ? -EFAULT : b;
}

#include "mc_plan.h" /* written by syscluster kmod-gen: mc_plan_run() */
#endif

/* The program through a specialized path where one fits; *taken says
 * whether one did. */
static long run_special(struct mc_prog *p, bool loop, bool *taken)
{
	int ri;

	*taken = true;
#ifdef MC_PLAN
	{
		long r = mc_plan_run(p, loop, taken);

		if (*taken) {
			atomic_long_inc(&mc_runs_plan);
			return r;
		}
		*taken = true;
	}
#endif
	ri = copy_shape(p, loop);
	if (ri >= 0 && !p->resume_block && !overlaps(p->c[ri].args[1], p->c[ri].args[2], (u64)p->uc,
						    p->n * sizeof(*p->c)) && !put_result(p, 0) && !put_result(p, 1))
		return spec_copy(p, ri);
	if (select_time_shape(p, loop) && !p->resume_block)
		return spec_select_time(p);
	*taken = false;
	return 0;
}

static long mc_ioctl_run(struct mc_kmod_run __user *uhdr)
{
	struct mc_prog p = {};
	long ret;
	bool loop, taken;

	if (copy_from_user(&p.hdr, uhdr, sizeof(p.hdr)))
		return -EFAULT;
	if (p.hdr.abi != MC_KMOD_ABI)
		return -EINVAL;
	if (p.hdr.flags & ~(MC_KRUN_FLAGS | MC_KRUN_RESUME))
		return -EINVAL;
	if (p.hdr.n == 0 || p.hdr.n > MC_KMOD_MAX_CALLS || p.hdr.next >= p.hdr.n)
		return -EINVAL;
	loop = p.hdr.flags & MC_KRUN_LOOP;
	if (loop && (p.hdr.loop.call >= p.hdr.n || p.hdr.loop.cond > MC_WHILE_LE ||
		     p.hdr.loop.max_iterations == 0 || p.hdr.iterations > p.hdr.loop.max_iterations))
		return -EINVAL;
	if (!loop && p.hdr.iterations)
		return -EINVAL;
	/* The caller's seccomp filter would have to judge every call; a module
	 * cannot run it per entry, so a filtered caller is refused. */
	if (READ_ONCE(current->seccomp.mode) != SECCOMP_MODE_DISABLED)
		return -EPERM;
	p.n = p.hdr.n;
	p.uc = u64_to_user_ptr(p.hdr.calls);
	p.c = kvmalloc_array(p.n, sizeof(*p.c), GFP_KERNEL);
	if (!p.c)
		return -ENOMEM;
	ret = -EFAULT;
	if (copy_from_user(p.c, p.uc, p.n * sizeof(*p.c)))
		goto out;
	ret = validate(p.c, p.n, loop);
	if (ret)
		goto out;
	p.resume_block = p.hdr.flags & MC_KRUN_RESUME;
	p.hdr.flags &= ~MC_KRUN_RESUME;
	ret = run_special(&p, loop, &taken);
	if (!taken) {
		atomic_long_inc(&mc_runs_generic);
		ret = loop ? run_loop(&p) : run_plain(&p);
	}
	if (ret == -EFAULT)
		goto out;
	/* Where the run stands, for a restart of this ioctl or the library. */
	if (copy_to_user(uhdr, &p.hdr, sizeof(p.hdr)))
		ret = -EFAULT;
out:
	kvfree(p.c);
	return ret;
}

static long mc_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	switch (cmd) {
	case MC_IOC_VERSION:
		return MC_KMOD_ABI;
	case MC_IOC_RUN:
		return mc_ioctl_run((struct mc_kmod_run __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations mc_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = mc_ioctl,
	.compat_ioctl = NULL, /* 64-bit callers only: the ABI holds 64-bit words */
	.llseek = noop_llseek,
};

static struct miscdevice mc_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "multicall",
	.fops = &mc_fops,
	.mode = 0666,
};

/* Neither dispatcher is exported, nor kallsyms_lookup_name: a kprobe on
 * the latter tells its address. */
static unsigned long lookup(const char *name)
{
	static unsigned long (*kln)(const char *);

	if (!kln) {
		struct kprobe kp = { .symbol_name = "kallsyms_lookup_name" };

		if (register_kprobe(&kp) < 0)
			return 0;
		kln = (void *)kp.addr;
		unregister_kprobe(&kp);
	}
	return kln ? kln(name) : 0;
}

static int __init mc_init(void)
{
	mc_x64_sys_call = (mc_dispatch_fn)lookup("x64_sys_call");
	if (!mc_x64_sys_call)
		mc_sys_call_table = (const mc_table_fn *)lookup("sys_call_table");
	if (!mc_x64_sys_call && !mc_sys_call_table) {
		pr_err("multicall: cannot find the system call dispatcher\n");
		return -ENOENT;
	}
	return misc_register(&mc_dev);
}

static void __exit mc_exit(void)
{
	misc_deregister(&mc_dev);
}

module_init(mc_init);
module_exit(mc_exit);
