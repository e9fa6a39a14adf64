/* Aggregate mode: the syscall graph built inside the kernel, per thread.
 *
 * Each thread keeps a small direct-mapped cache of edge counters in its
 * state; a call increments the counter of (previous node -> this node) and
 * its return adds its error to the same entry.  Node counts follow from the
 * edges (every call is the target of exactly one edge, a thread's first call
 * of one from NODE_START), so the hot path does no hash-map work.  An entry
 * goes to the global `edges` map when it is evicted and when its thread
 * exits.  Time in the kernel is measured on a random sample of the calls
 * (the first TIME_FIRST of each entry, then one in TIME_MASK + 1): reading
 * the clock twice per call would cost more than everything else here. */
#define TASK_STATE struct agg_task
#include "common.bpf.h"
#include "unwind.bpf.h"

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

/* Callsite keys: code location -> id (from 1). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 16);
	__type(key, struct site);
	__type(value, struct site_id);
} sites SEC(".maps");

__u32 next_site = 0;

/* The id of code location s; 0 when `sites` is full. */
static __noinline __u32 site_id(struct site *s)
{
	if (!s)
		return 0;
	struct site_id *v = bpf_map_lookup_elem(&sites, s);
	if (v)
		return v->id;
	struct site_id n = { .id = __sync_fetch_and_add(&next_site, 1) + 1 };
	if (!bpf_map_update_elem(&sites, s, &n, BPF_NOEXIST))
		return n.id;
	v = bpf_map_lookup_elem(&sites, s); /* another CPU added it */
	return v ? v->id : 0;
}

static __always_inline void note_thread(__u32 tid, __u32 pid)
{
	if (bpf_map_update_elem(&threads, &tid, &pid, BPF_ANY))
		__sync_fetch_and_add(&threads_unlisted, 1);
}

static __always_inline void init_state(struct agg_task *st)
{
	__u64 id = bpf_get_current_pid_tgid();
	note_thread((__u32)id, id >> 32);
	st->prev = NODE_START;
	st->rng = bpf_get_prandom_u32() | 1;
	st->c.timed = 0;
	vma_cache_init(&st->vmas);
	st->last_site_id = 0;
}

/* Moves a cache entry's counts to `edges`, leaving it empty. */
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
	}
	if (v) {
		__sync_fetch_and_add(&v->count, e->count);
		__sync_fetch_and_add(&v->errors, e->errors);
		__sync_fetch_and_add(&v->timed, e->timed);
		__sync_fetch_and_add(&v->kernel_ns, e->kernel_ns);
		__sync_fetch_and_add(&v->blocked_ns, e->blocked_ns);
	} else {
		count_loss(LOSS_MAP_FULL, e->count);
	}
	e->count = 0;
	e->errors = 0;
	e->timed = 0;
	e->kernel_ns = 0;
	e->blocked_ns = 0;
}

/* The key of call nr; its descriptor from args when given (a call the
 * kernel module runs: multicall:mc_enter's arguments), else from the
 * registers at regs. */
static __always_inline __u64 node_key(struct agg_task *st, __u64 regs, long nr, const __u64 *args)
{
	if (nr < 0 || nr >= (long)KEY_NR_MASK)
		return KEY_NR_MASK;
	__u64 key = nr;
	if (key_mode == KEY_CALLSITE && capture_sites) {
		struct site s = {};
		__u32 id = 0;
		int found = find_callsite(&st->vmas, regs, &s);
		if (!found) {
			if (st->last_site_id && s.off == st->last_site.off && s.ino == st->last_site.ino &&
			    s.dev == st->last_site.dev && s.call_off == st->last_site.call_off) {
				id = st->last_site_id;
			} else {
				id = site_id(&s);
				st->last_site = s;
				st->last_site_id = id;
			}
		}
		if (id)
			key |= KEY_HAS_SITE | ((__u64)id << KEY_ARG_SHIFT);
		else if (found != 1) /* failed, or `sites` is full */
			count_loss(LOSS_CALLSITE, 1);
	}
	if (key_mode == KEY_FD && nr < NR_SLOTS) {
		__u8 info = arg_info[nr];
		if (info & ARG_FD_MASK) {
			__u32 i = (info & ARG_FD_MASK) - 1;
			__u64 fd = args ? args[i < 6 ? i : 5] : reg_arg(regs_at(regs), i);
			if (!(info & ARG_FD_DIRFD) || (__s32)fd != -100 /* AT_FDCWD */) {
				key |= KEY_HAS_FD | (fd << KEY_ARG_SHIFT);
				if ((fd >> 32) == 0xffffffff)
					key |= KEY_FD_HIGH;
			}
		}
	}
	return key;
}

/* Counts a call of key on the edge from the thread's previous call. */
static __always_inline void count_call(struct agg_task *st, __u64 key)
{
	__u64 prev = st->prev;
	__u32 h = ((prev * 0x9E3779B97F4A7C15ULL) ^ (key * 0xC2B2AE3D27D4EB4FULL)) >> CACHE_SHIFT;
	struct edge_slot *e = &st->cache[h & (CACHE_SLOTS - 1)];
	if (e->from != prev || e->to != key) {
		flush(e);
		e->from = prev;
		e->to = key;
	}
	e->count++;
	st->prev = key;
	st->cur = h;
	st->c.pending = 1;
	__u32 r = st->rng;
	r ^= r << 13;
	r ^= r >> 17;
	r ^= r << 5;
	st->rng = r;
	if (e->count <= TIME_FIRST || !(r & TIME_MASK)) {
		st->c.timed = 1;
		clear_off_cpu(st);
		st->enter_ns = bpf_ktime_get_ns();
	}
}

/* The call in flight returned ret. */
static __always_inline void count_return(struct agg_task *st, long ret)
{
	struct edge_slot *e = &st->cache[st->cur & (CACHE_SLOTS - 1)];
	st->c.pending = 0;
	if (ret < 0)
		e->errors++;
	if (capture_sites && changes_mappings(e->to & KEY_NR_MASK))
		__sync_fetch_and_add(&maps_gen, 1);
	if (st->c.timed) {
		st->c.timed = 0;
		e->timed++;
		e->kernel_ns += bpf_ktime_get_ns() - st->enter_ns;
		e->blocked_ns += st->c.off_ns;
	}
}

SEC("raw_tp/sys_enter")
int on_enter(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 regs = ctx->args[0];
	long nr = ctx->args[1];
	struct agg_task *st = counting_state(regs, nr);
	if (!st)
		return 0;
	__u64 key = node_key(st, regs, nr, 0);
	if (capture_sites && changes_mappings(nr))
		__sync_fetch_and_add(&maps_gen, 1);
	count_call(st, key);
	return 0;
}

SEC("raw_tp/sys_exit")
int on_exit(struct bpf_raw_tracepoint_args *ctx)
{
	struct agg_task *st = task_state(ctx->args[0]);
	if (!st || !st->c.pending)
		return 0;
	note_setsid(st, ctx->args[0], ctx->args[1]);
	count_return(st, ctx->args[1]);
	return 0;
}

/*
 * The calls a multi-call runs inside the kernel module (kmod/:
 * multicall:mc_enter(nr, six arguments), mc_exit(nr, result)) pass no
 * syscall entry.  As in events mode, each is counted as a call of its own
 * at the ioctl's code location, in the ioctl's place: the ioctl that
 * carried them is taken back from its edge when its first inner call
 * enters.  Attached where the module is loaded (bpf/mod.rs, KmodProbes).
 */
SEC("raw_tp/mc_enter")
int on_mc_enter(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 regs = current_regs();
	struct agg_task *st = task_state(regs);
	if (!st || st->c.phase != PHASE_COUNTING)
		return 0;
	if (st->c.pending && (st->prev & KEY_NR_MASK) == __NR_ioctl) {
		struct edge_slot *e = &st->cache[st->cur & (CACHE_SLOTS - 1)];
		if (e->count && e->to == st->prev) {
			e->count--;
			st->prev = e->from;
		}
		st->c.timed = 0;
	}
	long nr = ctx->args[0];
	__u64 args[6];
	for (int i = 0; i < 6; i++)
		args[i] = ctx->args[i + 1];
	count_call(st, node_key(st, regs, nr, args));
	return 0;
}

SEC("raw_tp/mc_exit")
int on_mc_exit(struct bpf_raw_tracepoint_args *ctx)
{
	struct agg_task *st = task_state(current_regs());
	if (!st || !st->c.pending || (st->prev & KEY_NR_MASK) != (ctx->args[0] & KEY_NR_MASK))
		return 0;
	count_return(st, ctx->args[1]);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int on_task_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 regs = current_regs();
	struct agg_task *st = task_state(regs);
	if (!st)
		return 0;
	for (int i = 0; i < CACHE_SLOTS; i++)
		flush(&st->cache[i]);
	release_state(regs, st);
	return 0;
}
