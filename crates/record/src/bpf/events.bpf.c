/* Events mode: every call streamed to user space through a ring buffer.
 *
 * A call's entry is kept in its thread's state; one record per call
 * is written when it returns (or, for calls that never return, when the
 * thread exits).  Records are submitted without waking the consumer, which
 * polls on a timer; only a ring more than half full wakes it, so the
 * recorded program pays no wakeup (an IPI) per call. */
#define TASK_STATE struct ev_task
#include "common.bpf.h"
#include "unwind.bpf.h"

/* Force a wakeup when this many bytes wait in the ring (set to half its
 * size before load). */
const volatile __u64 wake_bytes = 1 << 20;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24); /* resized before load */
} events SEC(".maps");

/* mem_arg[nr]: bits 0-2 = index + 1 of the argument whose memory tells
 * what a descriptor is (a struct sockaddr, length in the next argument, read
 * at entry; with MEM_AT_EXIT an int[2] the call filled in, read at its
 * exit); it goes where a path would. */
#define MEM_AT_EXIT 8
const volatile __u8 mem_arg[NR_SLOTS] = {};

/* A record with its path. */
struct ev_record_path {
	struct ev_record r;
	char path[PATH_CAP];
};

static __always_inline void init_state(struct ev_task *st)
{
	st->path_len = 0;
	st->has_site = 0;
	vma_cache_init(&st->vmas);
}

/* Wake the consumer only when the ring fills past wake_bytes, looked at
 * every WAKE_CHECK records of a thread (the query is a helper call). */
#define WAKE_CHECK 64
static __always_inline __u64 wake_flag(struct ev_task *st)
{
	if (++st->emitted % WAKE_CHECK)
		return BPF_RB_NO_WAKEUP;
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wake_bytes ? BPF_RB_FORCE_WAKEUP
									   : BPF_RB_NO_WAKEUP;
}

static __always_inline void fill(struct ev_record *r, struct ev_task *st, __u64 id, long ret, __u8 flags,
				 __u64 now)
{
	r->kind = REC_CALL;
	r->flags = flags | (st->c.gap ? RF_GAP : 0);
	r->path_len = st->path_len;
	r->nr = st->nr;
	r->pid = id >> 32;
	r->tid = (__u32)id;
	r->ret = ret;
	for (int i = 0; i < 6; i++)
		r->args[i] = st->args[i];
	r->enter_ns = st->enter_ns;
	r->exit_ns = now;
	r->blocked_ns = st->c.off_ns;
	if (st->has_site) {
		r->site = st->site;
		r->flags |= RF_SITE;
	}
}

/* Emits the call in flight; `flags` has RF_RET when it returned `ret`. */
static __noinline void emit_call(struct ev_task *st, long ret, __u8 flags)
{
	if (!st)
		return;
	__u64 id = bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();
	st->c.pending = 0;
	if (st->path_len) {
		struct ev_record_path *rp = bpf_ringbuf_reserve(&events, sizeof(*rp), 0);
		if (!rp)
			goto lost;
		fill(&rp->r, st, id, ret, flags, now);
		__builtin_memcpy(rp->path, st->path, PATH_CAP);
		bpf_ringbuf_submit(rp, wake_flag(st));
	} else {
		struct ev_record *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
		if (!r)
			goto lost;
		fill(r, st, id, ret, flags, now);
		bpf_ringbuf_submit(r, wake_flag(st));
	}
	st->c.gap = 0;
	return;
lost:
	count_loss(LOSS_RINGBUF, 1);
	st->c.gap = 1;
}

/* What a call filled in that tells what its descriptors are (pipe's int[2]). */
static __always_inline void read_at_exit(struct ev_task *st, long ret)
{
	__u32 nr = st->nr;
	if (nr < NR_SLOTS && (mem_arg[nr] & MEM_AT_EXIT) && ret == 0) {
		__u32 i = ((mem_arg[nr] & 7) - 1) & 3;
		if (!bpf_probe_read_user(st->path, 8, (const void *)st->args[i]))
			st->path_len = 9;
	}
}

/* A call begins: its number and arguments are in st; `at` is the task's
 * pt_regs (for the call site). */
static __always_inline void begin_call(struct ev_task *st, __u64 at, long nr)
{
	st->nr = nr;
	st->path_len = 0;
	if (nr >= 0 && nr < NR_SLOTS) {
		__u8 info = arg_info[nr];
		if (info >> ARG_PATH_SHIFT) {
			__u32 i = ((info >> ARG_PATH_SHIFT) - 1) & 7;
			__u64 p = i < 6 ? st->args[i] : 0;
			long n = bpf_probe_read_user_str(st->path, PATH_CAP, (const void *)p);
			if (n > 0)
				st->path_len = n;
		}
		__u8 m = mem_arg[nr];
		if ((m & 7) && !(m & MEM_AT_EXIT)) {
			__u32 i = ((m & 7) - 1) & 3;
			__u64 len = st->args[i + 1] & (PATH_CAP - 1);
			if (len && !bpf_probe_read_user(st->path, len, (const void *)st->args[i]))
				st->path_len = len + 1;
		}
	}
	if (capture_sites) {
		int found = find_callsite(&st->vmas, at, &st->site);
		st->has_site = found == 0;
		if (found < 0)
			count_loss(LOSS_CALLSITE, 1);
	}
	if (changes_mappings(nr))
		__sync_fetch_and_add(&maps_gen, 1);
	clear_off_cpu(st);
	st->c.pending = 1;
	st->enter_ns = bpf_ktime_get_ns();
}

SEC("raw_tp/sys_enter")
int on_enter(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 at = ctx->args[0];
	long nr = ctx->args[1];
	struct ev_task *st = counting_state(at, nr);
	if (!st)
		return 0;
	if (st->c.pending) /* the previous call never returned */
		emit_call(st, 0, 0);
	struct pt_regs *regs = regs_at(at);
	st->args[0] = regs->di;
	st->args[1] = regs->si;
	st->args[2] = regs->dx;
	st->args[3] = regs->r10;
	st->args[4] = regs->r8;
	st->args[5] = regs->r9;
	begin_call(st, at, nr);
	return 0;
}

/*
 * The calls a multi-call runs inside the kernel module (kmod/, the
 * tracepoints multicall:mc_enter(nr, six arguments) and mc_exit(nr,
 * result)) never pass the syscall entry: the raw_syscalls tracepoints see
 * only the ioctl on /dev/multicall.  Each inner call is recorded as a call
 * of its own, at the ioctl's call site, in the ioctl's place: the ioctl
 * itself, the transport, is not recorded.  Attached only where the module
 * is loaded when the recording starts.
 */
SEC("raw_tp/mc_enter")
int on_mc_enter(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 at = current_regs();
	struct ev_task *st = task_state(at);
	if (!st || st->c.phase != PHASE_COUNTING)
		return 0;
	if (st->c.pending) {
		if (st->nr == __NR_ioctl)
			st->c.pending = 0; /* the multi-call's ioctl: its calls stand for it */
		else
			emit_call(st, 0, 0);
	}
	for (int i = 0; i < 6; i++)
		st->args[i] = ctx->args[i + 1];
	begin_call(st, at, (long)ctx->args[0]);
	return 0;
}

SEC("raw_tp/mc_exit")
int on_mc_exit(struct bpf_raw_tracepoint_args *ctx)
{
	struct ev_task *st = task_state(current_regs());
	if (!st || !st->c.pending || st->nr != (__u32)ctx->args[0])
		return 0;
	read_at_exit(st, ctx->args[1]);
	emit_call(st, ctx->args[1], RF_RET);
	return 0;
}

SEC("raw_tp/sys_exit")
int on_exit(struct bpf_raw_tracepoint_args *ctx)
{
	struct ev_task *st = task_state(ctx->args[0]);
	if (!st || !st->c.pending)
		return 0;
	if (changes_mappings(st->nr))
		__sync_fetch_and_add(&maps_gen, 1);
	note_setsid(st, ctx->args[0], ctx->args[1]);
	read_at_exit(st, ctx->args[1]);
	emit_call(st, ctx->args[1], RF_RET);
	return 0;
}

/* The current task ends; group_dead: it was its process's last. */
static __always_inline int task_exit(int group_dead)
{
	__u64 regs = current_regs();
	struct ev_task *st = task_state(regs);
	if (!st)
		return 0;
	if (st->c.phase == PHASE_COUNTING) {
		if (st->c.pending) /* exit, exit_group, or killed in a call */
			emit_call(st, 0, 0);
		struct ev_record *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
		if (r) {
			__u64 id = bpf_get_current_pid_tgid();
			__builtin_memset(r, 0, sizeof(*r));
			r->kind = REC_EXIT;
			r->flags = group_dead ? RF_GROUP_DEAD : 0;
			r->pid = id >> 32;
			r->tid = (__u32)id;
			r->exit_ns = bpf_ktime_get_ns();
			bpf_ringbuf_submit(r, wake_flag(st));
		} else {
			count_loss(LOSS_UNTRACKED, 1); /* a thread exit, not a call */
		}
	}
	release_state(regs, st);
	return 0;
}

/* sched_process_exit(task, group_dead).  Before the tracepoint had its
 * second argument (6.1) a program that reads it cannot attach: there
 * on_task_exit_6_1 does, and reads whether the process's count of live
 * threads, which do_exit decrements before the tracepoint, is zero (two
 * threads exiting at once may then both count as the last).  User space
 * attaches the first that attaches. */
SEC("raw_tp/sched_process_exit")
int on_task_exit(struct bpf_raw_tracepoint_args *ctx)
{
	return task_exit(ctx->args[1] != 0);
}

SEC("raw_tp/sched_process_exit")
int on_task_exit_6_1(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	return task_exit(BPF_CORE_READ(t, signal, live.counter) == 0);
}
