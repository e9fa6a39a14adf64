/* Wrappers of calls that name a file by path.  Opening with O_TRUNC,
 * truncating, renaming, linking and unlinking write out everything
 * pending first (they change or publish files); a stat of a file with
 * pending bytes writes them out and looks again; a newly opened fd on such
 * a file writes them out before the fd is handed back. */
#include "rt.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <fts.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <unistd.h>
#include <utime.h>

int __open(const char *, int, ...);
int __open64(const char *, int, ...);
int __open_2(const char *, int);
int __open64_2(const char *, int);
int __openat_2(int, const char *, int);
int __openat64_2(int, const char *, int);
int __xstat(int, const char *, struct stat *);
int __xstat64(int, const char *, struct stat64 *);
int __lxstat(int, const char *, struct stat *);
int __lxstat64(int, const char *, struct stat64 *);
int __fxstatat(int, int, const char *, struct stat *, int);
int __fxstatat64(int, int, const char *, struct stat64 *, int);

/* fd was just opened by this process; forks: G.forks before the open
 * (see sc_born). */
static SC_COLD int opened_slow(uint32_t forks, int fd)
{
    if (fd >= 0 && sc_live()) {
        int err = errno;
        sc_after_open(fd);
        sc_opened_here(fd, forks);
        errno = err;
    }
    return fd;
}
/* The common case -- nothing pending, the fd's entry blank (it was
 * closed through the wrappers, or never used) -- only notes the birth:
 * sc_after_open would find nothing to forget and nothing to write out. */
static inline int opened_at(uint32_t forks, int fd)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (sc_likely(e != NULL) && sc_likely(sc_fdent_blank(e)) &&
        atomic_load_explicit(&G.pending, memory_order_relaxed) == 0 && !sc_tls.vfork && sc_mode() != SC_OFF) {
        sc_born(e, forks);
        return fd;
    }
    return opened_slow(forks, fd);
}

/* The open call runs after G.forks is read. */
#define opened(call)                                                                                    \
    ({                                                                                                  \
        uint32_t forks_ = atomic_load(&G.forks);                                                        \
        opened_at(forks_, (call));                                                                      \
    })

#define OPEN_MODE(flags)                                                                                \
    mode_t mode = 0;                                                                                    \
    if ((flags) & (O_CREAT | __O_TMPFILE)) {                                                            \
        va_list ap;                                                                                     \
        va_start(ap, flags);                                                                            \
        mode = va_arg(ap, mode_t);                                                                      \
        va_end(ap);                                                                                     \
    }

#define OPEN(name)                                                                                      \
    SC_EXPORT int name(const char *path, int flags, ...)                                                \
    {                                                                                                   \
        OPEN_MODE(flags);                                                                               \
        if (flags & O_TRUNC)                                                                            \
            sc_publish();                                                                               \
        return opened(SC_REAL(name)(path, flags, mode));                                                \
    }
OPEN(open)
OPEN(open64)
OPEN(__open)
OPEN(__open64)

#define OPENAT(name)                                                                                    \
    SC_EXPORT int name(int dirfd, const char *path, int flags, ...)                                     \
    {                                                                                                   \
        OPEN_MODE(flags);                                                                               \
        if (flags & O_TRUNC)                                                                            \
            sc_publish();                                                                               \
        return opened(SC_REAL(name)(dirfd, path, flags, mode));                                         \
    }
OPENAT(openat)
OPENAT(openat64)

SC_EXPORT int __open_2(const char *path, int flags)
{
    if (flags & O_TRUNC)
        sc_publish();
    return opened(SC_REAL(__open_2)(path, flags));
}

SC_EXPORT int __open64_2(const char *path, int flags)
{
    if (flags & O_TRUNC)
        sc_publish();
    return opened(SC_REAL(__open64_2)(path, flags));
}

SC_EXPORT int __openat_2(int d, const char *path, int flags)
{
    if (flags & O_TRUNC)
        sc_publish();
    return opened(SC_REAL(__openat_2)(d, path, flags));
}

SC_EXPORT int __openat64_2(int d, const char *path, int flags)
{
    if (flags & O_TRUNC)
        sc_publish();
    return opened(SC_REAL(__openat64_2)(d, path, flags));
}

SC_EXPORT int creat(const char *path, mode_t m)
{
    sc_publish();
    return opened(SC_REAL(creat)(path, m));
}

SC_EXPORT int creat64(const char *path, mode_t m)
{
    sc_publish();
    return opened(SC_REAL(creat64)(path, m));
}

static int truncates(const char *mode) { return mode && strchr(mode, 'w'); }

SC_EXPORT FILE *fopen(const char *path, const char *mode)
{
    if (truncates(mode))
        sc_publish();
    uint32_t forks = atomic_load(&G.forks);
    FILE *f = SC_REAL(fopen)(path, mode);
    if (f)
        opened_at(forks, fileno(f));
    return f;
}

SC_EXPORT FILE *fopen64(const char *path, const char *mode)
{
    if (truncates(mode))
        sc_publish();
    uint32_t forks = atomic_load(&G.forks);
    FILE *f = SC_REAL(fopen64)(path, mode);
    if (f)
        opened_at(forks, fileno(f));
    return f;
}

static void closing_stream(FILE *f)
{
    if (!f || !sc_live())
        return;
    int fd = fileno(f);
    sc_enter();
    sc_flush_all();
    if (fd >= 0)
        sc_release_fd(fd, NULL);
    sc_leave();
}

SC_EXPORT FILE *freopen(const char *path, const char *mode, FILE *f)
{
    closing_stream(f);
    uint32_t forks = atomic_load(&G.forks);
    FILE *r = SC_REAL(freopen)(path, mode, f);
    if (r)
        opened_at(forks, fileno(r));
    return r;
}

SC_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *f)
{
    closing_stream(f);
    uint32_t forks = atomic_load(&G.forks);
    FILE *r = SC_REAL(freopen64)(path, mode, f);
    if (r)
        opened_at(forks, fileno(r));
    return r;
}

/* ---- stat: look again if the file had pending bytes --------------------- */

/* Nothing pending before the call: nothing this thread or any thread it
 * has synchronized with had deferred, so the kernel's answer is the whole
 * truth (bytes deferred while the call runs race with it, as they would
 * with the kernel).  A load and a jump. */
#define STAT(ret, name, params, args, stp)                                                              \
    SC_NEXT_DECL(name);                                                                                 \
    static SC_COLD ret name##_pending params                                                            \
    {                                                                                                   \
        ret r = SC_NEXT(name) args;                                                                     \
        if (r == 0 && sc_unlikely(atomic_load_explicit(&G.pending, memory_order_relaxed)) && sc_live()) { \
            int again;                                                                                  \
            sc_flush_path_result((stp)->st_dev, (stp)->st_ino, &again);                                 \
            if (again)                                                                                  \
                r = SC_NEXT(name) args;                                                                 \
        }                                                                                               \
        return r;                                                                                       \
    }                                                                                                   \
    SC_EXPORT ret name params                                                                           \
    {                                                                                                   \
        __typeof__(&name) next_ = SC_NEXT_FAST(name);                                                   \
        if (sc_likely(next_ != NULL) && sc_likely(atomic_load_explicit(&G.pending, memory_order_relaxed) == 0)) \
            return next_ args;                                                                          \
        return name##_pending args;                                                                     \
    }

STAT(int, stat, (const char *p, struct stat *st), (p, st), st)
STAT(int, stat64, (const char *p, struct stat64 *st), (p, st), st)
STAT(int, lstat, (const char *p, struct stat *st), (p, st), st)
STAT(int, lstat64, (const char *p, struct stat64 *st), (p, st), st)
STAT(int, __xstat, (int v, const char *p, struct stat *st), (v, p, st), st)
STAT(int, __xstat64, (int v, const char *p, struct stat64 *st), (v, p, st), st)
STAT(int, __lxstat, (int v, const char *p, struct stat *st), (v, p, st), st)
STAT(int, __lxstat64, (int v, const char *p, struct stat64 *st), (v, p, st), st)
STAT(int, fstatat, (int d, const char *p, struct stat *st, int f), (d, p, st, f), st)
STAT(int, fstatat64, (int d, const char *p, struct stat64 *st, int f), (d, p, st, f), st)
STAT(int, __fxstatat, (int v, int d, const char *p, struct stat *st, int f), (v, d, p, st, f), st)
STAT(int, __fxstatat64, (int v, int d, const char *p, struct stat64 *st, int f), (v, d, p, st, f), st)

SC_NEXT_DECL(statx);

static SC_COLD int statx_pending(int d, const char *p, int f, unsigned int mask, struct statx *st)
{
    int r = SC_NEXT(statx)(d, p, f, mask, st);
    if (r == 0 && sc_unlikely(atomic_load_explicit(&G.pending, memory_order_relaxed)) && sc_live()) {
        int again;
        sc_flush_path_result(makedev(st->stx_dev_major, st->stx_dev_minor), st->stx_ino, &again);
        if (again)
            r = SC_NEXT(statx)(d, p, f, mask, st);
    }
    return r;
}

SC_EXPORT int statx(int d, const char *p, int f, unsigned int mask, struct statx *st)
{
    int (*next)(int, const char *, int, unsigned int, struct statx *) = SC_NEXT_FAST(statx);
    if (sc_likely(next != NULL) && sc_likely(atomic_load_explicit(&G.pending, memory_order_relaxed) == 0))
        return next(d, p, f, mask, st); /* as STAT */
    return statx_pending(d, p, f, mask, st);
}

/* ---- calls that change or publish files --------------------------------- */

#define PUB(ret, name, params, args)                                                                    \
    SC_EXPORT ret name params                                                                           \
    {                                                                                                   \
        sc_publish();                                                                                   \
        return SC_REAL(name) args;                                                                      \
    }

/* libc functions that stat files themselves (their sizes must count the
 * pending bytes): the tree walkers.  Their internal stat calls do not reach
 * the wrappers, so everything is written out first.  (dlopen, which reads
 * and maps the file, is in wrap_proc.c.) */
PUB(int, nftw, (const char *d, __nftw_func_t f, int n, int fl), (d, f, n, fl))
PUB(int, nftw64, (const char *d, __nftw64_func_t f, int n, int fl), (d, f, n, fl))
PUB(int, ftw, (const char *d, __ftw_func_t f, int n), (d, f, n))
PUB(int, ftw64, (const char *d, __ftw64_func_t f, int n), (d, f, n))
PUB(FTS *, fts_open, (char *const *p, int o, int (*c)(const FTSENT **, const FTSENT **)), (p, o, c))
PUB(FTSENT *, fts_read, (FTS *f), (f))
PUB(FTSENT *, fts_children, (FTS *f, int o), (f, o))
PUB(FTS64 *, fts64_open, (char *const *p, int o, int (*c)(const FTSENT64 **, const FTSENT64 **)), (p, o, c))
PUB(FTSENT64 *, fts64_read, (FTS64 *f), (f))
PUB(FTSENT64 *, fts64_children, (FTS64 *f, int o), (f, o))

PUB(int, truncate, (const char *p, off_t n), (p, n))
PUB(int, truncate64, (const char *p, off64_t n), (p, n))
PUB(int, rename, (const char *a, const char *b), (a, b))
PUB(int, renameat, (int da, const char *a, int db, const char *b), (da, a, db, b))
PUB(int, renameat2, (int da, const char *a, int db, const char *b, unsigned int f), (da, a, db, b, f))
PUB(int, link, (const char *a, const char *b), (a, b))
PUB(int, linkat, (int da, const char *a, int db, const char *b, int f), (da, a, db, b, f))
PUB(int, symlink, (const char *a, const char *b), (a, b))
PUB(int, symlinkat, (const char *a, int d, const char *b), (a, d, b))
PUB(int, unlink, (const char *p), (p))
PUB(int, unlinkat, (int d, const char *p, int f), (d, p, f))
PUB(int, utime, (const char *p, const struct utimbuf *t), (p, t))
PUB(int, utimes, (const char *p, const struct timeval t[2]), (p, t))
PUB(int, lutimes, (const char *p, const struct timeval t[2]), (p, t))
PUB(int, futimesat, (int d, const char *p, const struct timeval t[2]), (d, p, t))
PUB(int, utimensat, (int d, const char *p, const struct timespec t[2], int f), (d, p, t, f))
PUB(int, chmod, (const char *p, mode_t m), (p, m))
PUB(int, fchmodat, (int d, const char *p, mode_t m, int f), (d, p, m, f))
PUB(int, chown, (const char *p, uid_t u, gid_t g), (p, u, g))
PUB(int, lchown, (const char *p, uid_t u, gid_t g), (p, u, g))
PUB(int, fchownat, (int d, const char *p, uid_t u, gid_t g, int f), (d, p, u, g, f))
