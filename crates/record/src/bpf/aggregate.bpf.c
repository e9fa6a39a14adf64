/* Aggregate mode: the syscall graph built inside the kernel, per thread.
 *
 * Each thread keeps a small direct-mapped cache of edge counters in its task
 * storage; a call increments the counter of (previous node -> this node) and
 * its return adds the time in the kernel and the error to the same entry.
 * Node counts follow from the edges (every call is the target of exactly one
 * edge, a thread's first call of one from NODE_START), so the hot path does
 * no hash-map work at all.  An entry goes to the global `edges` map when it
 * is evicted and when its thread exits. */
#define TASK_STATE struct agg_task
#include "common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 16);
	__type(key, struct edge_key);
	__type(value, struct edge_val);
} edges SEC(".maps");

/* Every recorded thread: tid -> pid. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 20);
	__type(key, __u32);
	__type(value, __u32);
} threads SEC(".maps");

static __always_inline void note_thread(__u32 tid, __u32 pid)
{
	if (bpf_map_update_elem(&threads, &tid, &pid, BPF_ANY))
		__sync_fetch_and_add(&threads_unlisted, 1);
}

static __always_inline void on_new_task(struct task_struct *child)
{
	note_thread(BPF_CORE_READ(child, pid), BPF_CORE_READ(child, tgid));
}

static __always_inline void init_state(struct agg_task *st)
{
	st->prev = NODE_START;
}

static __noinline void flush(struct edge_slot *e)
{
	if (!e || !e->count)
		return;
	struct edge_key k = { .from = e->from, .to = e->to };
	struct edge_val *v = bpf_map_lookup_elem(&edges, &k);
	if (!v) {
		struct edge_val zero = {};
		bpf_map_update_elem(&edges, &k, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&edges, &k);
		if (!v) {
			count_loss(LOSS_MAP_FULL, e->count);
			e->count = 0;
			return;
		}
	}
	__sync_fetch_and_add(&v->count, e->count);
	__sync_fetch_and_add(&v->errors, e->errors);
	__sync_fetch_and_add(&v->kernel_ns, e->kernel_ns);
	e->count = 0;
}

static __always_inline __u64 node_key(struct task_struct *task, long nr)
{
	if (nr < 0 || nr >= (long)KEY_NR_MASK)
		return KEY_NR_MASK;
	__u64 key = nr;
	if (key_mode == KEY_FD && nr < NR_SLOTS) {
		__u8 info = arg_info[nr];
		if (info & ARG_FD_MASK) {
			__u64 fd = reg_arg(bpf_task_pt_regs(task), (info & ARG_FD_MASK) - 1);
			key |= KEY_HAS_FD | (fd << KEY_ARG_SHIFT);
			if ((fd >> 32) == 0xffffffff)
				key |= KEY_FD_HIGH;
		}
	}
	return key;
}

SEC("raw_tp/sys_enter")
int on_enter(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct agg_task *st = task_state(task);
	if (!st)
		return 0;
	long nr = ctx->args[1];
	if (st->c.phase != PHASE_COUNTING) {
		if (nr != __NR_execve && nr != __NR_execveat)
			return 0;
		st->c.phase = PHASE_COUNTING;
		st->prev = NODE_START;
		__u64 id = bpf_get_current_pid_tgid();
		note_thread((__u32)id, id >> 32);
	}
	__u64 key = node_key(task, nr);
	__u64 prev = st->prev;
	__u32 h = ((prev * 0x9E3779B97F4A7C15ULL) ^ (key * 0xC2B2AE3D27D4EB4FULL)) >> CACHE_SHIFT;
	struct edge_slot *e = &st->cache[h & (CACHE_SLOTS - 1)];
	if (e->from != prev || e->to != key) {
		flush(e);
		e->from = prev;
		e->to = key;
		e->errors = 0;
		e->kernel_ns = 0;
	}
	e->count++;
	st->prev = key;
	st->cur = h;
	st->c.pending = 1;
	st->enter_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("raw_tp/sys_exit")
int on_exit(struct bpf_raw_tracepoint_args *ctx)
{
	struct agg_task *st = current_state();
	if (!st || !st->c.pending)
		return 0;
	st->c.pending = 0;
	struct edge_slot *e = &st->cache[st->cur & (CACHE_SLOTS - 1)];
	e->kernel_ns += bpf_ktime_get_ns() - st->enter_ns;
	if ((long)ctx->args[1] < 0)
		e->errors++;
	return 0;
}

SEC("raw_tp/sched_process_exit")
int on_task_exit(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct agg_task *st = task_state(task);
	if (!st)
		return 0;
	for (int i = 0; i < CACHE_SLOTS; i++)
		flush(&st->cache[i]);
	bpf_task_storage_delete(&tasks, task);
	__sync_fetch_and_add(&live_tasks, -1);
	return 0;
}
