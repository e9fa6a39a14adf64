/* Internal interface of the syscluster runtime (the LD_PRELOAD library).
 * See docs/RUNTIME.md for the design and the guarantees. */
#ifndef SC_RT_H
#define SC_RT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define SC_EXPORT __attribute__((visibility("default")))
#define SC_HIDDEN __attribute__((visibility("hidden")))
#define sc_likely(x) __builtin_expect(!!(x), 1)
#define sc_unlikely(x) __builtin_expect(!!(x), 0)
/* A wrapper's uncommon path, out of line: the common one sets up no frame. */
#define SC_COLD __attribute__((noinline, cold))
#define SC_ID(...) __VA_ARGS__ /* SC_ID (a, b) is a, b */
/* A large zero-initialised array, kept apart from the small variables: in
 * .lbss, which the linker places after .bss.  The small ones then share a
 * page or two, which every process touches at start, and an array's pages
 * are touched only when it is used (each first touch is a page fault,
 * ~2.5 us here: docs/RUNTIME.md, "Start-up"). */
#define SC_APART __attribute__((section(".lbss")))

/* Process-wide modes. */
enum {
    SC_OFF = 0,    /* not configured: every wrapper passes straight through */
    SC_ACTIVE = 1, /* coalescing */
    SC_WT = 2,     /* write-through: exiting or exec'ing; nothing new is deferred */
    SC_PASS = 3,   /* gave up (raw system calls, clone, io_uring, ...): runs unchanged */
};

/* What an fd is known to be. */
enum {
    SC_FD_UNKNOWN = 0,
    SC_FD_OTHER = 1, /* never deferred: pipe, socket, tty, O_SYNC/O_DIRECT, mapped, /proc, ... */
    SC_FD_COAL = 2,  /* a regular file whose short writes are deferred */
};

/* Kinds of plan sites (plan.c): what a wrapper does for a call planned at
 * its caller's return address. */
enum {
    SC_PK_WRITE = 1, /* defer short writes (coalesce this site) */
    SC_PK_CLOCK = 2, /* a clock read through syscall(): from the vDSO */
    SC_PK_PID = 4,   /* getpid: the cached pid */
    SC_PK_TID = 8,   /* gettid: the cached tid */
    SC_PK_SEEK = 16, /* lseek(SEEK_SET): a pending offset */
    SC_PK_READ = 32, /* read at a pending offset: pread */
};

#define SC_NSLOTS 64
#define SC_WARMUP 4 /* short writes an fd makes before its writes are deferred */

struct sc_slot {
    _Atomic int lock;  /* 0 free, 1 held, 2 held with waiters */
    _Atomic int owner; /* tid of the holder */
    /* The fast path (coalesce.c, fast_write): the thread (sc_self) that may
     * append to the buffer without taking the lock (0: none), and its flag,
     * set while it does.  Set under the lock; anyone else who takes the
     * lock clears bias and waits for busy to be 0 (state.c, unbias). */
    _Atomic uintptr_t bias;
    _Atomic int busy;
    _Atomic int busy_waiter; /* the lock's holder sleeps on busy: wake it when done */
    int fd;            /* bound fd, -1 when free */
    int append;        /* the description has O_APPEND */
    uint64_t dev, ino; /* the file */
    uint32_t gen;      /* bumped at every (un)binding */
    _Atomic uint32_t cycle; /* bumped when the buffer goes from empty to non-empty */
    size_t len;        /* committed (acknowledged) bytes */
    size_t cap;
    char *buf;
    int64_t vpos;      /* a pending offset (planned lseek + reads), when vpos_set */
    int vpos_set;
    /* A flush's progress, for the guardian's recovery after SIGKILL (see
     * sc_flush_note and docs/RUNTIME.md, "SIGKILL"): while flushing is set,
     * flush_done bytes of the buffer are known to be in the kernel and one
     * write call of the rest may be in flight; call_pos is the description's
     * offset before that call and, for O_APPEND, call_size the file's size. */
    _Atomic int flushing;
    _Atomic size_t flush_done;
    _Atomic int64_t call_pos, call_size;
    _Atomic int64_t first_ns; /* CLOCK_MONOTONIC ns of the buffer's first acknowledged byte */
    _Atomic int gerr;         /* > 0: the guardian's flush failed with this errno (for the program to report);
                               * < 0: bytes held after the program's own flush failed (flush.c, sc_keep);
                               * the guardian leaves the slot while it is not 0 */
    uint64_t n_writes, n_flushes, n_bytes, n_lost;
};

/* What the program and its guardian share (one MAP_SHARED anonymous region,
 * created at the first deferral; the slots' buffers follow it, cap bytes
 * each).  The guardian treats all of it as untrusted input: see guardian.c. */
struct sc_shared {
    _Atomic int wake;  /* futex: bumped to wake the guardian */
    _Atomic int idle;  /* the guardian sleeps with nothing pending */
    _Atomic int quit;  /* asked to exit */
    _Atomic int ready; /* 1: sandboxed and running; 2: could not sandbox itself */
    _Atomic long beat; /* CLOCK_MONOTONIC_COARSE ms of the guardian's last wake-up */
    _Atomic int barrier; /* 1: the guardian's membarrier works: slots may be biased (coalesce.c, fast_write) */
    /* Flushes the program asks the guardian to make (flush.c, sc_delegate;
     * guardian.c, serve): per slot 0 none, 1 asked, 2 being written, 3 done
     * with ask_err the errno (0: all out). */
    _Atomic int ask[SC_NSLOTS];
    _Atomic int ask_err[SC_NSLOTS];
    struct sc_slot slots[SC_NSLOTS];
};

struct sc_fdent {
    _Atomic uint8_t kind;
    uint8_t slot;
    uint8_t small;     /* short writes seen while warming up */
    uint8_t has_inode; /* dev/ino below are valid */
    uint8_t seekable;  /* a regular file on a plain filesystem, not O_PATH (classified) */
    uint8_t shares;    /* bound to the slot of another fd of the same open file description */
    int err;           /* a deferred write's error, to report (errno) */
    uint32_t gen;      /* slot gen when bound */
    uint32_t born;     /* opened by this process when G.forks was born - 1 (0: inherited, dup'ed or unknown) */
    uint64_t dev, ino;
};

struct sc_global {
    _Atomic int mode;
    int verbose;
    int pid;
    size_t threshold; /* writes shorter than this are deferred */
    size_t cap;       /* buffer per slot */
    int flush_ms;     /* time bound */
    _Atomic uint64_t pending; /* bit i: slot i holds bytes (or a pending offset) */
    /* Bumped whenever another process may come to share this one's open
     * file descriptions (fork, spawn, descriptors sent): see sc_opened_here. */
    _Atomic uint32_t forks;
    /* Low 32 bits: fd entries holding an unreported error; above: the
     * SC_PK_* kinds the plan has sites of (plan.c).  One word, so that a
     * wrapper learns both with one load. */
    _Atomic uint64_t attn;
    _Atomic int bind_lock;
    unsigned evict_next;
    /* sh->slots once the region exists (the first deferral); NULL before,
     * when no slot can be bound (every loop over the slots checks); a
     * private array of free slots in a fork child that could not map one. */
    struct sc_slot *slots;
    struct sc_shared *sh;   /* shared with the guardian (guardian.c) */
    char *bufs;             /* the slots' buffers: bufs + i * cap */
    size_t sh_len;          /* the region's length */
    struct sc_fdent *fdtab;
    size_t fdmax;
    _Atomic size_t fd_hi; /* highest fd entry ever touched + 1 */
    /* The guardian: see guardian.c. */
    _Atomic int g_state; /* 0 none, 1 up, 2 cannot be started */
    int g_pid;
    _Atomic int g_lock;
    /* Inodes the process has mapped: never deferred. */
    _Atomic int map_lock;
    int n_mapped;
    int map_overflow;
    uint64_t mapped[256][2];
    /* Diagnostics. */
    char report[108];
    int report_len;
    /* Counters for -v. */
    _Atomic uint64_t c_direct, c_flushes, c_fused; /* (deferred writes: the slots' n_writes) */
};

extern struct sc_global sc_g SC_HIDDEN;
#define G sc_g

struct sc_tls {
    int in_rt;              /* inside a runtime critical section */
    int vfork;              /* between vfork and the parent's next call */
    uint64_t deferred_mask; /* signals held back until the section ends */
    int in_handler;         /* running a program's signal handler */
    int tid;                /* gettid, cached for planned sites (0: unknown) */
    uintptr_t stack_lo, stack_hi; /* this thread's stack (0: unknown) */
};
extern __thread struct sc_tls sc_tls __attribute__((tls_model("initial-exec"))) SC_HIDDEN;

void sc_release_deferred(void) SC_HIDDEN;

/* A critical section: signals arriving inside it are held back (see
 * signals.c), so that a handler never runs while this thread holds a lock
 * or has the runtime's state half-updated. */
static inline void sc_enter(void)
{
    sc_tls.in_rt++;
    __asm__ volatile("" ::: "memory");
}

static inline void sc_leave(void)
{
    __asm__ volatile("" ::: "memory");
    if (--sc_tls.in_rt == 0 && sc_unlikely(sc_tls.deferred_mask))
        sc_release_deferred();
}

static inline int sc_mode(void) { return atomic_load_explicit(&G.mode, memory_order_relaxed); }

#define SC_ERRS 0xffffffffULL       /* the error count in G.attn */
#define SC_PLAN(kinds) ((uint64_t)(kinds) << 32) /* plan kinds in G.attn */

static inline uint64_t sc_attn(void) { return atomic_load_explicit(&G.attn, memory_order_relaxed); }

/* Does any runtime state need looking at for a call on an fd?  (attn: a
 * value of sc_attn() the caller has already loaded.) */
static inline int sc_busy_with(uint64_t attn)
{
    return (attn & SC_ERRS) != 0 || atomic_load_explicit(&G.pending, memory_order_relaxed) != 0;
}

static inline int sc_busy(void) { return sc_busy_with(sc_attn()); }

/* Nothing to look at at all: no error, no plan, nothing pending. */
static inline int sc_quiet(void)
{
    return (sc_attn() | atomic_load_explicit(&G.pending, memory_order_relaxed)) == 0;
}

static inline struct sc_fdent *sc_fdent(int fd)
{
    return (unsigned)fd < G.fdmax ? &G.fdtab[fd] : NULL;
}

/* Does the runtime know nothing of fd's entry: no kind, no file, no
 * error, no slot?  Then opening or closing the fd changes nothing but its
 * birth (sc_born): the wrappers' common case (wrap_path.c, opened_at;
 * wrap_fd.c, do_close).  Everything else goes the full way. */
static inline int sc_fdent_blank(const struct sc_fdent *e)
{
    return atomic_load_explicit(&e->kind, memory_order_relaxed) == SC_FD_UNKNOWN && !e->has_inode && !e->err &&
           !e->gen;
}

/* fd's entry e, just opened by this process (open, openat, creat): its
 * description is this process's alone until it forks, spawns or sends
 * descriptors (flush.c, sc_alone_moves_offset).  forks_before: G.forks
 * read before the open. */
static inline void sc_born(struct sc_fdent *e, uint32_t forks_before)
{
    e->born = atomic_load(&G.forks) == forks_before ? forks_before + 1 : 0;
}

/* This thread, as the slots' bias names it: the address of its runtime
 * state, unique among the live threads of the process. */
static inline uintptr_t sc_self(void) { return (uintptr_t)&sc_tls; }

/* This library's load address (its ELF header, which the linker places at
 * the start of the first segment: the dlpi_addr dl_iterate_phdr gives for
 * it).  What dladdr would say, without its search of the symbol table
 * (~10,000 instructions a call) or the loader's lock. */
extern const char __ehdr_start[] SC_HIDDEN;
static inline uintptr_t sc_self_base(void) { return (uintptr_t)__ehdr_start; }

/* lookup.c */
void *sc_dlnext(const char *name) SC_HIDDEN;

/* The runtime's core, one file per layer; each builds only on those above
 * it: report.c, state.c, flush.c, fdtable.c, coalesce.c, offsets.c,
 * process.c. */

/* report.c */
void sc_report(const char *kind, const char *fmt, ...) SC_HIDDEN __attribute__((format(printf, 2, 3)));

/* state.c: locks, errors left on an fd, an fd's file identity */
void sc_spin_lock(_Atomic int *l) SC_HIDDEN;
void sc_lock_word(_Atomic int *l) SC_HIDDEN; /* sc_spin_lock without installing the trampolines first */
extern void (*_Atomic sc_first_lock)(void) SC_HIDDEN;
void sc_spin_unlock(_Atomic int *l) SC_HIDDEN;
void sc_slot_lock(struct sc_slot *s) SC_HIDDEN;
int sc_slot_trylock(struct sc_slot *s) SC_HIDDEN;
void sc_slot_unlock(struct sc_slot *s) SC_HIDDEN;
int sc_guardian_gone(int pid) SC_HIDDEN;
void sc_set_err(int fd, int err) SC_HIDDEN;
void sc_guardian_err(struct sc_slot *s) SC_HIDDEN;
int sc_take_err(int fd) SC_HIDDEN;
void sc_lost_err(int fd, int err) SC_HIDDEN;
void sc_touch_hi(int fd) SC_HIDDEN;
int sc_fd_inode(int fd, uint64_t *dev, uint64_t *ino) SC_HIDDEN;
/* state.c: the fast path's exclusion (see there) */
extern int sc_fast_ok SC_HIDDEN;                 /* this process may bias slots */
extern uint8_t sc_contended[SC_NSLOTS] SC_HIDDEN; /* buffers a slot stays unbiased for */
extern uint64_t sc_slow_writes[SC_NSLOTS] SC_HIDDEN; /* deferred writes that took the lock (-v) */
long sc_barrier_all(void) SC_HIDDEN;
void sc_fast_register(void) SC_HIDDEN;

/* flush.c: writing slots out, bytes kept after a failed flush, futile
 * buffers, room on the file system */
void sc_clear_pending(struct sc_slot *s) SC_HIDDEN;
void sc_written_out(struct sc_slot *s) SC_HIDDEN;
int64_t sc_flush_note(struct sc_slot *s, size_t done) SC_HIDDEN;
/* Slots holding bytes a failed flush could not write, and per slot the
 * errno of that flush (0: none).  Outside struct sc_slot: a bigger slot
 * costs ~2 % on 8-byte writes (measured). */
extern _Atomic int sc_n_held SC_HIDDEN;
extern int sc_held_err[SC_NSLOTS] SC_HIDDEN;
#define HELD(s) sc_held_err[(s) - G.slots]
/* Per slot, the backoff after futile buffers (flush.c, "Futile buffers"). */
struct sc_backoff {
    uint32_t writes;  /* writes in the current buffer */
    uint16_t backoff; /* direct writes after the next futile buffer (0: none yet) */
    uint16_t skip;    /* direct writes still to make */
};
extern struct sc_backoff sc_futile[SC_NSLOTS] SC_HIDDEN;
#define FUTILE(s) sc_futile[(s) - G.slots]
/* Free space left on the file system of the last buffer started. */
extern _Atomic int64_t sc_room SC_HIDDEN;
void sc_keep(struct sc_slot *s, size_t done, int err) SC_HIDDEN;
void sc_unhold(struct sc_slot *s) SC_HIDDEN;
int sc_alone_moves_offset(struct sc_slot *s) SC_HIDDEN;
void sc_opened_here(int fd, uint32_t forks_before) SC_HIDDEN;
int sc_delegate(struct sc_slot *s, size_t *done) SC_HIDDEN;
int sc_write_rest(struct sc_slot *s, size_t done) SC_HIDDEN;
int sc_write_held(struct sc_slot *s) SC_HIDDEN;
int sc_retry_held(int fd) SC_HIDDEN;
void sc_drop_slot_held(struct sc_slot *s, const char *why) SC_HIDDEN;
void sc_drop_held(const char *why) SC_HIDDEN;
void sc_forget_held(void) SC_HIDDEN;
void sc_flush_locked(struct sc_slot *s) SC_HIDDEN;
void sc_flush_all(void) SC_HIDDEN;
void sc_flush_inode(uint64_t dev, uint64_t ino) SC_HIDDEN;
void sc_quiesce(int mode) SC_HIDDEN;
void sc_give_up(const char *why) SC_HIDDEN;
int sc_near_full(int fd, uint64_t dev) SC_HIDDEN;

/* state.c: in a vfork child (which shares our memory but must not touch
 * our state)?  One thread-local load in the common case. */
int sc_vfork_check(void) SC_HIDDEN;
static inline int sc_vfork_child(void) { return sc_unlikely(sc_tls.vfork) && sc_vfork_check(); }
/* process.c */
void sc_process_end(void) SC_HIDDEN;
void sc_fork_prepare(void) SC_HIDDEN;
void sc_fork_parent(void) SC_HIDDEN;
void sc_fork_child(void) SC_HIDDEN;

/* The runtime acts in this process: it is on, and this is not a vfork
 * child (which shares our memory but must not touch our state). */
static inline int sc_live(void) { return sc_mode() != SC_OFF && !sc_vfork_child(); }

/* Before a call through which another process could learn what the
 * program did: everything pending is written out. */
static inline void sc_publish(void)
{
    if (sc_unlikely(atomic_load_explicit(&G.pending, memory_order_relaxed)) && sc_live()) {
        sc_enter();
        sc_flush_all();
        sc_leave();
    }
}

/* Another process may come to share the open file descriptions this one
 * has (it forks, spawns, sends descriptors). */
static inline void sc_may_share(void) { atomic_fetch_add(&sc_g.forks, 1); }

/* fdtable.c */
int sc_observe(int fd, int take_err) SC_HIDDEN;
void sc_forget(int fd) SC_HIDDEN;
void sc_forget_range(unsigned lo, unsigned hi) SC_HIDDEN;
void sc_release_fd(int fd, int *err) SC_HIDDEN;
void sc_after_open(int fd) SC_HIDDEN;
void sc_unbind(int fd) SC_HIDDEN;
void sc_flush_path_result(uint64_t dev, uint64_t ino, int *again) SC_HIDDEN;
int sc_is_mapped(uint64_t dev, uint64_t ino) SC_HIDDEN;
void sc_note_mapped(uint64_t dev, uint64_t ino) SC_HIDDEN;

/* coalesce.c */
extern int sc_no_kcmp SC_HIDDEN; /* kcmp refused (ENOSYS, EPERM) or SYSCLUSTER_TEST_NO_KCMP */
void sc_classify(int fd, struct sc_fdent *e) SC_HIDDEN;
struct sc_slot *sc_bind_slot(int fd, struct sc_fdent *e) SC_HIDDEN;
void sc_wake_guardian(void) SC_HIDDEN;
long sc_write_iov(int fd, const struct iovec *iov, int iovcnt, size_t total, size_t threshold) SC_HIDDEN;
#define SC_DIRECT (-1000000L)

/* offsets.c */
int sc_seek_pending(int fd, int64_t off, int whence) SC_HIDDEN;
int sc_read_pending(int fd, void *buf, size_t n, long *ret) SC_HIDDEN;

/* exec: scan.c (sc_check_exec_target), wrap_proc.c */
void sc_check_exec_target(const char *path, int use_path) SC_HIDDEN;
void sc_exec_prepare(int *saved_mode) SC_HIDDEN;
void sc_exec_failed(int saved_mode) SC_HIDDEN;

/* plan.c */
int sc_plan_parse(const char *text) SC_HIDDEN;
int sc_plan_present(void) SC_HIDDEN;
void sc_plan_start(void) SC_HIDDEN;
void sc_plan_resolve(void) SC_HIDDEN;
void sc_plan_close_begin(void) SC_HIDDEN;
void sc_plan_close_end(void) SC_HIDDEN;
void sc_plan_forked(void) SC_HIDDEN;
void sc_plan_off(void) SC_HIDDEN;
void sc_plan_tsc(unsigned long mode) SC_HIDDEN;
void sc_plan_report(void) SC_HIDDEN;
size_t sc_plan_buffer(void) SC_HIDDEN;
size_t sc_plan_max_threshold(void) SC_HIDDEN;
/* -v: a write the wrappers saw, deferred or (r == SC_DIRECT) not (why.c). */
void sc_why_write(int fd, size_t n, size_t threshold, long r) SC_HIDDEN;
size_t sc_plan_write_site(const void *ra) SC_HIDDEN;
long sc_plan_id(const void *ra, long nr) SC_HIDDEN;
int sc_plan_syscall(const void *ra, uintptr_t csp, long n, long a, long b, long *ret) SC_HIDDEN;
int sc_plan_site(const void *ra, int kind, long nr) SC_HIDDEN;
void sc_plan_answered(int site) SC_HIDDEN;

/* Is any plan site of these kinds in the table?  One load (the word that
 * also counts errors): without a plan every wrapper costs what it did. */
static inline int sc_planned(int kinds) { return sc_unlikely((sc_attn() & SC_PLAN(kinds)) != 0); }

/* guardian.c */
int sc_guardian_start(void) SC_HIDDEN;
void sc_guardian_stop(void) SC_HIDDEN;
void sc_guardian_forget(void) SC_HIDDEN;
int sc_guardian_lost(void) SC_HIDDEN;
int sc_region_create(void) SC_HIDDEN;
/* madvise(MADV_DONTFORK or MADV_DOFORK) of the program's, noted: 0 or -errno. */
long sc_madvise_fork(uintptr_t lo, size_t len, int advice) SC_HIDDEN;
void sc_region_fork_snapshot(void) SC_HIDDEN;
void sc_region_forked(void) SC_HIDDEN;
int64_t sc_now_ns(void) SC_HIDDEN;

/* signals.c */
void sc_signals_arm(void) SC_HIDDEN;
void sc_signals_take(void) SC_HIDDEN;
void sc_signals_forked(void) SC_HIDDEN;
void sc_signals_exec(int after) SC_HIDDEN;

/* scan.c */
int sc_scan_loaded(char *culprit, size_t len) SC_HIDDEN;
extern int sc_scan_cached SC_HIDDEN, sc_scan_scanned SC_HIDDEN;

/* x86len.c */
long sc_x86_insn(const uint8_t *p, const uint8_t *end, long *opcode) SC_HIDDEN;

/* asm.S */
long sc_copy_user(void *dst, const void *src, size_t n) SC_HIDDEN;
extern char sc_copy_start[] SC_HIDDEN, sc_copy_end[] SC_HIDDEN, sc_copy_fixup[] SC_HIDDEN;
void sc_restorer(void) SC_HIDDEN;

/* Resolves the next definition of a libc function, once. */
#define SC_REAL(name)                                                                   \
    ({                                                                                  \
        static __typeof__(&name) sc_real_p;                                             \
        __typeof__(&name) p_ = __atomic_load_n(&sc_real_p, __ATOMIC_RELAXED);           \
        if (sc_unlikely(!p_)) {                                                         \
            p_ = (__typeof__(&name))sc_dlnext(#name);                                   \
            __atomic_store_n(&sc_real_p, p_, __ATOMIC_RELAXED);                         \
        }                                                                               \
        p_;                                                                             \
    })

/* The next definition of a wrapped function in a variable of the file's
 * own, for a wrapper split in two halves (wrap_fd.c, wrap_path.c): the
 * common half jumps through SC_NEXT_FAST when it is resolved (no call, no
 * frame), the uncommon one resolves it with SC_NEXT. */
#define SC_NEXT_VAR(name) sc_next_##name
#define SC_NEXT_DECL(name) static __typeof__(&name) SC_NEXT_VAR(name)
#define SC_NEXT_FAST(name) __atomic_load_n(&SC_NEXT_VAR(name), __ATOMIC_RELAXED)
#define SC_NEXT(name)                                                                   \
    ({                                                                                  \
        __typeof__(&name) n_ = SC_NEXT_FAST(name);                                      \
        if (sc_unlikely(!n_)) {                                                         \
            n_ = (__typeof__(&name))sc_dlnext(#name);                                   \
            __atomic_store_n(&SC_NEXT_VAR(name), n_, __ATOMIC_RELAXED);                 \
        }                                                                               \
        n_;                                                                             \
    })

#endif
