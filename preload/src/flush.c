/* Flushing: writing a slot's deferred bytes out, by the program's thread
 * or by the guardian (delegate), the bytes a failed flush keeps for the
 * program's retry, futile buffers, and room on the file system.  Builds on
 * state.c. */
#include "rt.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/statfs.h>

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

void sc_clear_pending(struct sc_slot *s)
{
    unsigned i = (unsigned)(s - G.slots);
    atomic_fetch_and(&G.pending, ~(1ULL << i));
}

/* All of s's bytes are in the kernel (slot lock held). */
void sc_written_out(struct sc_slot *s)
{
    s->len = 0;
    atomic_store(&s->flushing, 0);
    sc_clear_pending(s);
}

/* Before each write call of a flush, its progress for the guardian's
 * recovery after SIGKILL (guardian.c, postmortem): done bytes of the buffer
 * are in the kernel, and where this call starts.  Returns the position
 * (size, for O_APPEND) or -errno. */
int64_t sc_flush_note(struct sc_slot *s, size_t done)
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

_Atomic int sc_n_held; /* slots holding bytes a failed flush could not write */
/* Per slot: the errno of the failed flush whose unwritten bytes the slot
 * keeps (0: none).  Outside struct sc_slot: a bigger slot costs ~2 % on
 * 8-byte writes (measured). */
int sc_held_err[SC_NSLOTS];

/* Futile buffers.  A buffer the program itself must write out after one
 * write (the next call observes the file: lseek, fstat, read, a message)
 * costs a flush on top of the write it saved.  After such a buffer the
 * file's next short writes go straight to the kernel -- 8 of them, twice
 * as many after each further futile buffer, up to 1024 -- and a buffer
 * that gathers two writes or more ends the backoff.  Per slot, outside
 * struct sc_slot (see sc_held_err); reset when the slot is bound. */
struct sc_backoff sc_futile[SC_NSLOTS];

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

/* Free space on the filesystem of the last buffer started (sc_near_full). */
static _Atomic uint64_t room_dev;
_Atomic int64_t sc_room;
static _Atomic unsigned room_uses;

/* A flush of s failed with err after `done` bytes: the slot keeps the rest
 * (held) instead of dropping them, takes no new bytes, and is not written
 * out again until the program writes to the file again (sc_retry_held).  The
 * slot lock is held. */
void sc_keep(struct sc_slot *s, size_t done, int err)
{
    size_t rest = s->len - done;
    s->len = 0; /* killed just here: those bytes were failing anyway */
    atomic_store(&s->flushing, 0);
    memmove(s->buf, s->buf + done, rest);
    s->len = rest;
    if (!HELD(s)) {
        atomic_fetch_add(&sc_n_held, 1);
        atomic_fetch_add(&G.attn, 1); /* every wrapper looks: the next write retries them */
    }
    HELD(s) = err;
    /* Negative: held, the guardian leaves the slot (it must not write held
     * bytes), and the program reports the error itself.  A failure the
     * guardian met on these bytes before (its time-bound flush, while the
     * program was not writing: gerr > 0) is this one, told now, once;
     * left for the guardian's error to be taken (state.c), a later call
     * on the fd would fail with it again (close, after every byte was
     * written). */
    atomic_store(&s->gerr, -err);
    sc_clear_pending(s);
}

void sc_unhold(struct sc_slot *s)
{
    if (!HELD(s))
        return;
    HELD(s) = 0;
    atomic_store(&s->gerr, 0);
    atomic_fetch_sub(&sc_n_held, 1);
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
int sc_alone_moves_offset(struct sc_slot *s)
{
    if (s->append)
        return 0;
    struct sc_fdent *e = sc_fdent(s->fd);
    return e && e->born && e->born - 1 == atomic_load_explicit(&G.forks, memory_order_relaxed);
}

/* fd was opened by this process: see sc_born. */
void sc_opened_here(int fd, uint32_t forks_before)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (e)
        sc_born(e, forks_before);
}

/* The guardian's heartbeat when it last failed to answer (-1: it answers). */
static _Atomic long stalled_beat = -1;

/* Has the guardian write s's bytes from *done on (guardian.c, serve)
 * while this thread waits; the slot lock is held.  Returns 0 when all are
 * out, the errno of the write that failed (*done: what is out), or -1 when
 * the guardian cannot (not running, gone, or stopped): the caller writes
 * from *done. */
int sc_delegate(struct sc_slot *s, size_t *done)
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
        if (pid > 0 && !sc_guardian_gone(pid))
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
int sc_write_rest(struct sc_slot *s, size_t done)
{
    int d = sc_alone_moves_offset(s) ? -1 : sc_delegate(s, &done);
    if (d > 0) {
        sc_keep(s, done, d);
        return HELD(s);
    }
    if (d == 0)
        return 0;
    while (done < s->len) {
        int64_t pos = sc_flush_note(s, done);
        if (pos < 0) {
            sc_keep(s, done, (int)-pos);
            return HELD(s);
        }
        long r = sc_sys3(SYS_write, s->fd, (long)(s->buf + done), (long)(s->len - done));
        if (r > 0)
            done += (size_t)r;
        else if (r != -EINTR) {
            sc_keep(s, done, r == 0 ? EIO : (int)-r);
            return HELD(s);
        }
    }
    return 0;
}

/* Writes the held bytes of s (slot lock held): 0 when all are out, else
 * the errno, and the rest stays held. */
int sc_write_held(struct sc_slot *s)
{
    int err = sc_write_rest(s, 0);
    if (err)
        return err;
    s->len = 0;
    atomic_store(&s->flushing, 0);
    sc_unhold(s);
    return 0;
}


/* Before a write through any fd of a file whose slot holds bytes: they go
 * out first, in order.  Returns 0, or the errno the write must fail with
 * (without writing): the failure is reported there, once. */
int sc_retry_held(int fd)
{
    uint64_t dev, ino;
    if (sc_likely(atomic_load_explicit(&sc_n_held, memory_order_relaxed) == 0) || !sc_fd_inode(fd, &dev, &ino))
        return 0;
    int err = 0;
    for (unsigned i = 0; i < SC_NSLOTS && !err; i++) {
        struct sc_slot *s = &G.slots[i];
        if (!HELD(s) || s->dev != dev || s->ino != ino)
            continue;
        sc_slot_lock(s);
        if (HELD(s) && s->fd >= 0 && s->dev == dev && s->ino == ino && (err = sc_write_held(s)) != 0)
            sc_take_err(s->fd); /* reported by this call */
        sc_slot_unlock(s);
    }
    return err;
}

/* Held bytes that will never be retried (closed, replaced, exit): dropped,
 * said once.  The slot lock is held. */
void sc_drop_slot_held(struct sc_slot *s, const char *why)
{
    if (!HELD(s))
        return;
    s->n_lost += s->len;
    if (s->len)
        sc_report("lost", "%zu bytes written to fd %d after a write to it failed (%s) were not written: %s", s->len,
                  s->fd, strerror(HELD(s)), why);
    s->len = 0;
    sc_unhold(s);
}

/* The process ends or execs: held bytes can no longer be retried. */
void sc_drop_held(const char *why)
{
    if (sc_likely(atomic_load(&sc_n_held) == 0))
        return;
    sc_enter();
    for (unsigned i = 0; i < SC_NSLOTS && atomic_load(&sc_n_held); i++) {
        sc_slot_lock(&G.slots[i]);
        sc_drop_slot_held(&G.slots[i], why);
        sc_slot_unlock(&G.slots[i]);
    }
    sc_leave();
}

/* In a fork child: the bytes belong to the parent, which retries them. */
void sc_forget_held(void)
{
    for (unsigned i = 0; i < SC_NSLOTS && atomic_load(&sc_n_held); i++)
        if (sc_held_err[i]) {
            G.slots[i].len = 0;
            sc_unhold(&G.slots[i]);
        }
}

/* Writes out a slot's bytes at the description's current offset (the
 * kernel appends for O_APPEND).  The slot lock is held.  A failure is kept
 * on the fd and reported by the next call that can report it; the bytes
 * not written stay in the slot, held (see keep). */
void sc_flush_locked(struct sc_slot *s)
{
    sc_guardian_err(s);
    if (s->vpos_set) {
        /* A pending offset goes first: it is where the reads left the file. */
        sc_sys3(SYS_lseek, s->fd, s->vpos, SEEK_SET);
        s->vpos_set = 0;
        if (s->len == 0)
            sc_clear_pending(s);
    }
    if (s->len == 0 || HELD(s)) {
        if (s->len == 0 && !s->vpos_set)
            sc_clear_pending(s); /* the guardian wrote it out */
        return;
    }
    note_flush(s);
    int err = 0;
    size_t done = 0;
    int64_t pos = 0;
    int d = sc_alone_moves_offset(s) ? -1 : sc_delegate(s, &done);
    if (d >= 0)
        err = d;
    else if ((pos = sc_flush_note(s, done)) < 0) {
        err = (int)-pos;
    } else {
        while (done < s->len) {
            long r = sc_sys3(SYS_write, s->fd, (long)(s->buf + done), (long)(s->len - done));
            if (r > 0 && (done += (size_t)r) < s->len)
                sc_flush_note(s, done); /* a short write: the next call's start */
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
        sc_set_err(s->fd, err);
        sc_keep(s, done, err);
        return;
    }
    if (err) {
        s->n_lost += s->len - done;
        sc_set_err(s->fd, err);
    }
    s->n_flushes++;
    atomic_fetch_add_explicit(&G.c_flushes, 1, memory_order_relaxed);
    sc_written_out(s);
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
    for (unsigned i = 0; G.slots && i < SC_NSLOTS; i++) {
        struct sc_slot *s = &G.slots[i];
        if (s->fd < 0 && s->len == 0 && atomic_load_explicit(&s->bias, memory_order_relaxed) == 0)
            continue;
        sc_slot_lock(s);
        atomic_store_explicit(&s->bias, 0, memory_order_relaxed); /* nothing is appended from here on */
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

/* ---- room on the file system -------------------------------------------- */

/* Is fd's filesystem too full to start a buffer?  A buffer acknowledges
 * up to cap bytes before it is written; with less than twice that free
 * for it and for every other buffer pending (block rounding, metadata),
 * a flush could fail where the plain write would not have. */
int sc_near_full(int fd, uint64_t dev)
{
    int64_t need = 2 * (int64_t)G.cap * (1 + __builtin_popcountll(atomic_load(&G.pending)));
    /* Far from full, the last answer, less what was written since, will
     * do for a while: fstatfs once per 16 buffers there, once per buffer
     * within 64 buffers of full (a cost of ~0.5 % on 8-byte writes). */
    if (atomic_load_explicit(&room_dev, memory_order_relaxed) == dev &&
        atomic_load_explicit(&sc_room, memory_order_relaxed) > 64 * need &&
        (atomic_fetch_add_explicit(&room_uses, 1, memory_order_relaxed) & 15) != 15) {
        atomic_fetch_sub_explicit(&sc_room, (int64_t)G.cap, memory_order_relaxed);
        return 0;
    }
    struct statfs sf;
    if (sc_sys2(SYS_fstatfs, fd, (long)&sf) < 0)
        return 0;
    int64_t unit = sf.f_frsize ? (int64_t)sf.f_frsize : (int64_t)sf.f_bsize;
    int64_t free = (int64_t)sf.f_bavail * unit;
    atomic_store_explicit(&room_dev, dev, memory_order_relaxed);
    atomic_store_explicit(&sc_room, free - (int64_t)G.cap, memory_order_relaxed);
    return free < need;
}
