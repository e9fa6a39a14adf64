/* Pending offsets: a planned lseek kept in user space and answered by
 * the next planned read as a pread (plans, docs/RUNTIME.md).  Builds on
 * coalesce.c. */
#include "rt.h"
#include "sys.h"

#include <fcntl.h>

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
        sc_classify(fd, e);
    struct sc_slot *s = !e->seekable ? NULL : e->gen ? &G.slots[e->slot] : sc_bind_slot(fd, e);
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
                    sc_wake_guardian();
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
