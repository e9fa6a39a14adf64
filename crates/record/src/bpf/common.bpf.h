/* What both BPF programs share: settings, loss counters, and following the
 * recorded command's threads and processes.
 *
 * The including program defines TASK_STATE (a struct of syscluster.h whose
 * first member is `struct task_common c`) before it includes this file, and
 * on_new_task() after.
 * A task is recorded exactly when it has a TASK_STATE in the `tasks` task
 * storage: the absence of state is the filter, so untraced tasks pay one
 * lookup per event. */
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
#define BPF_LOCAL_STORAGE_GET_F_CREATE 1

/* Settings, filled in before load so that the verifier drops what is off. */
const volatile __u8 arg_info[NR_SLOTS] = {};
const volatile __u32 key_mode = KEY_FD;

struct abi abi_types = {};

/* Counters read by user space. */
__u64 lost[LOSS_N] = {};
/* Tasks recorded and still alive: user space waits for zero. */
__s64 live_tasks = 0;
/* Threads left out of the `threads` list (it was full). */
__u64 threads_unlisted = 0;

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, TASK_STATE);
} tasks SEC(".maps");

/* Children of recorded tasks that have not run yet: tid -> phase.  A
 * child's state can only be created in its own context (raw tracepoints get
 * no trusted pointer to it), so the parent registers it here and the child
 * adopts its state at its first event. */
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

/* Sets up a new task's state (defined by the including program). */
static __always_inline void init_state(TASK_STATE *st);

/* The state of the current task if it is recorded, adopting it if the task
 * is a child that has just started. */
static __always_inline TASK_STATE *task_state(struct task_struct *task)
{
	TASK_STATE *st = bpf_task_storage_get(&tasks, task, 0, 0);
	if (st || !unadopted)
		return st;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u8 *phase = bpf_map_lookup_elem(&children, &tid);
	if (!phase)
		return 0;
	__u8 p = *phase;
	bpf_map_delete_elem(&children, &tid);
	__sync_fetch_and_add(&unadopted, -1);
	st = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		count_loss(LOSS_UNTRACKED, 1);
		__sync_fetch_and_add(&live_tasks, -1);
		return 0;
	}
	st->c.phase = p;
	init_state(st);
	return st;
}

static __always_inline TASK_STATE *current_state(void)
{
	return task_state(bpf_get_current_task_btf());
}

/* Argument i of the current call; r from bpf_task_pt_regs (a BTF pointer,
 * so these are plain loads, not probe reads). */
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

/* Called in the parent's context for each new task (defined by the
 * including program). */
static __always_inline void on_new_task(struct task_struct *child);

/* A recorded task forks (fork, vfork, clone, clone3; threads and
 * processes): the child is recorded from its first event.  This runs before
 * the child is first woken. */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	TASK_STATE *pst = current_state();
	if (!pst)
		return 0;
	__u32 tid = BPF_CORE_READ(child, pid);
	__u8 phase = pst->c.phase;
	if (bpf_map_update_elem(&children, &tid, &phase, BPF_ANY)) {
		count_loss(LOSS_UNTRACKED, 1);
		return 0;
	}
	__sync_fetch_and_add(&unadopted, 1);
	__sync_fetch_and_add(&live_tasks, 1);
	on_new_task(child);
	return 0;
}

#endif
