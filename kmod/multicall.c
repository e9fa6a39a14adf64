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

static long dispatch(const struct mc_kmod_call *c, unsigned int i)
{
	const struct mc_kmod_call *cl = &c[i];
	struct pt_regs regs = {};
	long nr = cl->nr, ret;

	regs.di = arg_of(c, cl, 0);
	regs.si = arg_of(c, cl, 1);
	regs.dx = arg_of(c, cl, 2);
	regs.r10 = arg_of(c, cl, 3);
	regs.r8 = arg_of(c, cl, 4);
	regs.r9 = arg_of(c, cl, 5);
	regs.orig_ax = nr;
	regs.ax = -ENOSYS;
	trace_mc_enter(nr, regs.di, regs.si, regs.dx, regs.r10, regs.r8, regs.r9);
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
 * Runs calls [i, end) of the current iteration.  Returns 0 when they all
 * ran or a checked one failed (*stop is its index, else end), or a value
 * to hand back to user space at once: a restart code (hdr.next says where
 * to resume) or -EFAULT.  'first' is whether no call ran yet in this
 * crossing: a pending signal stops the run only between two calls.
 */
static long run_span(struct mc_prog *p, unsigned int i, unsigned int end, unsigned int *stop, bool *first)
{
	for (; i < end; i++) {
		long r;

		if (!*first && signal_pending(current)) {
			p->hdr.next = i;
			return -ERESTARTNOINTR; /* delivered, then the run goes on at i */
		}
		if (p->resume_block) {
			struct restart_block *rb = &current->restart_block;

			p->resume_block = false;
			r = rb->fn(rb);
		} else {
			r = dispatch(p->c, i);
		}
		*first = false;
		if (unlikely(is_restart(r))) {
			/* Never leaks and never re-runs the calls before i: the
			 * ioctl is restarted at i, or call i gets EINTR. */
			p->hdr.next = i;
			if (r == -ERESTART_RESTARTBLOCK) {
				p->hdr.flags |= MC_KRUN_RESUME;
				return -ERESTARTNOHAND;
			}
			return r;
		}
		p->c[i].result = r;
		if (put_result(p, i))
			return -EFAULT;
		if (r < 0 && (p->c[i].flags & MC_CHECK)) {
			*stop = i;
			return 0;
		}
		cond_resched();
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

static long run_loop(struct mc_prog *p)
{
	const struct mc_kmod_loop *l = &p->hdr.loop;
	unsigned int i = p->hdr.next, stop;
	bool first = true;
	long r;

	if (p->hdr.iterations == 0) {
		p->hdr.iterations = 1;
		i = 0;
	}
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

static long mc_ioctl_run(struct mc_kmod_run __user *uhdr)
{
	struct mc_prog p = {};
	long ret;
	bool loop;

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
	ret = loop ? run_loop(&p) : run_plain(&p);
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
