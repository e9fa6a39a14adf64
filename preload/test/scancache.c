/* scancache: the scan cache (src/scancache.c) gives the verdict a scan
 * gives, or none.
 *   scancache LIB TESTDIR WORKDIR
 * LIB is the preload library, TESTDIR holds the test programs (rawsys,
 * scanprobe) and librawflip-{raw,clean}.so, WORKDIR a scratch directory.
 * Every run is of a program under LIB with SYSCLUSTER_VERBOSE=1 (its -v
 * line says how many objects were scanned and how many came from the
 * cache) and SYSCLUSTER_TEST_SCAN_CACHE_ALL=1 (the test programs are
 * smaller than the size below which objects are scanned, not cached), and
 * SYSCLUSTER_TEST_SCAN_CACHE_SETTLE_0=1 (files the tests have just written
 * are kept: checks 2 and 6 wait instead and test the rule).
 * Prints one line per check; exits 0 if all pass, 1 if one fails. */
#include "../src/scancache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *lib, *tdir, *wdir;
static const char *also_preload; /* a second library to preload, or NULL */
static int settle;                /* the shipped rule: recently changed files are not kept */
static int failed;

static void check(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf(ok ? "ok   scan cache: " : "FAIL scan cache: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failed |= !ok;
}

/* A new string (never freed: a test). */
static char *path(const char *fmt, ...)
{
    char *b;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&b, fmt, ap) < 0)
        abort();
    va_end(ap);
    return b;
}

/* What a run said. */
struct run {
    int status;
    int refused;     /* "makes system calls without libc" */
    int deferred;    /* deferred=N, N > 0 */
    int scanned, cached; /* from the -v line; -1 if absent */
    char err[4096];
};

/* Starts argv (NULL-terminated) under the library with XDG_CACHE_HOME=cache
 * (unset if NULL; HOME unset too when cache is "") without waiting. */
static pid_t start(char *const argv[], const char *cache, const char *errfile)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 2) < 0)
        _exit(126);
    close(fd);
    setenv("LD_PRELOAD", also_preload ? path("%s %s", lib, also_preload) : lib, 1);
    setenv("SYSCLUSTER_COALESCE", "4096", 1);
    setenv("SYSCLUSTER_VERBOSE", "1", 1);
    setenv("SYSCLUSTER_TEST_SCAN_CACHE_ALL", "1", 1);
    unsetenv("SYSCLUSTER_SCAN_CACHE");
    if (settle)
        unsetenv("SYSCLUSTER_TEST_SCAN_CACHE_SETTLE_0");
    else
        setenv("SYSCLUSTER_TEST_SCAN_CACHE_SETTLE_0", "1", 1);
    unsetenv("SYSCLUSTER_REPORT");
    if (cache && *cache) {
        setenv("XDG_CACHE_HOME", cache, 1);
    } else {
        unsetenv("XDG_CACHE_HOME");
        if (cache)
            unsetenv("HOME");
    }
    execv(argv[0], argv);
    _exit(127);
}

static void finish(pid_t pid, const char *errfile, struct run *r)
{
    memset(r, 0, sizeof *r);
    waitpid(pid, &r->status, 0);
    FILE *f = fopen(errfile, "r");
    size_t n = f ? fread(r->err, 1, sizeof r->err - 1, f) : 0;
    if (f)
        fclose(f);
    r->err[n] = 0;
    r->refused = strstr(r->err, "makes system calls without libc") != NULL;
    const char *d = strstr(r->err, "deferred=");
    r->deferred = d && atoi(d + 9) > 0;
    const char *s = strstr(r->err, "scanned="), *c = strstr(r->err, "scan_cached=");
    r->scanned = s ? atoi(s + 8) : -1;
    r->cached = c ? atoi(c + 12) : -1;
}

static void run(char *const argv[], const char *cache, struct run *r)
{
    char *errfile = path("%s/err", wdir);
    finish(start(argv, cache, errfile), errfile, r);
}

static void rawsys(const char *cache, struct run *r)
{
    char *argv[] = {path("%s/rawsys", tdir), path("%s/raw.out", wdir), "100", NULL};
    run(argv, cache, r);
}

static void probe(const char *so, const char *cache, struct run *r)
{
    char *argv[] = {path("%s/scanprobe", tdir), (char *)so, path("%s/probe.out", wdir), NULL};
    run(argv, cache, r);
}

static int copy(const char *from, const char *to, int flags)
{
    char buf[1 << 16];
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | flags, 0755);
    ssize_t n;
    int ok = in >= 0 && out >= 0;
    while (ok && (n = read(in, buf, sizeof buf)) > 0)
        ok = write(out, buf, (size_t)n) == n;
    if (in >= 0)
        close(in);
    if (out >= 0)
        ok &= close(out) == 0;
    return ok;
}

/* The cache's entries (files named like a slot), at most max. */
static int entries(const char *cache, char names[][300], int max)
{
    DIR *d = opendir(path("%s/syscluster/%s", cache, SC_SCANCACHE_DIR));
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && n < max)
        if (e->d_name[0] != '.')
            snprintf(names[n++], 300, "%s/syscluster/%s/%s", cache, SC_SCANCACHE_DIR, e->d_name);
    if (d)
        closedir(d);
    return n;
}

static int read_entry(const char *file, struct sc_scan_entry *e)
{
    int fd = open(file, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, e, sizeof *e) : -1;
    if (fd >= 0)
        close(fd);
    return n == (ssize_t)sizeof *e;
}

static int write_file(const char *file, const void *b, size_t n)
{
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int ok = fd >= 0 && write(fd, b, n) == (ssize_t)n;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* 1. A hit gives the scan's verdict: rawsys refused again, from the cache. */
static void hit(void)
{
    char *cache = path("%s/c-hit", wdir);
    struct run a, b;
    rawsys(cache, &a);
    rawsys(cache, &b);
    check(a.refused && a.scanned >= 1 && b.refused && b.scanned == 0 && b.cached >= 1,
          "a program with raw syscalls is refused when scanned (scanned=%d) and again from the cache "
          "(scanned=%d cached=%d)",
          a.scanned, b.scanned, b.cached);
    struct run c, d;
    char *clean = path("%s/librawflip-clean.so", tdir);
    probe(clean, cache, &c);
    probe(clean, cache, &d);
    check(!c.refused && c.deferred && !d.refused && d.deferred && d.scanned == 0 && d.cached >= 2,
          "a clean library is coalesced when scanned and from the cache (scanned=%d cached=%d)", d.scanned,
          d.cached);
}

/* 2. New bytes at the same path, same size, the modification time put
 * back: rescanned.  In place (same inode), then renamed over it.  With
 * the shipped rule, after the files have settled: so this holds whatever
 * the granularity of the kernel's file times. */
static void changed(void)
{
    char *cache = path("%s/c-changed", wdir), *so = path("%s/flip.so", wdir), *so2 = path("%s/flip2.so", wdir);
    char *raw = path("%s/librawflip-raw.so", tdir), *clean = path("%s/librawflip-clean.so", tdir);
    struct stat sr, sc, before, after;
    if (stat(raw, &sr) != 0 || stat(clean, &sc) != 0 || sr.st_size != sc.st_size) {
        check(0, "librawflip-raw.so and -clean.so must be the same size");
        return;
    }
    struct run a, a2, b, c;
    unlink(so);
    unlink(so2);
    copy(clean, so, O_CREAT | O_TRUNC);
    copy(clean, so2, O_CREAT | O_TRUNC);
    usleep(2200 * 1000); /* SC_SCANCACHE_SETTLE_NS, and a little */
    settle = 1;
    probe(so, cache, &a);
    probe(so, cache, &a);
    probe(so2, cache, &a2);
    probe(so2, cache, &a2);
    stat(so, &before);
    copy(raw, so, 0); /* in place: same inode, same size */
    struct timespec t[2] = {before.st_atim, before.st_mtim};
    utimensat(AT_FDCWD, so, t, 0); /* touch -d: the modification time as it was */
    stat(so, &after);
    probe(so, cache, &b);
    check(a.cached >= 1 && !a.refused && after.st_ino == before.st_ino && after.st_size == before.st_size &&
              after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec &&
              b.refused,
          "a library rewritten in place (same inode, size and mtime) is rescanned: %s (cached before: %d)",
          b.refused ? "refused" : "taken for the old bytes", a.cached);
    /* Renamed over: raw bytes, the modification time of the clean file. */
    char *tmp = path("%s/flip.tmp", wdir);
    stat(so2, &before);
    copy(raw, tmp, O_CREAT | O_TRUNC);
    struct timespec t2[2] = {before.st_atim, before.st_mtim};
    utimensat(AT_FDCWD, tmp, t2, 0);
    rename(tmp, so2);
    probe(so2, cache, &c);
    check(a2.cached >= 1 && !a2.refused && c.refused, "a library renamed over the path is rescanned: %s",
          c.refused ? "refused" : "taken for the old file");
    /* 6. A file changed less than two seconds ago is scanned, not kept. */
    char *fresh = path("%s/fresh.so", wdir);
    unlink(fresh);
    copy(clean, fresh, O_CREAT | O_TRUNC);
    probe(fresh, cache, &a);
    probe(fresh, cache, &b);
    settle = 0;
    check(!a.refused && !b.refused && a.scanned >= 1 && b.scanned >= 1,
          "a file changed within the last two seconds is not kept (second run: scanned=%d)", b.scanned);
}

/* 2b. The path renamed over after the library was mapped, before the
 * runtime scans, and the file it names now given a "clean" entry by
 * another process (test/lib/swapper.c does both in its constructor); the
 * mapped file has raw syscalls. */
static void swapped(void)
{
    char *cache = path("%s/c-swapped", wdir), *p = path("%s/swap-p.so", wdir), *q = path("%s/swap-q.so", wdir);
    struct run a, b;
    copy(path("%s/librawflip-clean.so", tdir), q, O_CREAT | O_TRUNC);
    copy(path("%s/librawflip-raw.so", tdir), p, O_CREAT | O_TRUNC);
    setenv("SCSWAP_LOAD", p, 1);
    setenv("SCSWAP_FROM", q, 1);
    setenv("SCSWAP_WARM", path("%s/scanprobe %s %s/swap.out 2>%s/swap.err", tdir, p, wdir, wdir), 1);
    also_preload = path("%s/libswapper.so", tdir);
    probe(p, cache, &b);
    also_preload = NULL;
    unsetenv("SCSWAP_LOAD");
    unsetenv("SCSWAP_FROM");
    unsetenv("SCSWAP_WARM");
    FILE *f = fopen(path("%s/swap.err", wdir), "r");
    size_t n = f ? fread(a.err, 1, sizeof a.err - 1, f) : 0;
    a.err[n] = 0;
    if (f)
        fclose(f);
    check(strstr(a.err, "deferred=96 ") && !strstr(a.err, "without libc") && b.refused && !strstr(b.err, "swapper:"),
          "a library whose path was renamed over after it was loaded is judged by the mapped file: %s",
          b.refused ? "refused" : "taken for the file at its path");
}

/* 3. Entries that do not check out are scanned again, never trusted. */
static void corrupt(void)
{
    char *cache = path("%s/c-corrupt", wdir);
    static char names[64][300];
    struct run a, b, c;
    rawsys(cache, &a);
    int n = entries(cache, names, 64), flipped = 0;
    /* The verdict turned to "clean", checksum left as it was. */
    for (int i = 0; i < n; i++) {
        struct sc_scan_entry e;
        if (read_entry(names[i], &e) && e.verdict == 1) {
            e.verdict = 0;
            flipped += write_file(names[i], &e, sizeof e);
        }
    }
    rawsys(cache, &b);
    rawsys(cache, &c);
    check(flipped == 1 && b.refused && b.scanned >= 1 && c.refused && c.cached >= 1,
          "an entry whose verdict was changed is rescanned (%d flipped; scanned=%d) and rewritten (then "
          "cached=%d)",
          flipped, b.scanned, c.cached);
    /* Cut in half, emptied, garbage, one byte more. */
    static const char *how[] = {"cut in half", "emptied", "overwritten with garbage", "one byte longer"};
    for (int k = 0; k < 4; k++) {
        n = entries(cache, names, 64);
        for (int i = 0; i < n; i++) {
            struct sc_scan_entry e;
            char buf[sizeof e + 1];
            if (!read_entry(names[i], &e))
                continue;
            memcpy(buf, &e, sizeof e);
            if (k == 2)
                memset(buf, 'x', sizeof buf);
            buf[sizeof e] = '\n';
            write_file(names[i], buf, k == 0 ? sizeof e / 2 : k == 1 ? 0 : k == 2 ? sizeof e : sizeof e + 1);
        }
        rawsys(cache, &b);
        check(n >= 1 && b.refused && b.scanned >= 1, "an entry %s is rescanned (scanned=%d)", how[k], b.scanned);
    }
    /* A forged entry (verdict "clean", checksum recomputed) is believed in
     * this user's own directory -- which is why the directory must be
     * nobody else's: in one others may write, it is not read. */
    rawsys(cache, &a);
    n = entries(cache, names, 64);
    int forged = 0;
    for (int i = 0; i < n; i++) {
        struct sc_scan_entry e;
        if (read_entry(names[i], &e) && e.verdict == 1) {
            e.verdict = 0;
            e.check = sc_fnv1a(&e, offsetof(struct sc_scan_entry, check), SC_FNV_SEED);
            forged += write_file(names[i], &e, sizeof e);
        }
    }
    rawsys(cache, &b);
    chmod(path("%s/syscluster/%s", cache, SC_SCANCACHE_DIR), 0777);
    rawsys(cache, &c);
    check(forged == 1 && !b.refused && c.refused && c.cached == 0,
          "a forged entry is believed only in a directory nobody else may write (0700: %s; 0777: %s, "
          "cached=%d)",
          b.refused ? "refused" : "believed", c.refused ? "refused" : "believed", c.cached);
}

/* 4. Eight programs with raw syscalls and eight without, started at once
 * on an empty cache: all judged right, and the cache left whole. */
static void concurrent(void)
{
    char *cache = path("%s/c-concurrent", wdir), *clean = path("%s/librawflip-clean.so", tdir);
    enum { N = 8 };
    pid_t pids[2 * N];
    char errs[2 * N][300];
    for (int i = 0; i < 2 * N; i++) {
        snprintf(errs[i], sizeof errs[i], "%s/err.%d", wdir, i);
        char *out = path("%s/conc.%d", wdir, i);
        char *raw[] = {path("%s/rawsys", tdir), out, "100", NULL};
        char *probe_argv[] = {path("%s/scanprobe", tdir), clean, out, NULL};
        pids[i] = start(i < N ? raw : probe_argv, cache, errs[i]);
    }
    int right = 0;
    for (int i = 0; i < 2 * N; i++) {
        struct run r;
        finish(pids[i], errs[i], &r);
        right += i < N ? r.refused : (!r.refused && r.deferred);
        unlink(errs[i]);
        unlink(path("%s/conc.%d", wdir, i));
    }
    static char names[64][300];
    int n = entries(cache, names, 64), whole = 0, tmp = 0;
    for (int i = 0; i < n; i++) {
        struct sc_scan_entry e;
        whole += read_entry(names[i], &e) &&
                 e.check == sc_fnv1a(&e, offsetof(struct sc_scan_entry, check), SC_FNV_SEED);
        tmp += strstr(names[i], ".tmp") != NULL;
    }
    struct run a, b;
    rawsys(cache, &a);
    probe(clean, cache, &b);
    check(right == 2 * N && n >= 3 && whole == n && tmp == 0 && a.refused && a.scanned == 0 && !b.refused &&
              b.scanned == 0,
          "%d concurrent first runs: %d judged right; %d entries, %d whole, %d temporary left; then all from "
          "the cache (scanned=%d, %d)",
          2 * N, right, n, whole, tmp, a.scanned, b.scanned);
}

/* 5. No usable cache directory: no cache, nothing printed, right verdicts. */
static void unwritable(void)
{
    char *file = path("%s/a-file", wdir), *clean = path("%s/librawflip-clean.so", tdir);
    write_file(file, "x", 1);
    static const char *where[3];
    where[0] = path("%s/sub", file); /* under a regular file: ENOTDIR */
    where[1] = "/proc/sys/none";     /* mkdir refused */
    where[2] = "";                   /* neither XDG_CACHE_HOME nor HOME */
    for (int i = 0; i < 3; i++) {
        struct run a, b;
        rawsys(where[i], &a);
        probe(clean, where[i], &b);
        /* stderr: the refusal and the -v line, nothing else. */
        int lines = 0;
        for (const char *p = a.err; *p; p++)
            lines += *p == '\n';
        for (const char *p = b.err; *p; p++)
            lines += *p == '\n';
        check(a.refused && a.cached == 0 && !b.refused && b.deferred && b.cached == 0 && lines == 3,
              "no usable cache directory (%s): right verdicts, nothing cached, nothing else printed (%d lines)",
              *where[i] ? where[i] : "no XDG_CACHE_HOME, no HOME", lines);
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: scancache LIB TESTDIR WORKDIR\n");
        return 2;
    }
    lib = argv[1];
    tdir = argv[2];
    wdir = argv[3];
    hit();
    changed();
    swapped();
    corrupt();
    concurrent();
    unwritable();
    return failed;
}
