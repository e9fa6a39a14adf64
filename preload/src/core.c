/* The runtime's state: the fd table, the slots that hold deferred writes,
 * flushing, configuration, and the process's start and end. */
#include "rt.h"
#include "sys.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

/* Slots live in the region shared with the guardian once it exists
 * (guardian.c); before, nothing is bound and they are these. */
static struct sc_slot sc_slots0[SC_NSLOTS];
struct sc_global sc_g = {.slots = sc_slots0};
__thread struct sc_tls sc_tls __attribute__((tls_model("initial-exec")));

/* ---- locks ------------------------------------------------------------ */

void sc_spin_lock(_Atomic int *l)
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
static int guardian_gone(int pid)
{
    if (pid <= 0 || pid != G.g_pid)
        return 0;
    /* It is our child: dead means a zombie (or already reaped). */
    siginfo_t si;
    memset(&si, 0, sizeof si);
    long r = sc_sys5(SYS_waitid, P_PID, pid, (long)&si, WEXITED | WNOHANG | WNOWAIT | __WCLONE, 0);
    return r == -ECHILD || (r == 0 && si.si_pid == pid);
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
            if (r == -ETIMEDOUT && guardian_gone(atomic_load(&s->owner))) {
                /* Its flush may be half done: treat it like a crash. */
                atomic_store(&s->flushing, 0);
                atomic_store(&s->lock, 2);
                break;
            }
            c = atomic_exchange(&s->lock, 2);
        }
    }
}

/* Only the guardian uses it; it marks the lock as the guardian's, so that
 * a program thread can tell if the guardian died holding it. */
int sc_slot_trylock(struct sc_slot *s)
{
    int c = 0;
    if (!atomic_compare_exchange_strong(&s->lock, &c, 1))
        return 0;
    atomic_store_explicit(&s->owner, G.g_pid ? G.g_pid : -1, memory_order_relaxed);
    return 1;
}

void sc_slot_unlock(struct sc_slot *s)
{
    atomic_store_explicit(&s->owner, 0, memory_order_relaxed);
    if (atomic_exchange(&s->lock, 0) == 2)
        sc_futex_wake_shared(&s->lock, 1);
}

/* ---- errors ----------------------------------------------------------- */

static void set_err(int fd, int err)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (!e || e->err)
        return;
    e->err = err;
    atomic_fetch_add(&G.attn, 1);
}

/* An error the guardian met flushing slot s: kept on its fd (the slot is
 * bound to it, or the guardian would not have flushed it). */
static void guardian_err(struct sc_slot *s)
{
    if (sc_unlikely(atomic_load_explicit(&s->gerr, memory_order_relaxed))) {
        int err = atomic_exchange(&s->gerr, 0);
        if (err && s->fd >= 0)
            set_err(s->fd, err);
    }
}

/* Takes the error a deferred write on fd left, if any (0 if none). */
int sc_take_err(int fd)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (e && e->gen && G.slots[e->slot].gen == e->gen && G.slots[e->slot].fd == fd)
        guardian_err(&G.slots[e->slot]);
    if (!e || !e->err)
        return 0;
    int err = e->err;
    e->err = 0;
    atomic_fetch_sub(&G.attn, 1);
    return err;
}

static void lost_err(int fd, int err)
{
    sc_report("lost", "a deferred write to fd %d failed (%s) and no later call on that fd could report it", fd,
              strerror(err));
}

/* ---- flushing --------------------------------------------------------- */

static int64_t flush_position(struct sc_slot *s)
{
    if (s->append) {
        struct stat st;
        long r = sc_sys2(SYS_fstat, s->fd, (long)&st);
        return r < 0 ? r : (int64_t)st.st_size;
    }
    return sc_sys3(SYS_lseek, s->fd, 0, SEEK_CUR);
}

static void clear_pending(struct sc_slot *s)
{
    unsigned i = (unsigned)(s - G.slots);
    atomic_fetch_and(&G.pending, ~(1ULL << i));
}

/* All of s's bytes are in the kernel (slot lock held). */
static void written_out(struct sc_slot *s)
{
    s->len = 0;
    atomic_store(&s->flushing, 0);
    clear_pending(s);
}

/* Before each write call of a flush, its progress for the guardian's
 * recovery after SIGKILL (guardian.c, postmortem): done bytes of the buffer
 * are in the kernel, and where this call starts.  Returns the position
 * (size, for O_APPEND) or -errno. */
static int64_t flush_note(struct sc_slot *s, size_t done)
{
    int64_t pos = flush_position(s);
    if (pos < 0)
        return pos;
    int64_t cur = s->append ? sc_sys3(SYS_lseek, s->fd, 0, SEEK_CUR) : pos;
    atomic_store_explicit(&s->call_size, pos, memory_order_relaxed);
    atomic_store_explicit(&s->call_pos, cur, memory_order_relaxed);
    atomic_store_explicit(&s->flush_done, done, memory_order_relaxed);
    atomic_store(&s->flushing, 1);
    return pos;
}

/* ---- bytes kept after a failed flush ----------------------------------- */

static _Atomic int n_held; /* slots holding bytes a failed flush could not write */
/* Per slot: the errno of the failed flush whose unwritten bytes the slot
 * keeps (0: none).  Outside struct sc_slot: a bigger slot costs ~2 % on
 * 8-byte writes (measured). */
static int held_err[SC_NSLOTS];
#define HELD(s) held_err[(s) - G.slots]

/* Futile buffers.  A buffer the program itself must write out after one
 * write (the next call observes the file: lseek, fstat, read, a message)
 * costs a flush on top of the write it saved.  After such a buffer the
 * file's next short writes go straight to the kernel -- 8 of them, twice
 * as many after each further futile buffer, up to 1024 -- and a buffer
 * that gathers two writes or more ends the backoff.  Per slot, outside
 * struct sc_slot (see held_err); reset when the slot is bound. */
static struct {
    uint32_t writes;  /* writes in the current buffer */
    uint16_t backoff; /* direct writes after the next futile buffer (0: none yet) */
    uint16_t skip;    /* direct writes still to make */
} futile[SC_NSLOTS];
#define FUTILE(s) futile[(s) - G.slots]

/* A buffer is being written out by the program (slot lock held). */
static void note_flush(struct sc_slot *s)
{
    if (FUTILE(s).writes > 1) {
        FUTILE(s).backoff = 0;
        return;
    }
    uint16_t b = FUTILE(s).backoff;
    b = b ? (b < 512 ? (uint16_t)(2 * b) : 1024) : 8;
    FUTILE(s).backoff = b;
    FUTILE(s).skip = b;
}

/* Free space on the filesystem of the last buffer started (near_full). */
static _Atomic uint64_t room_dev;
static _Atomic int64_t room;
static _Atomic unsigned room_uses;

/* A flush of s failed with err after `done` bytes: the slot keeps the rest
 * (held) instead of dropping them, takes no new bytes, and is not written
 * out again until the program writes to the file again (retry_held).  The
 * slot lock is held. */
static void keep(struct sc_slot *s, size_t done, int err)
{
    size_t rest = s->len - done;
    s->len = 0; /* killed just here: those bytes were failing anyway */
    atomic_store(&s->flushing, 0);
    memmove(s->buf, s->buf + done, rest);
    s->len = rest;
    if (!HELD(s)) {
        atomic_fetch_add(&n_held, 1);
        atomic_fetch_add(&G.attn, 1); /* every wrapper looks: the next write retries them */
    }
    HELD(s) = err;
    clear_pending(s);
}

static void unhold(struct sc_slot *s)
{
    if (!HELD(s))
        return;
    HELD(s) = 0;
    atomic_fetch_sub(&n_held, 1);
    atomic_fetch_sub(&G.attn, 1);
}

/* Who writes a flush out.  After a SIGKILL the guardian must know how
 * much of the write call the kill cut short had landed.  The description's
 * offset says it exactly only when this process alone moves it and the
 * kernel writes where it says: a description this process opened itself,
 * not O_APPEND, while no other process can hold it.  Anywhere else --
 * inherited descriptions (`{ P & Q; } > log`), after a fork, O_APPEND with
 * other appenders -- the guardian writes the bytes while this thread
 * waits: its own writes are never cut short by the program's death, so it
 * always knows what is out. */
static int alone_moves_offset(struct sc_slot *s)
{
    if (s->append)
        return 0;
    struct sc_fdent *e = sc_fdent(s->fd);
    return e && e->born && e->born - 1 == atomic_load_explicit(&G.forks, memory_order_relaxed);
}

/* fd was opened by this process (open, openat, creat): its description is
 * this process's alone until it forks, spawns or sends descriptors.
 * forks_before: G.forks read before the open. */
void sc_opened_here(int fd, uint32_t forks_before)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (e)
        e->born = atomic_load(&G.forks) == forks_before ? forks_before + 1 : 0;
}

/* The guardian's heartbeat when it last failed to answer (-1: it answers). */
static _Atomic long stalled_beat = -1;

/* Has the guardian write s's bytes from *done on (guardian.c, serve)
 * while this thread waits; the slot lock is held.  Returns 0 when all are
 * out, the errno of the write that failed (*done: what is out), or -1 when
 * the guardian cannot (not running, gone, or stopped): the caller writes
 * from *done. */
static int delegate(struct sc_slot *s, size_t *done)
{
    struct sc_shared *sh = G.sh;
    if (atomic_load(&G.g_state) != 1 || !sh || atomic_load(&sh->ready) != 1)
        return -1;
    long stalled = atomic_load(&stalled_beat);
    if (stalled >= 0) {
        if (atomic_load(&sh->beat) == stalled)
            return -1; /* still not running: do not wait for it again */
        atomic_store(&stalled_beat, -1);
    }
    unsigned i = (unsigned)(s - G.slots);
    _Atomic int *ask = &sh->ask[i];
    atomic_store(&s->flush_done, *done);
    atomic_store(&s->flushing, 2); /* for the guardian: flush_done is exact */
    atomic_store(ask, 1);
    atomic_fetch_add(&sh->wake, 1);
    sc_futex_wake_shared(&sh->wake, 1);
    int v, waits = 0;
    while ((v = atomic_load(ask)) != 3) {
        struct sc_timespec ts = {0, 50 * 1000 * 1000};
        if (sc_futex_wait_shared(ask, v, &ts) != -ETIMEDOUT)
            continue;
        int asked = 1;
        if (++waits >= 20 && atomic_compare_exchange_strong(ask, &asked, 0)) {
            /* Alive but not answering for a second (stopped by someone):
             * not taken, so ours again; this thread writes it, and the
             * next ones, until the guardian runs again. */
            atomic_store(&stalled_beat, atomic_load(&sh->beat));
            atomic_store(&s->flushing, 0);
            return -1;
        }
        int pid = G.g_pid;
        if (pid > 0 && !guardian_gone(pid))
            continue;
        sc_guardian_lost(); /* reaped; the next deferral starts another */
        /* Gone (killed on its own).  Asked and not taken: ours again.
         * Taken: flush_done is what its finished calls wrote; the call
         * it died in, if any, is lost to both of us (the bound of
         * docs/RUNTIME.md for a guardian killed with the program). */
        *done = atomic_load(&s->flush_done);
        atomic_store(ask, 0);
        atomic_store(&s->flushing, 0);
        return -1;
    }
    size_t d = atomic_load(&s->flush_done);
    *done = d <= s->len ? d : s->len;
    int err = atomic_load(&sh->ask_err[i]);
    atomic_store(ask, 0);
    return err > 0 ? err : 0;
}

/* Writes s's bytes from `done` on through its fd: 0 when all are out, else
 * the errno, and they are held from where the write stopped. */
static int write_rest(struct sc_slot *s, size_t done)
{
    int d = alone_moves_offset(s) ? -1 : delegate(s, &done);
    if (d > 0) {
        keep(s, done, d);
        return HELD(s);
    }
    if (d == 0)
        return 0;
    while (done < s->len) {
        int64_t pos = flush_note(s, done);
        if (pos < 0) {
            keep(s, done, (int)-pos);
            return HELD(s);
        }
        long r = sc_sys3(SYS_write, s->fd, (long)(s->buf + done), (long)(s->len - done));
        if (r > 0)
            done += (size_t)r;
        else if (r != -EINTR) {
            keep(s, done, r == 0 ? EIO : (int)-r);
            return HELD(s);
        }
    }
    return 0;
}

/* Writes the held bytes of s (slot lock held): 0 when all are out, else
 * the errno, and the rest stays held. */
static int write_held(struct sc_slot *s)
{
    int err = write_rest(s, 0);
    if (err)
        return err;
    s->len = 0;
    atomic_store(&s->flushing, 0);
    unhold(s);
    return 0;
}

static int fd_inode(int fd, uint64_t *dev, uint64_t *ino);

/* Before a write through any fd of a file whose slot holds bytes: they go
 * out first, in order.  Returns 0, or the errno the write must fail with
 * (without writing): the failure is reported there, once. */
static int retry_held(int fd)
{
    uint64_t dev, ino;
    if (sc_likely(atomic_load_explicit(&n_held, memory_order_relaxed) == 0) || !fd_inode(fd, &dev, &ino))
        return 0;
    int err = 0;
    for (unsigned i = 0; i < SC_NSLOTS && !err; i++) {
        struct sc_slot *s = &G.slots[i];
        if (!HELD(s) || s->dev != dev || s->ino != ino)
            continue;
        sc_slot_lock(s);
        if (HELD(s) && s->fd >= 0 && s->dev == dev && s->ino == ino && (err = write_held(s)) != 0)
            sc_take_err(s->fd); /* reported by this call */
        sc_slot_unlock(s);
    }
    return err;
}

/* Held bytes that will never be retried (closed, replaced, exit): dropped,
 * said once.  The slot lock is held. */
static void drop_held(struct sc_slot *s, const char *why)
{
    if (!HELD(s))
        return;
    s->n_lost += s->len;
    if (s->len)
        sc_report("lost", "%zu bytes written to fd %d after a write to it failed (%s) were not written: %s", s->len,
                  s->fd, strerror(HELD(s)), why);
    s->len = 0;
    unhold(s);
}

/* The process ends or execs: held bytes can no longer be retried. */
void sc_drop_held(const char *why)
{
    if (sc_likely(atomic_load(&n_held) == 0))
        return;
    sc_enter();
    for (unsigned i = 0; i < SC_NSLOTS && atomic_load(&n_held); i++) {
        sc_slot_lock(&G.slots[i]);
        drop_held(&G.slots[i], why);
        sc_slot_unlock(&G.slots[i]);
    }
    sc_leave();
}

/* In a fork child: the bytes belong to the parent, which retries them. */
void sc_forget_held(void)
{
    for (unsigned i = 0; i < SC_NSLOTS && atomic_load(&n_held); i++)
        if (held_err[i]) {
            G.slots[i].len = 0;
            unhold(&G.slots[i]);
        }
}

/* Writes out a slot's bytes at the description's current offset (the
 * kernel appends for O_APPEND).  The slot lock is held.  A failure is kept
 * on the fd and reported by the next call that can report it; the bytes
 * not written stay in the slot, held (see keep). */
void sc_flush_locked(struct sc_slot *s)
{
    guardian_err(s);
    if (s->vpos_set) {
        /* A pending offset goes first: it is where the reads left the file. */
        sc_sys3(SYS_lseek, s->fd, s->vpos, SEEK_SET);
        s->vpos_set = 0;
        if (s->len == 0)
            clear_pending(s);
    }
    if (s->len == 0 || HELD(s)) {
        if (s->len == 0 && !s->vpos_set)
            clear_pending(s); /* the guardian wrote it out */
        return;
    }
    note_flush(s);
    int err = 0;
    size_t done = 0;
    int64_t pos = 0;
    int d = alone_moves_offset(s) ? -1 : delegate(s, &done);
    if (d >= 0)
        err = d;
    else if ((pos = flush_note(s, done)) < 0) {
        err = (int)-pos;
    } else {
        while (done < s->len) {
            long r = sc_sys3(SYS_write, s->fd, (long)(s->buf + done), (long)(s->len - done));
            if (r > 0 && (done += (size_t)r) < s->len)
                flush_note(s, done); /* a short write: the next call's start */
            if (r > 0)
                continue;
            else if (r == -EINTR)
                continue;
            else {
                err = r == 0 ? EIO : (int)-r;
                break;
            }
        }
    }
    if (err && pos >= 0) {
        s->n_flushes++;
        set_err(s->fd, err);
        keep(s, done, err);
        return;
    }
    if (err) {
        s->n_lost += s->len - done;
        set_err(s->fd, err);
    }
    s->n_flushes++;
    atomic_fetch_add_explicit(&G.c_flushes, 1, memory_order_relaxed);
    written_out(s);
}

void sc_flush_all(void)
{
    uint64_t m = atomic_load(&G.pending);
    while (m) {
        unsigned i = (unsigned)__builtin_ctzll(m);
        m &= m - 1;
        struct sc_slot *s = &G.slots[i];
        sc_slot_lock(s);
        sc_flush_locked(s);
        sc_slot_unlock(s);
    }
}

void sc_flush_inode(uint64_t dev, uint64_t ino)
{
    uint64_t m = atomic_load(&G.pending);
    while (m) {
        unsigned i = (unsigned)__builtin_ctzll(m);
        m &= m - 1;
        struct sc_slot *s = &G.slots[i];
        if (s->dev != dev || s->ino != ino)
            continue;
        sc_slot_lock(s);
        if (s->dev == dev && s->ino == ino)
            sc_flush_locked(s);
        sc_slot_unlock(s);
    }
}

/* Sets the mode (SC_WT or SC_PASS) and writes everything out.  Writers
 * re-check the mode under the slot lock, so nothing is deferred after this
 * returns. */
void sc_quiesce(int mode)
{
    int old = sc_mode();
    if (old == SC_OFF)
        return;
    atomic_store(&G.mode, mode);
    sc_enter();
    for (unsigned i = 0; i < SC_NSLOTS; i++) {
        struct sc_slot *s = &G.slots[i];
        if (s->fd < 0 && s->len == 0)
            continue;
        sc_slot_lock(s);
        sc_flush_locked(s);
        sc_slot_unlock(s);
    }
    sc_leave();
}

void sc_give_up(const char *why)
{
    if (sc_mode() == SC_OFF || sc_mode() == SC_PASS)
        return;
    sc_plan_off();
    sc_quiesce(SC_PASS);
    sc_report("unchanged", "%s: writes are no longer coalesced%s in this process", why,
              sc_plan_present() ? " and the plan is no longer applied" : "");
}

/* ---- the fd table ----------------------------------------------------- */

static void touch_hi(int fd)
{
    size_t want = (size_t)fd + 1, cur = atomic_load_explicit(&G.fd_hi, memory_order_relaxed);
    while (cur < want && !atomic_compare_exchange_weak(&G.fd_hi, &cur, want))
        ;
}

/* Forgets what is known about fd (it was closed, replaced or reopened).
 * Its slot, if any, must have been flushed and released already. */
void sc_forget(int fd)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (!e || (e->kind == SC_FD_UNKNOWN && !e->has_inode && !e->err))
        return;
    if (e->err)
        lost_err(fd, sc_take_err(fd));
    e->kind = SC_FD_UNKNOWN;
    e->has_inode = 0;
    e->small = 0;
    e->gen = 0;
    e->seekable = 0;
    e->shares = 0;
    e->born = 0;
}

void sc_forget_range(unsigned lo, unsigned hi)
{
    size_t top = atomic_load(&G.fd_hi);
    if (hi >= top)
        hi = top ? (unsigned)top - 1 : 0;
    for (unsigned fd = lo; fd <= hi && fd < top; fd++)
        sc_forget((int)fd);
}

/* Writes out fd's slot, if it is bound to one (short writes or a pending
 * offset), and frees the slot. */
static void unbind_slot(int fd, struct sc_fdent *e)
{
    if (!e->gen)
        return;
    struct sc_slot *s = &G.slots[e->slot];
    sc_slot_lock(s);
    if (s->fd == fd && s->gen == e->gen) {
        sc_flush_locked(s);
        int err = HELD(s) ? write_held(s) : 0;
        if (err) {
            set_err(fd, err); /* close reports it */
            drop_held(s, "the fd was closed");
        }
        s->fd = -1;
        s->gen++;
    }
    sc_slot_unlock(s);
}

/* fd is being closed (or replaced): write out its slot, release it and
 * hand back its pending error in *err. */
void sc_release_fd(int fd, int *err)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (!e)
        return;
    unbind_slot(fd, e);
    int x = sc_take_err(fd);
    if (err)
        *err = x;
    else if (x)
        lost_err(fd, x);
    sc_forget(fd);
}

/* fd's flags are about to change: write out and release its slot so that
 * the fd is classified again; a pending error stays. */
void sc_unbind(int fd)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (!e)
        return;
    sc_enter();
    unbind_slot(fd, e);
    /* The flags belong to the open file description, which the fd bound to
     * the file's slot may share with this one (a dup, 2>&1): write that
     * slot out and release it too, so that it learns the new flags. */
    uint64_t dev, ino;
    if (fd_inode(fd, &dev, &ino))
        for (unsigned i = 0; i < SC_NSLOTS; i++) {
            struct sc_slot *s = &G.slots[i];
            if (s->fd < 0 || s->dev != dev || s->ino != ino)
                continue;
            sc_slot_lock(s);
            if (s->fd >= 0 && s->dev == dev && s->ino == ino && !HELD(s)) {
                sc_flush_locked(s);
                s->fd = -1;
                s->gen++;
            }
            sc_slot_unlock(s);
        }
    e->kind = SC_FD_UNKNOWN;
    e->gen = 0;
    e->small = 0;
    e->shares = 0;
    sc_leave();
}

void sc_flush_path_result(uint64_t dev, uint64_t ino, int *again)
{
    uint64_t m = atomic_load(&G.pending);
    *again = 0;
    while (m) {
        unsigned i = (unsigned)__builtin_ctzll(m);
        m &= m - 1;
        if (G.slots[i].dev == dev && G.slots[i].ino == ino) {
            sc_enter();
            sc_flush_inode(dev, ino);
            sc_leave();
            *again = 1;
            return;
        }
    }
}

static int fd_inode(int fd, uint64_t *dev, uint64_t *ino)
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
        touch_hi(fd);
    }
    return 1;
}

/* Before a call on fd that could observe or change the file: writes out
 * pending bytes of the same file.  With take_err, returns the error a
 * deferred write on fd left (the caller reports it), else 0. */
int sc_observe(int fd, int take_err)
{
    int err = 0;
    sc_enter();
    if (take_err)
        err = sc_take_err(fd);
    if (take_err == 1 && !err)
        err = retry_held(fd); /* a call that writes data: held bytes go first */
    if (atomic_load(&G.pending)) {
        uint64_t dev, ino;
        if (fd_inode(fd, &dev, &ino))
            sc_flush_inode(dev, ino);
    }
    sc_leave();
    return err;
}

void sc_after_open(int fd)
{
    if (fd < 0)
        return;
    struct sc_fdent *e = sc_fdent(fd);
    if (e && (e->kind != SC_FD_UNKNOWN || e->has_inode || e->err)) {
        /* The fd was closed behind our back; its slot may still be bound. */
        int err = 0;
        sc_enter();
        if (e->gen) { /* bound to a slot (short writes or a pending offset) */
            struct sc_slot *s = &G.slots[e->slot];
            sc_slot_lock(s);
            if (s->fd == fd && s->gen == e->gen) {
                unhold(s);
                s->n_lost += s->len;
                if (s->len)
                    sc_report("lost", "fd %d was closed by a call the runtime cannot see while it held %zu deferred bytes",
                              fd, s->len);
                s->len = 0;
                s->vpos_set = 0; /* its description is gone */
                clear_pending(s);
                s->fd = -1;
                s->gen++;
            }
            sc_slot_unlock(s);
        }
        err = sc_take_err(fd);
        if (err)
            lost_err(fd, err);
        sc_forget(fd);
        sc_leave();
    }
    if (atomic_load(&G.pending)) {
        struct statfs sf;
        if (sc_sys2(SYS_fstatfs, fd, (long)&sf) == 0 && sf.f_type == PROC_SUPER_MAGIC) {
            /* /proc/self/fdinfo shows file positions, /proc/self/io the
             * bytes written: what is pending must be done. */
            sc_enter();
            sc_flush_all();
            sc_leave();
        } else {
            sc_observe(fd, 0);
        }
    }
}

/* ---- mapped files ----------------------------------------------------- */

static int is_mapped(uint64_t dev, uint64_t ino)
{
    if (G.map_overflow)
        return 1;
    for (int i = 0; i < G.n_mapped; i++)
        if (G.mapped[i][0] == dev && G.mapped[i][1] == ino)
            return 1;
    return 0;
}

void sc_note_mapped(uint64_t dev, uint64_t ino)
{
    sc_enter();
    sc_spin_lock(&G.map_lock);
    if (!is_mapped(dev, ino)) {
        if (G.n_mapped < 256) {
            G.mapped[G.n_mapped][0] = dev;
            G.mapped[G.n_mapped][1] = ino;
            G.n_mapped++;
        } else {
            G.map_overflow = 1;
        }
    }
    sc_spin_unlock(&G.map_lock);
    /* Stop deferring on it: unbind its slot; the fds get reclassified. */
    for (unsigned i = 0; i < SC_NSLOTS; i++) {
        struct sc_slot *s = &G.slots[i];
        if (s->fd < 0 || (!G.map_overflow && (s->dev != dev || s->ino != ino)))
            continue;
        sc_slot_lock(s);
        if (s->fd >= 0 && !HELD(s)) {
            sc_flush_locked(s);
            struct sc_fdent *e = sc_fdent(s->fd);
            if (e)
                e->kind = SC_FD_UNKNOWN;
            s->fd = -1;
            s->gen++;
        }
        sc_slot_unlock(s);
    }
    sc_leave();
}

/* ---- classification --------------------------------------------------- */

static int fs_ok(long type)
{
    switch ((unsigned long)type & 0xffffffffUL) {
    case EXT4_SUPER_MAGIC:   /* ext2/3/4 */
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
    case F2FS_SUPER_MAGIC:
    case OVERLAYFS_SUPER_MAGIC:
    case 0x2fc12fc1: /* zfs */
    case 0xca451a4e: /* bcachefs */
    case 0x3153464a: /* jfs */
    case REISERFS_SUPER_MAGIC:
    case NFS_SUPER_MAGIC:
    case 0x2011BAB0: /* exfat */
    case MSDOS_SUPER_MAGIC:
    case 0x5346544e: /* ntfs */
        return 1;
    default:
        /* proc, sysfs, cgroup, debugfs, fuse, ...: a write there can be a
         * command, and two commands must not become one. */
        return 0;
    }
}

/* Decides whether fd's short writes may be deferred. */
static void classify(int fd, struct sc_fdent *e)
{
    struct stat st;
    struct statfs sf;
    touch_hi(fd);
    if (sc_sys2(SYS_fstat, fd, (long)&st) < 0) {
        e->kind = SC_FD_UNKNOWN; /* bad fd: the write reports it */
        return;
    }
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->has_inode = 1;
    long fl = sc_sys2(SYS_fcntl, fd, F_GETFL);
    int ok = S_ISREG(st.st_mode) && fl >= 0 && (fl & O_ACCMODE) != O_RDONLY &&
             !(fl & (O_DIRECT | O_DSYNC | O_SYNC | O_PATH)) && !is_mapped(st.st_dev, st.st_ino) &&
             sc_sys2(SYS_fstatfs, fd, (long)&sf) == 0 && fs_ok(sf.f_type);
    e->small = 0;
    e->gen = 0;
    e->kind = ok ? SC_FD_COAL : SC_FD_OTHER;
    e->seekable = S_ISREG(st.st_mode) && fl >= 0 && !(fl & O_PATH) && !is_mapped(st.st_dev, st.st_ino) &&
                  (ok || (sc_sys2(SYS_fstatfs, fd, (long)&sf) == 0 && fs_ok(sf.f_type)));
}

/* kcmp(KCMP_FILE): 1 when fds a and b are one open file description, 0
 * when not or when the kernel cannot say (then the caller writes the slot
 * out between the two fds: correct, only fewer writes coalesced). */
static int no_kcmp; /* kcmp refused (ENOSYS, EPERM) or SYSCLUSTER_TEST_NO_KCMP */

static int same_description(int a, int b)
{
    if (no_kcmp)
        return 0;
    long r = sc_sys5(SYS_kcmp, G.pid, G.pid, 0 /* KCMP_FILE */, a, b);
    if (r < 0 && r != -EBADF)
        no_kcmp = 1;
    return r == 0;
}

/* Is fd bound to slot s: its owner, or a fd of the owner's open file
 * description writing into the same buffer?  (The slot lock is held.) */
static int attached(struct sc_slot *s, int fd, struct sc_fdent *e)
{
    return s->gen == e->gen && s->fd >= 0 && (s->fd == fd || e->shares);
}

/* bind_slot's end: fd's entry names slot s (locked, as is bind_lock). */
static struct sc_slot *bound(struct sc_fdent *e, struct sc_slot *s, const struct stat *st, int shares)
{
    e->slot = (uint8_t)(s - G.slots);
    e->gen = s->gen;
    e->shares = (uint8_t)shares;
    e->dev = st->st_dev;
    e->ino = st->st_ino;
    e->has_inode = 1;
    sc_slot_unlock(s);
    sc_spin_unlock(&G.bind_lock);
    return s;
}

/* Binds a slot to fd.  A file has at most one slot: if another fd holds
 * the file's slot, fd joins it when the two are one open file description
 * (a dup, `prog > log 2>&1`: the same offset, so the bytes of both can go
 * out in one write, in order); else the slot's bytes are written out
 * through the fd that deferred them (at its offset) and fd takes it over.
 * Returns the slot or NULL. */
static struct sc_slot *bind_slot(int fd, struct sc_fdent *e)
{
    struct stat st;
    struct sc_slot *s = NULL;
    if (sc_sys2(SYS_fstat, fd, (long)&st) < 0 || !S_ISREG(st.st_mode) || is_mapped(st.st_dev, st.st_ino)) {
        e->kind = SC_FD_OTHER;
        return NULL;
    }
    long fl = sc_sys2(SYS_fcntl, fd, F_GETFL);
    if (fl < 0)
        return NULL;
    if (G.g_state != 1 && sc_guardian_start() != 0) {
        e->kind = SC_FD_OTHER;
        return NULL;
    }
    sc_spin_lock(&G.bind_lock);
    /* The same file through another fd: write that out first. */
    for (unsigned i = 0; i < SC_NSLOTS; i++) {
        struct sc_slot *o = &G.slots[i];
        if (o->fd >= 0 && o->dev == st.st_dev && o->ino == st.st_ino) {
            s = o;
            break;
        }
    }
    if (s && s->fd != fd) {
        sc_slot_lock(s);
        if (s->fd >= 0 && s->dev == st.st_dev && s->ino == st.st_ino && same_description(fd, s->fd))
            return bound(e, s, &st, 1);
        sc_slot_unlock(s);
    }
    if (!s)
        for (unsigned i = 0; i < SC_NSLOTS; i++)
            if (G.slots[i].fd < 0) {
                s = &G.slots[i];
                break;
            }
    for (unsigned n = 0; !s && n < SC_NSLOTS; n++) {
        s = &G.slots[G.evict_next++ % SC_NSLOTS];
        if (HELD(s)) /* its bytes wait for the program's retry */
            s = NULL;
    }
    if (s)
        sc_slot_lock(s);
    if (!s || HELD(s)) {
        if (s)
            sc_slot_unlock(s);
        sc_spin_unlock(&G.bind_lock);
        return NULL;
    }
    sc_flush_locked(s); /* its buffer is the region's (sc_region_create) */
    s->fd = fd;
    s->dev = st.st_dev;
    s->ino = st.st_ino;
    s->append = (fl & O_APPEND) != 0;
    s->gen++;
    FUTILE(s).backoff = FUTILE(s).skip = 0;
    return bound(e, s, &st, 0);
}

/* Every 64th deferred write: has the guardian stopped beating while
 * bytes wait?  (Only a SIGKILL aimed at it alone does that.)  Then reap it
 * and start another, or the time bound and the SIGKILL safety are gone. */
static void check_guardian(void)
{
    struct timespec ts;
    if (atomic_load(&G.g_state) != 1 || clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0)
        return;
    long now = ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
    if (now - atomic_load(&G.sh->beat) < 20L * G.flush_ms + 100 || !guardian_gone(G.g_pid))
        return;
    sc_guardian_lost();
    sc_report("guardian", "the guardian task was killed; starting another");
    sc_guardian_start();
}

static void wake_guardian(void)
{
    if (atomic_load(&G.sh->idle)) {
        atomic_fetch_add(&G.sh->wake, 1);
        sc_futex_wake_shared(&G.sh->wake, 1);
    }
}

/* The write went to the kernel directly: first write out everything
 * deferred, so that no one can see this write before an earlier one. */
static long direct(int fd, const struct iovec *iov, int iovcnt)
{
    atomic_fetch_add_explicit(&G.c_direct, 1, memory_order_relaxed);
    if (sc_unlikely(atomic_load_explicit(&n_held, memory_order_relaxed))) {
        int err = retry_held(fd); /* the file's held bytes go first */
        if (err)
            return -err;
    }
    if (atomic_load(&G.pending)) {
        sc_enter();
        sc_flush_all();
        sc_leave();
    }
    (void)iov;
    (void)iovcnt;
    return SC_DIRECT;
}

/* Is fd's filesystem too full to start a buffer?  A buffer acknowledges
 * up to cap bytes before it is written; with less than twice that free
 * for it and for every other buffer pending (block rounding, metadata),
 * a flush could fail where the plain write would not have. */
static int near_full(int fd, uint64_t dev)
{
    int64_t need = 2 * (int64_t)G.cap * (1 + __builtin_popcountll(atomic_load(&G.pending)));
    /* Far from full, the last answer, less what was written since, will
     * do for a while: fstatfs once per 16 buffers there, once per buffer
     * within 64 buffers of full (a cost of ~0.5 % on 8-byte writes). */
    if (atomic_load_explicit(&room_dev, memory_order_relaxed) == dev &&
        atomic_load_explicit(&room, memory_order_relaxed) > 64 * need &&
        (atomic_fetch_add_explicit(&room_uses, 1, memory_order_relaxed) & 15) != 15) {
        atomic_fetch_sub_explicit(&room, (int64_t)G.cap, memory_order_relaxed);
        return 0;
    }
    struct statfs sf;
    if (sc_sys2(SYS_fstatfs, fd, (long)&sf) < 0)
        return 0;
    int64_t unit = sf.f_frsize ? (int64_t)sf.f_frsize : (int64_t)sf.f_bsize;
    int64_t free = (int64_t)sf.f_bavail * unit;
    atomic_store_explicit(&room_dev, dev, memory_order_relaxed);
    atomic_store_explicit(&room, free - (int64_t)G.cap, memory_order_relaxed);
    return free < need;
}

/* One crossing for the slot's bytes and this write (fusion): writev of
 * both.  The slot lock is held and s->len > 0.  Returns what the write
 * returns, -errno, or SC_DIRECT (the caller writes). */
static long fused(struct sc_slot *s, const struct iovec *uiov, int uiovcnt)
{
    struct iovec v[17];
    if (uiovcnt > 16) {
        sc_flush_locked(s);
        return SC_DIRECT;
    }
    if (!alone_moves_offset(s)) {
        /* Only the guardian may write these (see alone_moves_offset):
         * no fusion with this write, which follows them. */
        size_t done = 0;
        int d = delegate(s, &done);
        if (d > 0) {
            keep(s, done, d); /* this write is the next call, and fails with it */
            return -d;
        }
        if (d < 0 && done) { /* the guardian died inside it: the rest by this thread */
            int err = write_rest(s, done);
            if (err)
                return -err;
        }
        if (d == 0 || done) {
            written_out(s);
            return SC_DIRECT;
        }
        /* No guardian: as below, by this thread. */
    }
    int64_t pos = flush_note(s, 0);
    if (pos < 0) {
        atomic_store(&s->flushing, 0);
        sc_flush_locked(s); /* records the error */
        return SC_DIRECT;
    }
    v[0].iov_base = s->buf;
    v[0].iov_len = s->len;
    memcpy(v + 1, uiov, sizeof *uiov * (size_t)uiovcnt);
    long r = sc_sys3(SYS_writev, s->fd, (long)v, uiovcnt + 1);
    atomic_fetch_add_explicit(&G.c_fused, 1, memory_order_relaxed);
    s->n_flushes++;
    if (r >= (long)s->len) {
        long user = r - (long)s->len;
        written_out(s);
        return user > 0 ? user : SC_DIRECT; /* 0: let the kernel say why */
    }
    if (r < 0) {
        /* The deferred part failed: this write is the next call, and
         * fails with it; the bytes stay, held, for its retry. */
        keep(s, 0, (int)-r);
        return r;
    }
    /* Part of the deferred bytes went out: finish them (the buffer stays
     * untouched while flushing is set, for the guardian's recovery). */
    int err = write_rest(s, (size_t)r);
    if (err)
        return -err;
    written_out(s);
    return SC_DIRECT;
}

/* The heart of write/writev: defers a short write to a regular file, or
 * says SC_DIRECT (the caller makes the real call), or returns the result.
 * Called inside sc_enter/sc_leave. */
long sc_write_iov(int fd, const struct iovec *iov, int iovcnt, size_t total, size_t threshold)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (e && sc_unlikely(e->err)) {
        int err = sc_take_err(fd);
        if (err)
            return -err;
    }
    if (!e || sc_mode() != SC_ACTIVE)
        return direct(fd, iov, iovcnt);
    if (e->kind == SC_FD_UNKNOWN)
        classify(fd, e);
    if (e->kind != SC_FD_COAL || total == 0)
        return direct(fd, iov, iovcnt);
    if (total >= threshold) {
        /* Large (or not from a site that defers): everything pending goes
         * out first -- the other files', and this file's slot through the
         * fd that deferred its bytes -- or, when fd is bound to its file's
         * slot, fused with this write. */
        if (sc_unlikely(atomic_load_explicit(&n_held, memory_order_relaxed))) {
            int err = retry_held(fd);
            if (err)
                return -err;
        }
        atomic_fetch_sub_explicit(&room, (int64_t)total, memory_order_relaxed);
        struct sc_slot *own = e->gen ? &G.slots[e->slot] : NULL;
        uint64_t others = atomic_load(&G.pending);
        if (own && own->gen == e->gen && (own->fd == fd || e->shares))
            others &= ~(1ULL << e->slot);
        else
            own = NULL;
        if (others) {
            for (unsigned i = 0; i < SC_NSLOTS; i++)
                if (others & (1ULL << i)) {
                    sc_slot_lock(&G.slots[i]);
                    sc_flush_locked(&G.slots[i]);
                    sc_slot_unlock(&G.slots[i]);
                }
        }
        if (!own)
            return SC_DIRECT;
        struct sc_slot *s = own;
        long r = SC_DIRECT;
        sc_slot_lock(s);
        if (attached(s, fd, e)) {
            if (s->vpos_set)
                sc_flush_locked(s); /* the write goes where the reads left the offset */
            if (s->len)
                r = fused(s, iov, iovcnt);
        } else {
            sc_flush_locked(s); /* rebound since: whoever holds it now goes first */
        }
        sc_slot_unlock(s);
        atomic_fetch_add_explicit(&G.c_direct, 1, memory_order_relaxed);
        return r;
    }
    if (e->small < SC_WARMUP) {
        e->small++;
        return direct(fd, iov, iovcnt);
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        struct sc_slot *s;
        if (!e->gen) {
            if (sc_unlikely(atomic_load_explicit(&n_held, memory_order_relaxed))) {
                int err = retry_held(fd); /* before taking the file's slot over */
                if (err)
                    return -err;
            }
            s = bind_slot(fd, e);
            if (!s)
                return direct(fd, iov, iovcnt);
        } else {
            s = &G.slots[e->slot];
        }
        sc_slot_lock(s);
        if (!attached(s, fd, e)) {
            sc_slot_unlock(s);
            e->gen = 0; /* evicted or replaced: bind again */
            e->shares = 0;
            continue;
        }
        if (sc_unlikely(HELD(s))) {
            sc_slot_unlock(s);
            int err = retry_held(fd);
            if (err)
                return -err;
            continue;
        }
        if (sc_mode() != SC_ACTIVE) {
            sc_flush_locked(s);
            sc_slot_unlock(s);
            return SC_DIRECT;
        }
        if (s->vpos_set)
            sc_flush_locked(s); /* deferred bytes land at the offset the reads left */
        if (s->len == 0 && sc_unlikely(FUTILE(s).skip)) {
            FUTILE(s).skip--; /* see futile */
            sc_slot_unlock(s);
            return direct(fd, iov, iovcnt);
        }
        if (s->len == 0) {
            /* A new buffer: the guardian must be there before we acknowledge
             * anything, and fd must still be the file we bound. */
            if (sc_unlikely(atomic_load(&G.g_state) != 1)) {
                sc_slot_unlock(s);
                if (sc_guardian_start() != 0)
                    return direct(fd, iov, iovcnt);
                continue;
            }
            struct stat st;
            if (sc_sys2(SYS_fstat, fd, (long)&st) < 0 || st.st_dev != s->dev || st.st_ino != s->ino ||
                (s->fd != fd && !same_description(fd, s->fd))) {
                if (s->fd == fd) {
                    s->fd = -1;
                    s->gen++;
                }
                sc_slot_unlock(s);
                e->kind = SC_FD_UNKNOWN;
                e->has_inode = 0;
                e->gen = 0;
                e->shares = 0;
                return direct(fd, iov, iovcnt);
            }
            if (near_full(fd, s->dev)) {
                /* Too little room to acknowledge a buffer: write through,
                 * so that a full disk fails the write that fails plain. */
                sc_slot_unlock(s);
                e->small = 0;
                return direct(fd, iov, iovcnt);
            }
        }
        if (s->len + total > s->cap) {
            long r = fused(s, iov, iovcnt);
            sc_slot_unlock(s);
            return r;
        }
        size_t at = s->len;
        for (int i = 0; i < iovcnt; i++) {
            if (sc_copy_user(s->buf + at, iov[i].iov_base, iov[i].iov_len) < 0) {
                /* A bad buffer: the kernel must say what happens (EFAULT
                 * or a short write), after the earlier bytes. */
                sc_flush_locked(s);
                sc_slot_unlock(s);
                return SC_DIRECT;
            }
            at += iov[i].iov_len;
        }
        int first = s->len == 0;
        FUTILE(s).writes = first ? 1 : FUTILE(s).writes + 1;
        if (first) {
            atomic_fetch_add(&s->cycle, 1);
            atomic_store_explicit(&s->first_ns, sc_now_ns(), memory_order_relaxed); /* the time bound runs from here */
        }
        s->len = at; /* the commit: from here the bytes are acknowledged */
        s->n_writes++;
        s->n_bytes += total;
        sc_slot_unlock(s);
        /* (-v counts deferred writes in n_writes: no locked add here, the
         * fast path's most expensive instruction after the slot lock.) */
        if (first) {
            atomic_fetch_or(&G.pending, 1ULL << (s - G.slots));
            wake_guardian();
        }
        if (sc_unlikely((s->n_writes & 63) == 0))
            check_guardian();
        return (long)total;
    }
    return direct(fd, iov, iovcnt);
}

/* ---- pending offsets ---------------------------------------------------- */

/* Below every plain filesystem's largest offset (vfat: 4 GiB - 1): there,
 * lseek(fd, off, SEEK_SET) on a regular file returns off and does nothing
 * but set the offset. */
#define SC_SEEK_MAX ((int64_t)1 << 31)

/* A planned lseek(fd, off, SEEK_SET): keep off as the file's pending
 * offset instead (1), or say that the call must be made (0).  The offset
 * is a slot's state, so everything that writes out a slot's bytes before
 * anyone could observe them -- any other call on the file, every message
 * out of the process, fork, exec, exit, the guardian's time bound and
 * SIGKILL -- sets it first (sc_flush_locked). */
int sc_seek_pending(int fd, int64_t off, int whence)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (whence != SEEK_SET || off < 0 || off >= SC_SEEK_MAX || !e || sc_mode() != SC_ACTIVE || sc_vfork_child())
        return 0;
    if (atomic_load(&G.g_state) != 1 && sc_guardian_start() != 0)
        return 0; /* no time bound and no SIGKILL safety without it */
    int done = 0;
    sc_enter();
    if (e->kind == SC_FD_UNKNOWN)
        classify(fd, e);
    struct sc_slot *s = !e->seekable ? NULL : e->gen ? &G.slots[e->slot] : bind_slot(fd, e);
    if (s) {
        sc_slot_lock(s);
        if (s->fd == fd && s->gen == e->gen && sc_mode() == SC_ACTIVE && atomic_load(&G.g_state) == 1) {
            struct stat st;
            if (!s->vpos_set && s->len == 0 &&
                (sc_sys2(SYS_fstat, fd, (long)&st) < 0 || st.st_dev != s->dev || st.st_ino != s->ino)) {
                /* A new cycle, and fd is no longer the file bound: closed
                 * where we cannot see.  Let the call be made. */
                s->fd = -1;
                s->gen++;
                e->kind = SC_FD_UNKNOWN;
                e->has_inode = 0;
                e->gen = 0;
            } else {
                if (s->len)
                    sc_flush_locked(s); /* deferred bytes land at the old offset */
                int first = !s->vpos_set;
                if (first)
                    atomic_store_explicit(&s->first_ns, sc_now_ns(), memory_order_relaxed);
                s->vpos = off;
                s->vpos_set = 1;
                if (first) {
                    atomic_fetch_add(&s->cycle, 1);
                    atomic_fetch_or(&G.pending, 1ULL << (s - G.slots));
                }
                done = 1;
                if (first)
                    wake_guardian();
            }
        }
        sc_slot_unlock(s);
    }
    sc_leave();
    return done;
}

/* A planned read on fd while it has a pending offset: pread there and
 * move the offset on (1, result or -errno in *ret); 0: no pending offset,
 * the read is made as it is. */
int sc_read_pending(int fd, void *buf, size_t n, long *ret)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (!e || !e->gen || sc_vfork_child())
        return 0;
    struct sc_slot *s = &G.slots[e->slot];
    if (!s->vpos_set || s->fd != fd) /* checked again under the lock */
        return 0;
    int done = 0;
    sc_enter();
    sc_slot_lock(s);
    if (s->fd == fd && s->gen == e->gen && s->vpos_set) {
        long r = sc_sys4(SYS_pread64, fd, (long)buf, (long)n, s->vpos);
        if (r > 0)
            s->vpos += r;
        *ret = r;
        done = 1;
    }
    sc_slot_unlock(s);
    sc_leave();
    return done;
}

/* ---- vfork ------------------------------------------------------------ */

/* In a vfork child (which shares our memory but not our fd table) the
 * runtime must not touch its state: every wrapper passes through. */
int sc_vfork_child(void)
{
    if (sc_likely(!sc_tls.vfork))
        return 0;
    if (sc_getpid() != G.pid)
        return 1;
    sc_tls.vfork = 0; /* the parent, resumed */
    return 0;
}

/* ---- diagnostics ------------------------------------------------------ */

void sc_report(const char *kind, const char *fmt, ...)
{
    char text[512], msg[640];
    int saved = errno;
    char comm[32] = "?";
    long fd = sc_sys4(SYS_openat, AT_FDCWD, (long)"/proc/self/comm", O_RDONLY | O_CLOEXEC, 0);
    if (fd >= 0) {
        long n = sc_sys3(SYS_read, fd, (long)comm, sizeof comm - 1);
        comm[n > 0 ? n - 1 : 0] = 0; /* drop the newline */
        sc_sys1(SYS_close, fd);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    int sent = 0;
    if (G.report_len) {
        /* The supervisor prints it (once per distinct report). */
        int n = snprintf(msg, sizeof msg, "syscluster-runtime/1\t%s\t%d\t%s\t%s\n", kind, (int)sc_getpid(), comm, text);
        long s = sc_sys3(SYS_socket, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s >= 0 && n > 0) {
            struct sockaddr_un a = {.sun_family = AF_UNIX};
            memcpy(a.sun_path, G.report, (size_t)G.report_len);
            long r = sc_sys6(SYS_sendto, s, (long)msg, n, MSG_DONTWAIT, (long)&a,
                             (long)(offsetof(struct sockaddr_un, sun_path) + (size_t)G.report_len));
            sent = r == n;
        }
        if (s >= 0)
            sc_sys1(SYS_close, s);
    }
    if (!sent && (G.verbose || strcmp(kind, "stats") != 0)) {
        int n = snprintf(msg, sizeof msg, "syscluster: %s[%d]: %s\n", comm, (int)sc_getpid(), text);
        if (n > 0)
            sc_sys3(SYS_write, 2, (long)msg, n < (int)sizeof msg ? n : (int)sizeof msg - 1);
    }
    errno = saved;
}

/* ---- start and end ---------------------------------------------------- */

static size_t env_size(const char *name, size_t dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    return *end ? dflt : (size_t)x;
}

static void atfork_prepare(void)
{
    if (sc_mode() == SC_OFF)
        return;
    sc_may_share();
    sc_enter();
    sc_spin_lock(&G.bind_lock);
    for (unsigned i = 0; i < SC_NSLOTS; i++) {
        sc_slot_lock(&G.slots[i]);
        sc_flush_locked(&G.slots[i]);
    }
    sc_spin_lock(&G.g_lock);
}

static void atfork_parent(void)
{
    if (sc_mode() == SC_OFF)
        return;
    sc_spin_unlock(&G.g_lock);
    for (unsigned i = 0; i < SC_NSLOTS; i++)
        sc_slot_unlock(&G.slots[i]);
    sc_spin_unlock(&G.bind_lock);
    sc_leave();
}

static void atfork_child(void)
{
    if (sc_mode() == SC_OFF)
        return;
    G.pid = (int)sc_getpid();
    atomic_store(&G.g_lock, 0);
    for (unsigned i = 0; i < SC_NSLOTS; i++) {
        atomic_store(&G.slots[i].lock, 0);
        atomic_store(&G.slots[i].owner, 0);
    }
    atomic_store(&G.bind_lock, 0);
    sc_forget_held();
    sc_guardian_forget(); /* the guardian shares the parent's fd table, not ours; so does the region */
    sc_plan_forked();
    sc_leave();
}

void sc_process_end(void)
{
    int m = sc_mode();
    if (m == SC_OFF || sc_vfork_child()) /* a vfork child's exit is not ours */
        return;
    if (m == SC_ACTIVE)
        sc_quiesce(SC_WT);
    sc_guardian_stop();
    sc_drop_held("the program did not write to the file again");
    if (sc_attn() & SC_ERRS) {
        size_t top = atomic_load(&G.fd_hi);
        for (size_t fd = 0; fd < top; fd++)
            if (G.fdtab[fd].err)
                lost_err((int)fd, sc_take_err((int)fd));
    }
}

__attribute__((constructor(101))) static void sc_init(void)
{
    G.pid = (int)sc_getpid();
    for (unsigned i = 0; i < SC_NSLOTS; i++)
        G.slots[i].fd = -1;
    G.threshold = env_size("SYSCLUSTER_COALESCE", 0);
    G.verbose = (int)env_size("SYSCLUSTER_VERBOSE", 0);
    G.flush_ms = (int)env_size("SYSCLUSTER_FLUSH_MS", 5);
    no_kcmp = (int)env_size("SYSCLUSTER_TEST_NO_KCMP", 0);
    if (G.flush_ms < 1)
        G.flush_ms = 1;
    const char *rep = getenv("SYSCLUSTER_REPORT");
    if (rep && *rep && strlen(rep) < sizeof G.report - 1) {
        /* An abstract socket name: a leading NUL, then the name. */
        G.report[0] = 0;
        memcpy(G.report + 1, rep, strlen(rep));
        G.report_len = (int)strlen(rep) + 1;
    }
    const char *plan = getenv("SYSCLUSTER_PLAN");
    int planned = plan && *plan && sc_plan_parse(plan) > 0;
    if (G.threshold == 0 && !planned)
        return; /* not asked to coalesce nor to apply a plan: stay out of the way */
    size_t thr = G.threshold > sc_plan_max_threshold() ? G.threshold : sc_plan_max_threshold();
    G.cap = 64 * 1024;
    if (G.cap < sc_plan_buffer() && sc_plan_buffer() <= (1 << 20))
        G.cap = (sc_plan_buffer() + 4095) & ~(size_t)4095;
    if (G.cap < 4 * thr)
        G.cap = (4 * thr + 4095) & ~(size_t)4095;
    struct rlimit rl;
    size_t n = 1 << 16;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && rl.rlim_max > n)
        n = rl.rlim_max;
    if (n > (1 << 20))
        n = 1 << 20;
    void *t = (void *)sc_sys6(SYS_mmap, 0, (long)(n * sizeof(struct sc_fdent)), PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if ((long)t < 0 && (long)t > -4096)
        return;
    G.fdtab = t;
    G.fdmax = n;
    char culprit[256];
    if (sc_scan_loaded(culprit, sizeof culprit)) {
        atomic_store(&G.mode, SC_PASS);
        sc_report("unchanged", "%s makes system calls without libc (raw syscall instructions): it runs unchanged%s",
                  culprit, planned ? " (the plan is not applied)" : "");
        return;
    }
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    atomic_store(&G.mode, SC_ACTIVE);
#ifdef SC_TEST_NO_GUARDIAN
    /* A test build only (preload/Makefile: build/test/libsyscluster-preload-noguardian.so):
     * the control that shows SIGKILL loses records without a guardian. */
    if (sc_region_create() == 0)
        atomic_store(&G.g_state, 1);
#endif
    sc_signals_init();
    if (planned)
        sc_plan_start();
    /* The guardian starts at the first deferral (bind, sc_write): a
     * program that defers nothing (most short ones) starts none, and its
     * system calls on fds do not pay for a shared fd table.  Its clone
     * leaves the program's memory out (guardian.c, g_nocopy_mark), so a
     * large program pays no page-table copy for it. */
}

__attribute__((destructor(101))) static void sc_fini(void)
{
    sc_process_end();
    if (G.verbose && G.fdtab) {
        uint64_t lost = 0, deferred = 0;
        for (unsigned i = 0; i < SC_NSLOTS; i++) {
            lost += G.slots[i].n_lost;
            deferred += G.slots[i].n_writes;
        }
        sc_report("stats", "deferred=%llu direct=%llu flushes=%llu fused=%llu lost_bytes=%llu",
                  (unsigned long long)deferred, (unsigned long long)G.c_direct,
                  (unsigned long long)G.c_flushes, (unsigned long long)G.c_fused, (unsigned long long)lost);
        sc_plan_report();
    }
}
