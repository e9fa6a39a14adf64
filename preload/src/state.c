/* The runtime's shared state and its primitives: the slots that hold
 * deferred writes and the fd table (struct sc_global, rt.h), their locks,
 * the errors deferred writes leave on an fd, and an fd's file identity.
 * Every other file of the library builds on this one; it calls none of
 * them (but report.c). */
#include "rt.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>

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
    if (sc_unlikely(atomic_load_explicit(&s->gerr, memory_order_relaxed))) {
        int err = atomic_exchange(&s->gerr, 0);
        if (err && s->fd >= 0)
            sc_set_err(s->fd, err);
    }
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
int sc_vfork_child(void)
{
    if (sc_likely(!sc_tls.vfork))
        return 0;
    if (sc_getpid() != G.pid)
        return 1;
    sc_tls.vfork = 0; /* the parent, resumed */
    return 0;
}
