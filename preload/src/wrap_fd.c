/* Wrappers of the calls that take an fd.  A short write to a regular file
 * may be deferred (coalesce.c); every other call on an fd first writes out the
 * pending bytes of the same file, and a call that sends data out of the
 * process first writes out everything pending.  When nothing is pending
 * each wrapper costs one load and a jump. */
#include "rt.h"
#include "sys.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

/* Names glibc exports that no header declares. */
ssize_t __write(int, const void *, size_t);
ssize_t __read(int, void *, size_t);
ssize_t __pread64(int, void *, size_t, off64_t);
ssize_t __pwrite64(int, const void *, size_t, off64_t);
off_t __lseek(int, off_t, int);
int __fxstat(int, int, struct stat *);
int __fxstat64(int, int, struct stat64 *);
int __close(int);
int __dup2(int, int);
int __fcntl(int, int, ...);
ssize_t __send(int, const void *, size_t, int);
ssize_t __read_chk(int, void *, size_t, size_t);
ssize_t __pread_chk(int, void *, size_t, off_t, size_t);
ssize_t __pread64_chk(int, void *, size_t, off64_t, size_t);

/* Before a call that observes or changes fd's file. */
#define OBSERVE(fd)                                                                                     \
    do {                                                                                                \
        if (sc_unlikely(sc_busy()) && sc_live())                                                        \
            sc_observe((fd), 0);                                                                        \
    } while (0)

/* Before a call that writes: report a deferred write's error (the call
 * fails with it), write bytes held after a failed flush of the file (k 1:
 * the call writes data; not before ftruncate/fallocate, k 2, which may be
 * how the program frees space), then write out everything pending. */
#define WRITELIKE(fd) WRITELIKE_K(fd, 1)
#define WRITELIKE_K(fd, k)                                                                              \
    do {                                                                                                \
        if (sc_unlikely(sc_busy()) && sc_live()) {                                                      \
            int e_ = sc_observe((fd), (k));                                                             \
            if (e_) {                                                                                   \
                errno = e_;                                                                             \
                return -1;                                                                              \
            }                                                                                           \
            sc_publish();                                                                               \
        }                                                                                               \
    } while (0)

/* ---- writes ------------------------------------------------------------ */

/* Writes from a planned write site are deferred below the site's size;
 * others below --coalesce-writes' (0: none). */
static size_t write_threshold(const void *ra)
{
    size_t t = G.threshold;
    if (sc_planned(SC_PK_WRITE)) {
        size_t p = sc_plan_write_site(ra);
        if (p > t)
            t = p;
    }
    return t;
}

static ssize_t do_write(int fd, const void *buf, size_t n, ssize_t (*real)(int, const void *, size_t), const void *ra)
{
    if (sc_mode() == SC_OFF || sc_vfork_child())
        return real(fd, buf, n);
    size_t thr = write_threshold(ra);
    if (thr == 0 && !sc_busy()) {
        if (sc_unlikely(G.verbose))
            sc_why_write(fd, n, 0, SC_DIRECT);
        return real(fd, buf, n); /* a plan's other writes, with nothing pending */
    }
    struct iovec v = {(void *)buf, n};
    sc_enter();
    long r = sc_write_iov(fd, &v, 1, n, thr);
    sc_leave();
    if (sc_unlikely(G.verbose))
        sc_why_write(fd, n, thr, r);
    if (r == SC_DIRECT)
        return real(fd, buf, n);
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

SC_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    return do_write(fd, buf, n, SC_REAL(write), __builtin_return_address(0));
}

SC_EXPORT ssize_t __write(int fd, const void *buf, size_t n)
{
    return do_write(fd, buf, n, SC_REAL(__write), __builtin_return_address(0));
}

SC_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    if (sc_mode() == SC_OFF || sc_vfork_child() || iovcnt <= 0 || iovcnt > 1024)
        return SC_REAL(writev)(fd, iov, iovcnt);
    size_t thr = write_threshold(__builtin_return_address(0));
    if (thr == 0 && !sc_busy()) {
        if (sc_unlikely(G.verbose))
            sc_why_write(fd, 0, 0, SC_DIRECT);
        return SC_REAL(writev)(fd, iov, iovcnt);
    }
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len > (size_t)SSIZE_MAX - total)
            return SC_REAL(writev)(fd, iov, iovcnt); /* the kernel says EINVAL */
        total += iov[i].iov_len;
    }
    sc_enter();
    long r = sc_write_iov(fd, iov, iovcnt, total, thr);
    sc_leave();
    if (sc_unlikely(G.verbose))
        sc_why_write(fd, total, thr, r);
    if (r == SC_DIRECT)
        return SC_REAL(writev)(fd, iov, iovcnt);
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

#define PWRITE(ret, name, params, args, fd)                                                             \
    SC_EXPORT ret name params                                                                           \
    {                                                                                                   \
        WRITELIKE(fd);                                                                                  \
        return SC_REAL(name) args;                                                                      \
    }

PWRITE(ssize_t, pwrite, (int fd, const void *b, size_t n, off_t o), (fd, b, n, o), fd)
PWRITE(ssize_t, pwrite64, (int fd, const void *b, size_t n, off64_t o), (fd, b, n, o), fd)
PWRITE(ssize_t, __pwrite64, (int fd, const void *b, size_t n, off64_t o), (fd, b, n, o), fd)
PWRITE(ssize_t, pwritev, (int fd, const struct iovec *v, int c, off_t o), (fd, v, c, o), fd)
PWRITE(ssize_t, pwritev64, (int fd, const struct iovec *v, int c, off64_t o), (fd, v, c, o), fd)
PWRITE(ssize_t, pwritev2, (int fd, const struct iovec *v, int c, off_t o, int f), (fd, v, c, o, f), fd)
PWRITE(ssize_t, pwritev64v2, (int fd, const struct iovec *v, int c, off64_t o, int f), (fd, v, c, o, f), fd)
PWRITE(int, fsync, (int fd), (fd), fd)
PWRITE(int, fdatasync, (int fd), (fd), fd)
PWRITE(int, sync_file_range, (int fd, off64_t o, off64_t n, unsigned int f), (fd, o, n, f), fd)
#define SPACE(ret, name, params, args, fd)                                                              \
    SC_EXPORT ret name params                                                                           \
    {                                                                                                   \
        WRITELIKE_K(fd, 2);                                                                             \
        return SC_REAL(name) args;                                                                      \
    }
SPACE(int, ftruncate, (int fd, off_t n), (fd, n), fd)
SPACE(int, ftruncate64, (int fd, off64_t n), (fd, n), fd)
SPACE(int, fallocate, (int fd, int m, off_t o, off_t n), (fd, m, o, n), fd)
SPACE(int, fallocate64, (int fd, int m, off64_t o, off64_t n), (fd, m, o, n), fd)

/* posix_fallocate returns the error instead of setting errno. */
#define PFALLOC(name, off)                                                                              \
    SC_EXPORT int name(int fd, off o, off n)                                                            \
    {                                                                                                   \
        if (sc_unlikely(sc_busy()) && sc_live()) {                                                      \
            int e_ = sc_observe(fd, 2);                                                                 \
            if (e_)                                                                                     \
                return e_;                                                                              \
        }                                                                                               \
        return SC_REAL(name)(fd, o, n);                                                                 \
    }
PFALLOC(posix_fallocate, off_t)
PFALLOC(posix_fallocate64, off64_t)

SC_EXPORT int syncfs(int fd)
{
    sc_publish();
    return SC_REAL(syncfs)(fd);
}

SC_EXPORT void sync(void)
{
    sc_publish();
    SC_REAL(sync)();
}

/* ---- calls that observe the file --------------------------------------- */

/* Each wrapper below is a load (nothing pending, no error, no plan: one
 * or two words of G) and a jump to libc; the rest of its work is a
 * function of its own, so that the common case sets up no frame. */
#define OBS(ret, name, params, args, fd)                                                                \
    SC_EXPORT ret name params;                                                                          \
    SC_NEXT_DECL(name);                                                                                 \
    static SC_COLD ret name##_observed params                                                           \
    {                                                                                                   \
        OBSERVE(fd);                                                                                    \
        return SC_NEXT(name) args;                                                                      \
    }                                                                                                   \
    SC_EXPORT ret name params                                                                           \
    {                                                                                                   \
        __typeof__(&name) next_ = SC_NEXT_FAST(name);                                                   \
        if (sc_likely(next_ != NULL) && sc_likely(!sc_busy()))                                          \
            return next_ args;                                                                          \
        return name##_observed args;                                                                    \
    }

/* A read planned after a planned lseek: pread at the pending offset. */
static int planned_read(const void *ra, int fd, void *b, size_t n, ssize_t *r)
{
    long x;
    int site = sc_plan_site(ra, SC_PK_READ, 0);
    if (site < 0 || !sc_read_pending(fd, b, n, &x))
        return 0;
    sc_plan_answered(site);
    if (x < 0) {
        errno = (int)-x;
        x = -1;
    }
    *r = x;
    return 1;
}

/* The plan's kinds and the error count in one load, as OBSERVE alone. */
#define PLANNED_OR_OBSERVE(fd, kind, planned)                                                           \
    do {                                                                                                \
        uint64_t a_ = sc_attn();                                                                        \
        if (sc_unlikely(a_ & SC_PLAN(kind)) && (planned))                                               \
            return r_;                                                                                  \
        if (sc_unlikely(sc_busy_with(a_)) && sc_live())                                                 \
            sc_observe((fd), 0);                                                                        \
    } while (0)

/* ra: the caller's return address (the plan's site). */
#define READ(name, params, args, fits)                                                                  \
    SC_NEXT_DECL(name);                                                                                 \
    static SC_COLD ssize_t name##_slow(const void *ra, SC_ID params)                                    \
    {                                                                                                   \
        ssize_t r_;                                                                                     \
        PLANNED_OR_OBSERVE(fd, SC_PK_READ, (fits) && planned_read(ra, fd, b, n, &r_));                  \
        return SC_NEXT(name) args;                                                                      \
    }                                                                                                   \
    SC_EXPORT ssize_t name params                                                                       \
    {                                                                                                   \
        __typeof__(&name) next_ = SC_NEXT_FAST(name);                                                   \
        if (sc_likely(next_ != NULL) && sc_likely(sc_quiet()))                                          \
            return next_ args;                                                                          \
        return name##_slow(__builtin_return_address(0), SC_ID args);                                    \
    }
READ(read, (int fd, void *b, size_t n), (fd, b, n), 1)
READ(__read, (int fd, void *b, size_t n), (fd, b, n), 1)
READ(__read_chk, (int fd, void *b, size_t n, size_t bl), (fd, b, n, bl), n <= bl) /* else libc aborts */
OBS(ssize_t, readv, (int fd, const struct iovec *v, int c), (fd, v, c), fd)
OBS(ssize_t, pread, (int fd, void *b, size_t n, off_t o), (fd, b, n, o), fd)
OBS(ssize_t, pread64, (int fd, void *b, size_t n, off64_t o), (fd, b, n, o), fd)
OBS(ssize_t, __pread64, (int fd, void *b, size_t n, off64_t o), (fd, b, n, o), fd)
OBS(ssize_t, __pread_chk, (int fd, void *b, size_t n, off_t o, size_t bl), (fd, b, n, o, bl), fd)
OBS(ssize_t, __pread64_chk, (int fd, void *b, size_t n, off64_t o, size_t bl), (fd, b, n, o, bl), fd)
OBS(ssize_t, preadv, (int fd, const struct iovec *v, int c, off_t o), (fd, v, c, o), fd)
OBS(ssize_t, preadv64, (int fd, const struct iovec *v, int c, off64_t o), (fd, v, c, o), fd)
OBS(ssize_t, preadv2, (int fd, const struct iovec *v, int c, off_t o, int f), (fd, v, c, o, f), fd)
OBS(ssize_t, preadv64v2, (int fd, const struct iovec *v, int c, off64_t o, int f), (fd, v, c, o, f), fd)
/* A planned lseek(SEEK_SET) on a regular file: a pending offset. */
static int planned_seek(const void *ra, int fd, off64_t o, int w)
{
    int site = sc_plan_site(ra, SC_PK_SEEK, 0);
    if (site < 0 || !sc_seek_pending(fd, o, w))
        return 0;
    sc_plan_answered(site);
    return 1;
}

#define SEEK(ret, name, offt)                                                                           \
    SC_NEXT_DECL(name);                                                                                 \
    static SC_COLD ret name##_slow(const void *ra, int fd, offt o, int w)                               \
    {                                                                                                   \
        ret r_ = o;                                                                                     \
        PLANNED_OR_OBSERVE(fd, SC_PK_SEEK, planned_seek(ra, fd, o, w));                                 \
        return SC_NEXT(name)(fd, o, w);                                                                 \
    }                                                                                                   \
    SC_EXPORT ret name(int fd, offt o, int w)                                                           \
    {                                                                                                   \
        __typeof__(&name) next_ = SC_NEXT_FAST(name);                                                   \
        if (sc_likely(next_ != NULL) && sc_likely(sc_quiet()))                                          \
            return next_(fd, o, w);                                                                     \
        return name##_slow(__builtin_return_address(0), fd, o, w);                                      \
    }
SEEK(off_t, lseek, off_t)
SEEK(off64_t, lseek64, off64_t)
SEEK(off_t, __lseek, off_t)
OBS(int, fstat, (int fd, struct stat *st), (fd, st), fd)
OBS(int, fstat64, (int fd, struct stat64 *st), (fd, st), fd)
OBS(int, __fxstat, (int v, int fd, struct stat *st), (v, fd, st), fd)
OBS(int, __fxstat64, (int v, int fd, struct stat64 *st), (v, fd, st), fd)
OBS(int, fstatfs, (int fd, struct statfs *st), (fd, st), fd)
OBS(int, fstatfs64, (int fd, struct statfs64 *st), (fd, st), fd)
OBS(int, fstatvfs, (int fd, struct statvfs *st), (fd, st), fd)
OBS(int, fstatvfs64, (int fd, struct statvfs64 *st), (fd, st), fd)
OBS(int, posix_fadvise, (int fd, off_t o, off_t n, int a), (fd, o, n, a), fd)
OBS(int, posix_fadvise64, (int fd, off64_t o, off64_t n, int a), (fd, o, n, a), fd)
OBS(ssize_t, readahead, (int fd, off64_t o, size_t n), (fd, o, n), fd)
OBS(int, fchmod, (int fd, mode_t m), (fd, m), fd)
OBS(int, fchown, (int fd, uid_t u, gid_t g), (fd, u, g), fd)
OBS(int, futimens, (int fd, const struct timespec t[2]), (fd, t), fd)
OBS(int, futimes, (int fd, const struct timeval t[2]), (fd, t), fd)
OBS(ssize_t, fgetxattr, (int fd, const char *n, void *v, size_t s), (fd, n, v, s), fd)
OBS(int, fsetxattr, (int fd, const char *n, const void *v, size_t s, int f), (fd, n, v, s, f), fd)
OBS(ssize_t, flistxattr, (int fd, char *l, size_t s), (fd, l, s), fd)
OBS(int, fremovexattr, (int fd, const char *n), (fd, n), fd)

/* ---- locks and data movers: they publish ------------------------------- */

SC_EXPORT int flock(int fd, int op)
{
    sc_publish();
    return SC_REAL(flock)(fd, op);
}

SC_EXPORT int lockf(int fd, int cmd, off_t n)
{
    sc_publish();
    return SC_REAL(lockf)(fd, cmd, n);
}

SC_EXPORT int lockf64(int fd, int cmd, off64_t n)
{
    sc_publish();
    return SC_REAL(lockf64)(fd, cmd, n);
}

SC_EXPORT ssize_t sendfile(int out, int in, off_t *o, size_t n)
{
    sc_publish();
    return SC_REAL(sendfile)(out, in, o, n);
}

SC_EXPORT ssize_t sendfile64(int out, int in, off64_t *o, size_t n)
{
    sc_publish();
    return SC_REAL(sendfile64)(out, in, o, n);
}

SC_EXPORT ssize_t copy_file_range(int in, off64_t *oi, int out, off64_t *oo, size_t n, unsigned int f)
{
    sc_publish();
    return SC_REAL(copy_file_range)(in, oi, out, oo, n, f);
}

SC_EXPORT ssize_t splice(int in, off64_t *oi, int out, off64_t *oo, size_t n, unsigned int f)
{
    sc_publish();
    return SC_REAL(splice)(in, oi, out, oo, n, f);
}

SC_EXPORT ssize_t tee(int in, int out, size_t n, unsigned int f)
{
    sc_publish();
    return SC_REAL(tee)(in, out, n, f);
}

SC_EXPORT ssize_t vmsplice(int fd, const struct iovec *v, size_t c, unsigned int f)
{
    sc_publish();
    return SC_REAL(vmsplice)(fd, v, c, f);
}

SC_EXPORT ssize_t send(int fd, const void *b, size_t n, int f)
{
    sc_publish();
    return SC_REAL(send)(fd, b, n, f);
}

SC_EXPORT ssize_t __send(int fd, const void *b, size_t n, int f)
{
    sc_publish();
    return SC_REAL(__send)(fd, b, n, f);
}

SC_EXPORT ssize_t sendto(int fd, const void *b, size_t n, int f, const struct sockaddr *a, socklen_t l)
{
    sc_publish();
    return SC_REAL(sendto)(fd, b, n, f, a, l);
}

SC_EXPORT ssize_t sendmsg(int fd, const struct msghdr *m, int f)
{
    sc_publish();
    if (m && m->msg_controllen)
        sc_may_share(); /* descriptors may go with it */
    return SC_REAL(sendmsg)(fd, m, f);
}

SC_EXPORT int sendmmsg(int fd, struct mmsghdr *m, unsigned int n, int f)
{
    sc_publish();
    for (unsigned int i = 0; m && i < n; i++)
        if (m[i].msg_hdr.msg_controllen) {
            sc_may_share(); /* descriptors may go with it */
            break;
        }
    return SC_REAL(sendmmsg)(fd, m, n, f);
}

SC_EXPORT int shutdown(int fd, int how)
{
    sc_publish();
    return SC_REAL(shutdown)(fd, how);
}

/* ---- fcntl, ioctl, mmap ------------------------------------------------ */

static int is_lock_cmd(int cmd)
{
    return cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
}

static int do_fcntl(int (*real)(int, int, ...), int fd, int cmd, void *arg)
{
    if (sc_mode() == SC_OFF || sc_vfork_child())
        return real(fd, cmd, arg);
    if (is_lock_cmd(cmd))
        sc_publish();
    else if (cmd == F_SETFL)
        sc_unbind(fd); /* O_APPEND, O_DIRECT, ...: classify again */
    else
        OBSERVE(fd);
    int r = real(fd, cmd, arg);
    if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)) {
        int err = errno;
        sc_after_open(r);
        errno = err;
    }
    return r;
}

#define FCNTL(name)                                                                                     \
    SC_EXPORT int name(int fd, int cmd, ...)                                                            \
    {                                                                                                   \
        va_list ap;                                                                                     \
        va_start(ap, cmd);                                                                              \
        void *arg = va_arg(ap, void *);                                                                 \
        va_end(ap);                                                                                     \
        return do_fcntl(SC_REAL(name), fd, cmd, arg);                                                   \
    }
FCNTL(fcntl)
FCNTL(fcntl64)
FCNTL(__fcntl)

SC_EXPORT int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    sc_publish(); /* FICLONE and friends read another fd's file */
    return SC_REAL(ioctl)(fd, req, arg);
}

static void *do_mmap(void *(*real)(void *, size_t, int, int, int, off_t), void *a, size_t n, int prot, int flags,
                     int fd, off_t o)
{
    if (fd >= 0 && !(flags & MAP_ANONYMOUS) && sc_mode() == SC_ACTIVE && !sc_vfork_child()) {
        struct stat st;
        if (sc_sys2(SYS_fstat, fd, (long)&st) == 0 && S_ISREG(st.st_mode))
            sc_note_mapped(st.st_dev, st.st_ino); /* writes it out, never defers it again */
    }
    return real(a, n, prot, flags, fd, o);
}

SC_EXPORT void *mmap(void *a, size_t n, int prot, int flags, int fd, off_t o)
{
    return do_mmap(SC_REAL(mmap), a, n, prot, flags, fd, o);
}

SC_EXPORT void *mmap64(void *a, size_t n, int prot, int flags, int fd, off64_t o)
{
    return do_mmap((void *(*)(void *, size_t, int, int, int, off_t))SC_REAL(mmap64), a, n, prot, flags, fd, o);
}

/* ---- fds that come and go ---------------------------------------------- */

SC_NEXT_DECL(close);
SC_NEXT_DECL(__close);

static SC_COLD int close_slow(int fd, int dunder)
{
    int (*real)(int) = dunder ? SC_NEXT(__close) : SC_NEXT(close);
    if (sc_mode() == SC_OFF || sc_vfork_child())
        return real(fd);
    int err = 0;
    struct sc_fdent *e = sc_fdent(fd);
    sc_enter();
    if (!e || e->kind != SC_FD_COAL)
        sc_flush_all(); /* closing a pipe or socket is a message too */
    sc_release_fd(fd, &err);
    sc_leave();
    int r = real(fd);
    if (r == 0 && err) {
        errno = err;
        return -1;
    }
    return r;
}

/* The common case: nothing pending anywhere (no pipe or socket to publish
 * to), and nothing known of fd but perhaps its birth, which is cleared (a
 * later dup onto this number is not this process's alone). */
static inline int do_close(int (*real)(int), int fd, int dunder)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (sc_likely(real != NULL) && sc_likely(e != NULL) && sc_likely(sc_fdent_blank(e)) &&
        atomic_load_explicit(&G.pending, memory_order_relaxed) == 0 && !sc_tls.vfork) {
        e->born = 0;
        return real(fd);
    }
    return close_slow(fd, dunder);
}

SC_EXPORT int close(int fd) { return do_close(SC_NEXT_FAST(close), fd, 0); }
SC_EXPORT int __close(int fd) { return do_close(SC_NEXT_FAST(__close), fd, 1); }

SC_EXPORT int dup(int fd)
{
    int r = SC_REAL(dup)(fd);
    if (r >= 0 && sc_mode() != SC_OFF && !sc_vfork_child()) {
        int err = errno;
        sc_after_open(r);
        errno = err;
    }
    return r;
}

static int do_dup2(int (*real)(int, int, int), int old, int new, int flags, int three)
{
    if (sc_mode() == SC_OFF || sc_vfork_child() || old == new)
        return real(old, new, flags);
    sc_enter();
    sc_flush_all();
    sc_release_fd(new, NULL);
    sc_leave();
    int r = real(old, new, flags);
    (void)three;
    return r;
}

static int real_dup2(int old, int new, int flags)
{
    (void)flags;
    return SC_REAL(dup2)(old, new);
}

static int real___dup2(int old, int new, int flags)
{
    (void)flags;
    return SC_REAL(__dup2)(old, new);
}

static int real_dup3(int old, int new, int flags) { return SC_REAL(dup3)(old, new, flags); }

SC_EXPORT int dup2(int old, int new) { return do_dup2(real_dup2, old, new, 0, 0); }
SC_EXPORT int __dup2(int old, int new) { return do_dup2(real___dup2, old, new, 0, 0); }
SC_EXPORT int dup3(int old, int new, int flags) { return do_dup2(real_dup3, old, new, flags, 1); }

SC_EXPORT int close_range(unsigned int lo, unsigned int hi, int flags)
{
    if (sc_mode() == SC_OFF || sc_vfork_child())
        return SC_REAL(close_range)(lo, hi, flags);
    int was = sc_mode();
    sc_enter();
    sc_flush_all();
    if (!(flags & CLOSE_RANGE_CLOEXEC))
        for (size_t fd = lo; fd <= hi && fd < atomic_load(&G.fd_hi); fd++)
            sc_release_fd((int)fd, NULL);
    sc_leave();
    if (flags & CLOSE_RANGE_UNSHARE) {
        /* A private fd table from now on: the guardian shares the old one. */
        if (was == SC_ACTIVE)
            sc_quiesce(SC_WT);
        sc_guardian_stop();
    }
    int r = SC_REAL(close_range)(lo, hi, flags);
    if ((flags & CLOSE_RANGE_UNSHARE) && was == SC_ACTIVE)
        atomic_store(&G.mode, SC_ACTIVE);
    return r;
}

SC_EXPORT void closefrom(int lo)
{
    if (sc_mode() != SC_OFF && !sc_vfork_child()) {
        sc_enter();
        sc_flush_all();
        for (size_t fd = (size_t)(lo < 0 ? 0 : lo); fd < atomic_load(&G.fd_hi); fd++)
            sc_release_fd((int)fd, NULL);
        sc_leave();
    }
    SC_REAL(closefrom)(lo);
}

/* ---- signals to other processes publish -------------------------------- */

SC_EXPORT int kill(pid_t pid, int sig)
{
    sc_publish();
    return SC_REAL(kill)(pid, sig);
}

SC_EXPORT int killpg(pid_t pg, int sig)
{
    sc_publish();
    return SC_REAL(killpg)(pg, sig);
}

SC_EXPORT int tgkill(pid_t tg, pid_t tid, int sig)
{
    sc_publish();
    return SC_REAL(tgkill)(tg, tid, sig);
}

SC_EXPORT int sigqueue(pid_t pid, int sig, const union sigval v)
{
    sc_publish();
    return SC_REAL(sigqueue)(pid, sig, v);
}

SC_EXPORT int raise(int sig)
{
    sc_publish();
    return SC_REAL(raise)(sig);
}
