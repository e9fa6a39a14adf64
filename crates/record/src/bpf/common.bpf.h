/* What both BPF programs share: settings, loss counters, and following the
 * recorded command's threads and processes.
 *
 * The including program defines TASK_STATE (a struct of syscluster.h whose
 * first member is `struct task_common c`) before it includes this file, and
 * init_state() after.
 * A task is recorded exactly when it holds a TASK_STATE (see `slots`). */
#ifndef COMMON_BPF_H
#define COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "syscluster.h"

char LICENSE[] SEC("license") = "GPL";

#define __NR_execve 59
#define __NR_execveat 322
#define __NR_setsid 112
#define __NR_ioctl 16 /* the kernel module's multi-calls arrive in one (kmod/) */

/* Settings, filled in before load so that the verifier drops what is off. */
const volatile __u8 arg_info[NR_SLOTS] = {};
const volatile __u32 key_mode = KEY_FD;
/* `slots` has 1 << slots_log2 entries (set before load, with its size). */
const volatile __u32 slots_log2 = TASK_SLOTS_LOG2;

struct abi abi_types = {};

/* Counters read by user space. */
__u64 lost[LOSS_N] = {};
/* Tasks recorded and still alive: user space waits for zero. */
__s64 live_tasks = 0;
/* Those of them that are detached (a daemon's setsid): user space does not
 * wait for them unless asked to. */
__s64 live_detached = 0;
/* Threads left out of the `threads` list (it was full). */
__u64 threads_unlisted = 0;

/* Recorded tasks' states.  A task is found by its pt_regs pointer, which
 * the raw tracepoints get as their first argument and which is unique to
 * each live task (the top of its kernel stack): `slots` is an array indexed
 * by a hash of it, so the hot path finds its state with no helper call (task
 * storage costs two: the task, then the storage with its recursion guard).
 * A slot's owner is the pt_regs address of the task holding it; tasks whose
 * slot is taken go to `spill`.  An untraced task pays one array load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TASK_SLOTS);
	__type(key, __u32);
	__type(value, TASK_STATE);
} slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 14);
	__type(key, __u64);
	__type(value, TASK_STATE);
} spill SEC(".maps");

/* A zeroed state, the initial value of `spill` entries. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, TASK_STATE);
} blank SEC(".maps");

/* Entries of `spill`: while zero, nobody looks there. */
__s64 spilled = 0;

/* Tasks to record that have not run yet, tid -> phase: the command at its
 * gate (put here by user space) and children of recorded tasks (by
 * on_fork).  A task's state can only be created in its own context, where
 * its pt_regs address is known, so it adopts its entry at its first event. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 14);
	__type(key, __u32);
	__type(value, __u8);
} children SEC(".maps");

/* Entries of `children`: while zero, untraced tasks skip the lookup. */
__s64 unadopted = 0;

static __always_inline void count_loss(__u32 cause, __u64 n)
{
	if (cause < LOSS_N)
		__sync_fetch_and_add(&lost[cause], n);
}

/* Sets up a newly adopted task's state, which may hold what a previous
 * owner of the slot left (defined by the including program). */
static __always_inline void init_state(TASK_STATE *st);

static __always_inline __u32 slot_of(__u64 regs)
{
	if (!slots_log2) /* one slot (tests use it to exercise `spill`) */
		return 0;
	return ((regs >> 12) * 0x9E3779B97F4A7C15ULL) >> (64 - (slots_log2 & 31));
}

/* The state of the task whose pt_regs are at `regs`, if it is recorded. */
static __always_inline TASK_STATE *lookup_state(__u64 regs)
{
	__u32 i = slot_of(regs);
	TASK_STATE *st = bpf_map_lookup_elem(&slots, &i);
	if (st && st->c.owner == regs)
		return st;
	if (spilled)
		return bpf_map_lookup_elem(&spill, &regs);
	return 0;
}

/* The current task adopts the state it was registered for, if any. */
static __noinline TASK_STATE *adopt(__u64 regs)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u8 *phase = bpf_map_lookup_elem(&children, &tid);
	if (!phase)
		return 0;
	__u8 p = *phase & ~PHASE_DETACHED;
	__u8 detached = (*phase & PHASE_DETACHED) != 0;
	bpf_map_delete_elem(&children, &tid);
	__sync_fetch_and_add(&unadopted, -1);
	__u32 i = slot_of(regs);
	TASK_STATE *st = bpf_map_lookup_elem(&slots, &i);
	if (!st)
		return 0;
	if (__sync_val_compare_and_swap(&st->c.owner, 0, regs) == 0) {
		st->c.spilled = 0;
	} else {
		__u32 zero = 0;
		TASK_STATE *b = bpf_map_lookup_elem(&blank, &zero);
		st = 0;
		if (b && !bpf_map_update_elem(&spill, &regs, b, BPF_NOEXIST))
			st = bpf_map_lookup_elem(&spill, &regs);
		if (!st) {
			count_loss(LOSS_UNTRACKED, 1);
			__sync_fetch_and_add(&live_tasks, -1);
			if (detached)
				__sync_fetch_and_add(&live_detached, -1);
			return 0;
		}
		__sync_fetch_and_add(&spilled, 1);
		st->c.owner = regs;
		st->c.spilled = 1;
	}
	st->c.phase = p;
	st->c.detached = detached;
	st->c.pending = 0;
	st->c.gap = 0;
	init_state(st);
	return st;
}

/* The state of the current task (pt_regs at `regs`) if it is recorded. */
static __always_inline TASK_STATE *task_state(__u64 regs)
{
	TASK_STATE *st = lookup_state(regs);
	if (st || !unadopted)
		return st;
	return adopt(regs);
}

/* The state of the current task (pt_regs at `regs`) entering call `nr`, if
 * it is recorded and counting: a task waiting at its gate starts counting
 * at its execve. */
static __always_inline TASK_STATE *counting_state(__u64 regs, long nr)
{
	TASK_STATE *st = task_state(regs);
	if (!st)
		return 0;
	if (st->c.phase != PHASE_COUNTING) {
		if (nr != __NR_execve && nr != __NR_execveat)
			return 0;
		st->c.phase = PHASE_COUNTING;
	}
	return st;
}

/* Where kernels before 6.2 (no bpf_rdonly_cast: Debian 12's 6.1, the
 * kernel module's guest) get a copy of the pt_regs: one per CPU, as raw
 * tracepoint programs do not migrate (CPUs past REGS_COPIES share). */
#define REGS_COPIES 256
struct pt_regs regs_copy[REGS_COPIES] = {};

/* The pt_regs at `regs`, readable with plain loads: bpf_rdonly_cast costs
 * nothing at run time (the verifier turns it into a move), where a probe
 * read is a helper call.  Without the kfunc (6.1) the branch is dead code
 * to the verifier, and the probe read it is. */
static __always_inline struct pt_regs *regs_at(__u64 regs)
{
	if (bpf_ksym_exists(bpf_rdonly_cast))
		return bpf_core_cast((void *)regs, struct pt_regs);
	struct pt_regs *copy = &regs_copy[bpf_get_smp_processor_id() & (REGS_COPIES - 1)];
	if (bpf_probe_read_kernel(copy, sizeof(*copy), (void *)regs))
		__builtin_memset(copy, 0, sizeof(*copy));
	return copy;
}

/* Argument i of the current call. */
static __always_inline __u64 reg_arg(struct pt_regs *r, __u32 i)
{
	switch (i) {
	case 0: return r->di;
	case 1: return r->si;
	case 2: return r->dx;
	case 3: return r->r10;
	case 4: return r->r8;
	default: return r->r9;
	}
}

/* The current task's pt_regs address, where no tracepoint argument has it. */
static __always_inline __u64 current_regs(void)
{
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	__u64 v = 0;
	/* Copied, not cast: the verifier allows no arithmetic on the pointer. */
	bpf_probe_read_kernel(&v, sizeof(v), &r);
	return v;
}

/* The current task ends: its state is freed, after `done` saw it last. */
static __always_inline void release_state(__u64 regs, TASK_STATE *st)
{
	if (st->c.spilled) {
		bpf_map_delete_elem(&spill, &regs);
		__sync_fetch_and_add(&spilled, -1);
	} else {
		st->c.owner = 0;
	}
	__sync_fetch_and_add(&live_tasks, -1);
	if (st->c.detached)
		__sync_fetch_and_add(&live_detached, -1);
}

/* The call the current task (pt_regs at `regs`) returns from is a
 * successful setsid: from now on it, and the tasks it starts, are detached. */
static __always_inline void note_setsid(TASK_STATE *st, __u64 regs, long ret)
{
	if (ret > 0 && !st->c.detached && regs_at(regs)->orig_ax == __NR_setsid) {
		st->c.detached = 1;
		__sync_fetch_and_add(&live_detached, 1);
	}
}

/* The pt_regs address of `task`, the key of its state. */
static __always_inline __u64 task_regs(struct task_struct *task)
{
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 v = 0;
	bpf_probe_read_kernel(&v, sizeof(v), &r);
	return v;
}

/* A call's start: nothing of it was spent off the CPU yet. */
static __always_inline void clear_off_cpu(TASK_STATE *st)
{
	st->c.off_at = 0;
	st->c.off_ns = 0;
}

/* A context switch: a recorded task leaving the CPU inside a call notes
 * when; one coming back adds the time it was away to its call's time off
 * the CPU (blocked, or waiting to run again). Time blocked is not time
 * the kernel worked for the call. */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = 0;
	TASK_STATE *st = lookup_state(task_regs(prev));
	if (st && st->c.pending) {
		now = bpf_ktime_get_ns();
		st->c.off_at = now;
	}
	st = lookup_state(task_regs(next));
	if (st && st->c.off_at) {
		if (!now)
			now = bpf_ktime_get_ns();
		st->c.off_ns += now - st->c.off_at;
		st->c.off_at = 0;
	}
	return 0;
}

/* A recorded task forks (fork, vfork, clone, clone3; threads and
 * processes): the child is recorded from its first event.  This runs before
 * the child is first woken. */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	TASK_STATE *pst = task_state(current_regs());
	if (!pst)
		return 0;
	__u32 tid = BPF_CORE_READ(child, pid);
	__u8 phase = pst->c.phase | (pst->c.detached ? PHASE_DETACHED : 0);
	if (bpf_map_update_elem(&children, &tid, &phase, BPF_ANY)) {
		count_loss(LOSS_UNTRACKED, 1);
		return 0;
	}
	__sync_fetch_and_add(&unadopted, 1);
	__sync_fetch_and_add(&live_tasks, 1);
	if (pst->c.detached)
		__sync_fetch_and_add(&live_detached, 1);
	return 0;
}

#endif
