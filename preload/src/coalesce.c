/* Coalescing: deciding which fds may defer, binding an fd to a slot, and
 * the write path itself (sc_write_iov): defer, fuse or go direct.  Builds
 * on fdtable.c and flush.c. */
#include "rt.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

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
void sc_classify(int fd, struct sc_fdent *e)
{
    struct stat st;
    struct statfs sf;
    sc_touch_hi(fd);
    if (sc_sys2(SYS_fstat, fd, (long)&st) < 0) {
        e->kind = SC_FD_UNKNOWN; /* bad fd: the write reports it */
        return;
    }
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->has_inode = 1;
    long fl = sc_sys2(SYS_fcntl, fd, F_GETFL);
    int ok = S_ISREG(st.st_mode) && fl >= 0 && (fl & O_ACCMODE) != O_RDONLY &&
             !(fl & (O_DIRECT | O_DSYNC | O_SYNC | O_PATH)) && !sc_is_mapped(st.st_dev, st.st_ino) &&
             sc_sys2(SYS_fstatfs, fd, (long)&sf) == 0 && fs_ok(sf.f_type);
    e->small = 0;
    e->gen = 0;
    e->kind = ok ? SC_FD_COAL : SC_FD_OTHER;
    e->seekable = S_ISREG(st.st_mode) && fl >= 0 && !(fl & O_PATH) && !sc_is_mapped(st.st_dev, st.st_ino) &&
                  (ok || (sc_sys2(SYS_fstatfs, fd, (long)&sf) == 0 && fs_ok(sf.f_type)));
}

/* kcmp(KCMP_FILE): 1 when fds a and b are one open file description, 0
 * when not or when the kernel cannot say (then the caller writes the slot
 * out between the two fds: correct, only fewer writes coalesced). */
int sc_no_kcmp; /* kcmp refused (ENOSYS, EPERM) or SYSCLUSTER_TEST_NO_KCMP */

static int same_description(int a, int b)
{
    if (sc_no_kcmp)
        return 0;
    long r = sc_sys5(SYS_kcmp, G.pid, G.pid, 0 /* KCMP_FILE */, a, b);
    if (r < 0 && r != -EBADF)
        sc_no_kcmp = 1;
    return r == 0;
}

/* Is fd bound to slot s: its owner, or a fd of the owner's open file
 * description writing into the same buffer?  (The slot lock is held.) */
static int attached(struct sc_slot *s, int fd, struct sc_fdent *e)
{
    return s->gen == e->gen && s->fd >= 0 && (s->fd == fd || e->shares);
}

/* sc_bind_slot's end: fd's entry names slot s (locked, as is bind_lock). */
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
struct sc_slot *sc_bind_slot(int fd, struct sc_fdent *e)
{
    struct stat st;
    struct sc_slot *s = NULL;
    if (sc_sys2(SYS_fstat, fd, (long)&st) < 0 || !S_ISREG(st.st_mode) || sc_is_mapped(st.st_dev, st.st_ino)) {
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
    if (now - atomic_load(&G.sh->beat) < 20L * G.flush_ms + 100 || !sc_guardian_gone(G.g_pid))
        return;
    sc_guardian_lost();
    sc_report("guardian", "the guardian task was killed; starting another");
    sc_guardian_start();
}

void sc_wake_guardian(void)
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
    if (sc_unlikely(atomic_load_explicit(&sc_n_held, memory_order_relaxed))) {
        int err = sc_retry_held(fd); /* the file's held bytes go first */
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
    if (!sc_alone_moves_offset(s)) {
        /* Only the guardian may write these (see sc_alone_moves_offset):
         * no fusion with this write, which follows them. */
        size_t done = 0;
        int d = sc_delegate(s, &done);
        if (d > 0) {
            sc_keep(s, done, d); /* this write is the next call, and fails with it */
            return -d;
        }
        if (d < 0 && done) { /* the guardian died inside it: the rest by this thread */
            int err = sc_write_rest(s, done);
            if (err)
                return -err;
        }
        if (d == 0 || done) {
            sc_written_out(s);
            return SC_DIRECT;
        }
        /* No guardian: as below, by this thread. */
    }
    int64_t pos = sc_flush_note(s, 0);
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
        sc_written_out(s);
        return user > 0 ? user : SC_DIRECT; /* 0: let the kernel say why */
    }
    if (r < 0) {
        /* The deferred part failed: this write is the next call, and
         * fails with it; the bytes stay, held, for its retry. */
        sc_keep(s, 0, (int)-r);
        return r;
    }
    /* Part of the deferred bytes went out: finish them (the buffer stays
     * untouched while flushing is set, for the guardian's recovery). */
    int err = sc_write_rest(s, (size_t)r);
    if (err)
        return -err;
    sc_written_out(s);
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
        sc_classify(fd, e);
    if (e->kind != SC_FD_COAL || total == 0)
        return direct(fd, iov, iovcnt);
    if (total >= threshold) {
        /* Large (or not from a site that defers): everything pending goes
         * out first -- the other files', and this file's slot through the
         * fd that deferred its bytes -- or, when fd is bound to its file's
         * slot, fused with this write. */
        if (sc_unlikely(atomic_load_explicit(&sc_n_held, memory_order_relaxed))) {
            int err = sc_retry_held(fd);
            if (err)
                return -err;
        }
        atomic_fetch_sub_explicit(&sc_room, (int64_t)total, memory_order_relaxed);
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
            if (sc_unlikely(atomic_load_explicit(&sc_n_held, memory_order_relaxed))) {
                int err = sc_retry_held(fd); /* before taking the file's slot over */
                if (err)
                    return -err;
            }
            s = sc_bind_slot(fd, e);
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
            int err = sc_retry_held(fd);
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
            if (sc_near_full(fd, s->dev)) {
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
            sc_wake_guardian();
        }
        if (sc_unlikely((s->n_writes & 63) == 0))
            check_guardian();
        return (long)total;
    }
    return direct(fd, iov, iovcnt);
}
