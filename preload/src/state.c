/* The runtime's shared state and its primitives: the slots that hold
 * deferred writes and the fd table (struct sc_global, rt.h), their locks,
 * the errors deferred writes leave on an fd, and an fd's file identity.
 * Every other file of the library builds on this one; it calls none of
 * them but report.c (the state itself is defined in global.c). */
#include "rt.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>

/* ---- locks ------------------------------------------------------------ */

/* Set while the signal trampolines are not installed yet (signals.c sets
 * it at start to sc_signals_take, which this file, below it, cannot call):
 * they are installed before the runtime first takes a lock, so that no
 * handler of the program ever runs in a thread holding one
 * (docs/RUNTIME.md, "Signals before the first deferral"). */
void (*_Atomic sc_first_lock)(void);

void sc_spin_lock(_Atomic int *l)
{
    void (*first)(void) = atomic_load_explicit(&sc_first_lock, memory_order_acquire);
    if (sc_unlikely(first != NULL))
        first();
    sc_lock_word(l);
}

void sc_lock_word(_Atomic int *l)
{
    int c = 0;
    if (atomic_compare_exchange_strong(l, &c, 1))
        return;
    if (c != 2)
        c = atomic_exchange(l, 2);
    while (c != 0) {
        sc_futex_wait(l, 2, NULL);
        c = atomic_exchange(l, 2);
    }
}

void sc_spin_unlock(_Atomic int *l)
{
    if (atomic_exchange(l, 0) == 2)
        sc_futex_wake(l, 1);
}

/* Is the guardian, which may hold a slot lock, gone?  (Only a stray SIGKILL
 * aimed at the guardian alone can do that.) */
int sc_guardian_gone(int pid)
{
    if (pid <= 0 || pid != G.g_pid)
        return 0;
    /* It is our child: dead means a zombie (or already reaped). */
    siginfo_t si;
    memset(&si, 0, sizeof si);
    long r = sc_sys5(SYS_waitid, P_PID, pid, (long)&si, WEXITED | WNOHANG | WNOWAIT | __WCLONE, 0);
    return r == -ECHILD || (r == 0 && si.si_pid == pid);
}

/* ---- the fast path's exclusion ---------------------------------------- *
 *
 * A slot's lock is two locked instructions per write, most of what a
 * deferred write cost.  So the thread that starts a buffer takes the slot's
 * bias (s->bias = sc_self(), under the lock), and its further short writes
 * to that buffer take no lock (coalesce.c, fast_write): they set s->busy
 * with a plain store, check the bias again, append, commit len and clear
 * busy -- no locked instruction, no fence.  Whoever else takes the lock -- another
 * thread of the program, or the guardian (another process) -- pays instead
 * (unbias, sc_slot_trylock): it clears the bias, makes every running thread
 * of the program execute a full memory barrier (membarrier(2),
 * MEMBARRIER_CMD_GLOBAL_EXPEDITED: the program registers for it at its first deferral),
 * and waits until busy reads 0.  After the barrier either the biased thread
 * sees bias 0 (its busy store and bias load came after it: it leaves the
 * fast path for the lock) or its busy = 1 is visible (its store came before
 * the barrier: we wait until it clears it, its appended bytes and len
 * visible before, as x86 keeps stores in order).  A thread not running at
 * the barrier went through the scheduler's full barrier.  Docs:
 * docs/RUNTIME.md, "The fast path". */

/* 1: this process registered for MEMBARRIER_CMD_GLOBAL_EXPEDITED and the
 * command works: its slots may be biased. */
int sc_fast_ok;

#define SC_MB_GLOBAL_EXPEDITED 2           /* MEMBARRIER_CMD_GLOBAL_EXPEDITED */
#define SC_MB_REGISTER_GLOBAL_EXPEDITED 4  /* MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED */

/* A full memory barrier on every running thread of every process
 * registered for it (this one, once sc_fast_ok).  Raw: the guardian calls
 * it. */
long sc_barrier_all(void) { return sc_sys3(SYS_membarrier, SC_MB_GLOBAL_EXPEDITED, 0, 0); }

void sc_fast_register(void)
{
    sc_fast_ok = sc_sys3(SYS_membarrier, SC_MB_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0 && sc_barrier_all() == 0;
}

/* Slots whose bias contending threads took away: not biased again for
 * this many buffers (private to the program, like sc_held_err). */
uint8_t sc_contended[SC_NSLOTS];
/* Deferred writes that took the lock, per slot (-v: the others took the
 * fast path). */
uint64_t sc_slow_writes[SC_NSLOTS];

/* The slot lock is held, the bias cleared and the barrier made: waits
 * until the biased thread is out of the fast path (1), or gives up after
 * `naps` sleeps of 0.2 ms (0).  Running, that thread is out within
 * nanoseconds; still inside after a few pauses, it is not running --
 * preempted, often by the very task waiting (the guardian's SCHED_FIFO), or
 * faulting on the program's buffer: spinning would only burn the CPU it
 * needs (and, in a VM, exit to the host at every pause).  So the waiter
 * sleeps on busy and the thread wakes it as it leaves (coalesce.c,
 * fast_write).  If the two miss each other (its load of busy_waiter may
 * come before its store of busy = 0 is visible), the sleep times out. */
static int wait_out(struct sc_slot *s, int naps)
{
    for (int n = 0; n < 16; n++) {
        if (!atomic_load_explicit(&s->busy, memory_order_acquire))
            return 1;
        __builtin_ia32_pause();
    }
    atomic_store(&s->busy_waiter, 1);
    for (int n = 0; n < naps && atomic_load_explicit(&s->busy, memory_order_acquire); n++) {
        struct sc_timespec ts = {0, 200 * 1000};
        sc_futex_wait_shared(&s->busy, 1, &ts);
    }
    atomic_store(&s->busy_waiter, 0);
    return !atomic_load_explicit(&s->busy, memory_order_acquire);
}

/* The slot lock is held by a thread of the program: no other thread's fast
 * path may be running on s when this returns. */
static void unbias(struct sc_slot *s)
{
    uintptr_t b = atomic_load_explicit(&s->bias, memory_order_relaxed);
    if (sc_likely(b == 0) || b == sc_self())
        return;
    atomic_store_explicit(&s->bias, 0, memory_order_relaxed);
    sc_contended[s - G.slots] = 16;
#ifdef SC_TEST_FAST_UNGUARDED
    return; /* the control of test/fastpath.c: the bias is cleared, nothing waited for */
#endif
    int tries = 0;
    /* Registered, and tried at start: only a transient ENOMEM can fail it. */
    while (sc_barrier_all() != 0 && ++tries < 100)
        sc_sys0(SYS_sched_yield);
    if (tries >= 100) {
        /* Never seen.  A store becomes visible without a barrier too, only
         * later: give it a millisecond. */
        struct sc_timespec ts = {0, 1000 * 1000};
        sc_sys2(SYS_nanosleep, (long)&ts, 0);
    }
    while (!wait_out(s, 100))
        ; /* preempted (or faulting) inside its few instructions: it will be out */
}

void sc_slot_lock(struct sc_slot *s)
{
    int c = 0;
    if (!atomic_compare_exchange_strong(&s->lock, &c, 1)) {
        if (c != 2)
            c = atomic_exchange(&s->lock, 2);
        while (c != 0) {
            struct sc_timespec ts = {0, 200 * 1000 * 1000};
            long r = sc_futex_wait_shared(&s->lock, 2, &ts);
            if (r == -ETIMEDOUT && sc_guardian_gone(atomic_load(&s->owner))) {
                /* Its flush may be half done: treat it like a crash. */
                atomic_store(&s->flushing, 0);
                atomic_store(&s->lock, 2);
                break;
            }
            c = atomic_exchange(&s->lock, 2);
        }
    }
    unbias(s);
}

/* Only the guardian uses it; it marks the lock as the guardian's, so that
 * a program thread can tell if the guardian died holding it.  A biased
 * slot is taken from its thread as in unbias, without waiting long: if its
 * thread is inside the fast path (preempted there, or taking a signal), or
 * the barrier fails, the bias is given back and the slot is not taken (0),
 * as if the lock were held.  (Given back, not left cleared: a cleared bias
 * tells the next taker that no fast path is running.) */
int sc_slot_trylock(struct sc_slot *s)
{
    int c = 0;
    if (!atomic_compare_exchange_strong(&s->lock, &c, 1))
        return 0;
    atomic_store_explicit(&s->owner, G.g_pid ? G.g_pid : -1, memory_order_relaxed);
    uintptr_t b = atomic_load_explicit(&s->bias, memory_order_relaxed);
    if (b != 0) {
        atomic_store_explicit(&s->bias, 0, memory_order_relaxed);
#ifndef SC_TEST_FAST_UNGUARDED
        int ok = sc_barrier_all() == 0 && wait_out(s, 10); /* at most 2 ms */
#else
        int ok = 1; /* the control of test/fastpath.c */
#endif
        if (!ok) {
            atomic_store_explicit(&s->bias, b, memory_order_relaxed);
            sc_slot_unlock(s);
            return 0;
        }
    }
    return 1;
}

void sc_slot_unlock(struct sc_slot *s)
{
    atomic_store_explicit(&s->owner, 0, memory_order_relaxed);
    if (atomic_exchange(&s->lock, 0) == 2)
        sc_futex_wake_shared(&s->lock, 1);
}

/* ---- errors ----------------------------------------------------------- */

void sc_set_err(int fd, int err)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (!e || e->err)
        return;
    e->err = err;
    atomic_fetch_add(&G.attn, 1);
}

/* An error the guardian met flushing slot s: kept on its fd (the slot is
 * bound to it, or the guardian would not have flushed it). */
void sc_guardian_err(struct sc_slot *s)
{
    int err = atomic_load_explicit(&s->gerr, memory_order_relaxed);
    /* Negative: the program's own flush failed, and it reports that. */
    if (sc_unlikely(err > 0) && atomic_compare_exchange_strong(&s->gerr, &err, 0) && s->fd >= 0)
        sc_set_err(s->fd, err);
}

/* Takes the error a deferred write on fd left, if any (0 if none). */
int sc_take_err(int fd)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (e && e->gen && G.slots[e->slot].gen == e->gen && G.slots[e->slot].fd == fd)
        sc_guardian_err(&G.slots[e->slot]);
    if (!e || !e->err)
        return 0;
    int err = e->err;
    e->err = 0;
    atomic_fetch_sub(&G.attn, 1);
    return err;
}

void sc_lost_err(int fd, int err)
{
    sc_report("lost", "a deferred write to fd %d failed (%s) and no later call on that fd could report it", fd,
              strerror(err));
}

/* ---- file identity ----------------------------------------------------- */

void sc_touch_hi(int fd)
{
    size_t want = (size_t)fd + 1, cur = atomic_load_explicit(&G.fd_hi, memory_order_relaxed);
    while (cur < want && !atomic_compare_exchange_weak(&G.fd_hi, &cur, want))
        ;
}

int sc_fd_inode(int fd, uint64_t *dev, uint64_t *ino)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (e && e->has_inode) {
        *dev = e->dev;
        *ino = e->ino;
        return 1;
    }
    struct stat st;
    if (sc_sys2(SYS_fstat, fd, (long)&st) < 0)
        return 0;
    *dev = st.st_dev;
    *ino = st.st_ino;
    if (e) {
        e->dev = st.st_dev;
        e->ino = st.st_ino;
        e->has_inode = 1;
        sc_touch_hi(fd);
    }
    return 1;
}

/* ---- vfork ------------------------------------------------------------ */

/* In a vfork child (which shares our memory but not our fd table) the
 * runtime must not touch its state: every wrapper passes through. */
int sc_vfork_check(void)
{
    if (sc_getpid() != G.pid)
        return 1;
    sc_tls.vfork = 0; /* the parent, resumed */
    return 0;
}
