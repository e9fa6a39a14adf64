/* The fd table: what happens to deferred bytes when an fd is closed,
 * replaced, re-flagged or observed, when a file is opened, and when a file
 * is mapped (its writes are never deferred).  Builds on flush.c. */
#include "rt.h"
#include "sys.h"

#include <linux/magic.h>
#include <sys/statfs.h>

/* ---- the fd table ----------------------------------------------------- */


/* Forgets what is known about fd (it was closed, replaced or reopened).
 * Its slot, if any, must have been flushed and released already. */
void sc_forget(int fd)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (!e)
        return;
    e->born = 0; /* whatever reaches this number next is not known to be this process's alone */
    if (e->kind == SC_FD_UNKNOWN && !e->has_inode && !e->err)
        return;
    if (e->err)
        sc_lost_err(fd, sc_take_err(fd));
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
        int err = HELD(s) ? sc_write_held(s) : 0;
        if (err) {
            sc_set_err(fd, err); /* close reports it */
            sc_drop_slot_held(s, "the fd was closed");
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
        sc_lost_err(fd, x);
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
    if (sc_fd_inode(fd, &dev, &ino))
        for (unsigned i = 0; G.slots && i < SC_NSLOTS; i++) {
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
        err = sc_retry_held(fd); /* a call that writes data: held bytes go first */
    if (atomic_load(&G.pending)) {
        uint64_t dev, ino;
        if (sc_fd_inode(fd, &dev, &ino))
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
    if (e)
        e->born = 0; /* a dup's description is not new; an open notes its birth after this */
    if (e && (e->kind != SC_FD_UNKNOWN || e->has_inode || e->err)) {
        /* The fd was closed behind our back; its slot may still be bound. */
        int err = 0;
        sc_enter();
        if (e->gen) { /* bound to a slot (short writes or a pending offset) */
            struct sc_slot *s = &G.slots[e->slot];
            sc_slot_lock(s);
            if (s->fd == fd && s->gen == e->gen) {
                sc_unhold(s);
                s->n_lost += s->len;
                if (s->len)
                    sc_report("lost", "fd %d was closed by a call the runtime cannot see while it held %zu deferred bytes",
                              fd, s->len);
                s->len = 0;
                s->vpos_set = 0; /* its description is gone */
                sc_clear_pending(s);
                s->fd = -1;
                s->gen++;
            }
            sc_slot_unlock(s);
        }
        err = sc_take_err(fd);
        if (err)
            sc_lost_err(fd, err);
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

int sc_is_mapped(uint64_t dev, uint64_t ino)
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
    if (!sc_is_mapped(dev, ino)) {
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
    for (unsigned i = 0; G.slots && i < SC_NSLOTS; i++) {
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
