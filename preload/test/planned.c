/* planned: the runtime applying a plan at this program's own call sites
 * (docs/RUNTIME.md, "Plans").  Each site is a function that makes one call
 * through a function pointer, so that one call instruction -- one return
 * address -- serves every argument the checks pass it.
 *   planned spec            prints a plan ($SYSCLUSTER_PLAN) naming every site
 *   planned clock           clocks: same clock, EFAULT stays EFAULT, EINVAL
 *   planned pid             getpid/gettid: fork, vfork, threads, clone
 *   planned write FILE      planned writes coalesced, the others direct, order kept
 *   planned enospc FILE     writes until one fails; prints the errno's name
 *   planned seek FILE       lseek+read: every way to observe the offset
 *   planned seekkill FILE   a child's pending offset outlives its SIGKILL
 *   planned dlopen          a site in a library loaded (twice) with dlopen
 * Each check prints "ok ..." or "FAIL ..."; exit 0 when all pass.  The
 * checks hold for the plain program too: plan.test.sh runs both, and reads the
 * runtime's -v report to see that the plan was applied. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failed;
#define CHECK(cond, ...)                                                                                \
    do {                                                                                                \
        if (cond) {                                                                                     \
            printf("ok   ");                                                                            \
        } else {                                                                                        \
            printf("FAIL ");                                                                            \
            failed = 1;                                                                                 \
        }                                                                                               \
        printf(__VA_ARGS__);                                                                            \
        printf("\n");                                                                                   \
        fflush(stdout);                                                                                 \
    } while (0)

/* ---- the sites ------------------------------------------------------------ */

static long (*volatile sys)(long, ...) = syscall;
static pid_t (*volatile gp)(void) = getpid;
static ssize_t (*volatile wr)(int, const void *, size_t) = write;
static off_t (*volatile sk)(int, off_t, int) = lseek;
static ssize_t (*volatile rd)(int, void *, size_t) = read;

/* The empty asm after each call keeps it a call (not a tail jump), so its
 * return address is in the site function. */
#define SITE __attribute__((noinline))
SITE static long site_gtod(void *tv, void *tz)
{
    long r = sys(SYS_gettimeofday, tv, tz);
    __asm__ volatile("" ::: "memory");
    return r;
}
SITE static long site_cgt(long clk, void *ts)
{
    long r = sys(SYS_clock_gettime, clk, ts);
    __asm__ volatile("" ::: "memory");
    return r;
}
SITE static long site_time(void *t)
{
    long r = sys(SYS_time, t);
    __asm__ volatile("" ::: "memory");
    return r;
}
SITE static long site_getpid(void)
{
    long r = sys(SYS_getpid);
    __asm__ volatile("" ::: "memory");
    return r;
}
SITE static long site_gettid(void)
{
    long r = sys(SYS_gettid);
    __asm__ volatile("" ::: "memory");
    return r;
}
SITE static pid_t site_libc_getpid(void)
{
    pid_t r = gp();
    __asm__ volatile("" ::: "memory");
    return r;
}
SITE static ssize_t site_write(int fd, const void *b, size_t n)
{
    ssize_t r = wr(fd, b, n);
    __asm__ volatile("" ::: "memory");
    return r;
}
SITE static off_t site_seek(int fd, off_t o)
{
    off_t r = sk(fd, o, SEEK_SET);
    __asm__ volatile("" ::: "memory");
    return r;
}
SITE static off_t site_seek_whence(int fd, off_t o, int w)
{
    off_t r = sk(fd, o, w);
    __asm__ volatile("" ::: "memory");
    return r;
}
SITE static ssize_t site_read(int fd, void *b, size_t n)
{
    ssize_t r = rd(fd, b, n);
    __asm__ volatile("" ::: "memory");
    return r;
}

/* The truth, from call sites no plan names. */
static long true_pid(void) { return syscall(SYS_getpid); }
static long true_tid(void) { return syscall(SYS_gettid); }

static int64_t us(const struct timeval *t) { return t->tv_sec * 1000000LL + t->tv_usec; }

/* ---- spec: where the sites are ---------------------------------------------- */

static void *probe_ra;
static long probe_sys(long n, ...)
{
    (void)n;
    probe_ra = __builtin_return_address(0);
    return 0;
}
static pid_t probe_gp(void)
{
    probe_ra = __builtin_return_address(0);
    return 0;
}
static ssize_t probe_wr(int fd, const void *b, size_t n)
{
    (void)fd, (void)b, (void)n;
    probe_ra = __builtin_return_address(0);
    return 0;
}
static off_t probe_sk(int fd, off_t o, int w)
{
    (void)fd, (void)o, (void)w;
    probe_ra = __builtin_return_address(0);
    return 0;
}
static ssize_t probe_rd(int fd, void *b, size_t n)
{
    (void)fd, (void)b, (void)n;
    probe_ra = __builtin_return_address(0);
    return 0;
}

struct where {
    uintptr_t addr, offset;
    int found;
    char id[129];
};

/* The object holding w->addr (the main program if it is 0): the file
 * offset of the address and the object's build-id. */
static int find_offset(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct where *w = arg;
    int mine = !w->addr && !info->dlpi_name[0];
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && w->addr >= lo && w->addr < lo + ph->p_memsz) {
            w->offset = w->addr - lo + ph->p_offset;
            w->found = mine = 1;
        }
    }
    for (int i = 0; i < info->dlpi_phnum && mine; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_NOTE) {
            const uint8_t *p = (const uint8_t *)lo, *end = p + ph->p_memsz;
            while (p + sizeof(ElfW(Nhdr)) <= end) {
                const ElfW(Nhdr) *n = (const void *)p;
                const uint8_t *desc = p + sizeof *n + ((n->n_namesz + 3) & ~3u);
                if (n->n_type == NT_GNU_BUILD_ID)
                    for (unsigned j = 0; j < n->n_descsz && j < 64; j++)
                        sprintf(w->id + 2 * j, "%02x", desc[j]);
                p = desc + ((n->n_descsz + 3) & ~3u);
            }
        }
    }
    return 0;
}

/* Where site lines go: spec() prints them after every module line, as the
 * supervisor does (the plan line format wants modules, then sites). */
static FILE *site_out;

static void site_line_in(int module, const char *kind, long nr, long param, int cluster, const char *label)
{
    struct where w = {(uintptr_t)probe_ra, 0, 0, ""};
    dl_iterate_phdr(find_offset, &w);
    if (!w.found) {
        fprintf(stderr, "planned: cannot place %s\n", label);
        exit(2);
    }
    fprintf(site_out, "site\t%s\t%d\t%lx\t%ld\t%ld\t%d\t%s\n", kind, module, (unsigned long)w.offset, nr, param, cluster, label);
}

static void site_line(const char *kind, long nr, long param, int cluster, const char *label)
{
    site_line_in(0, kind, nr, param, cluster, label);
}

/* The plugin next to this program. */
static void *open_plugin(void)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 20);
    exe[n > 0 ? n : 0] = 0;
    char *slash = strrchr(exe, '/');
    strcpy(slash ? slash + 1 : exe, "libplanplugin.so");
    void *h = dlopen(exe, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "planned: %s\n", dlerror());
        exit(2);
    }
    return h;
}

static int spec(void)
{
    struct timeval tv;
    struct where w = {0, 0, 0, ""};
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    dl_iterate_phdr(find_offset, &w);
    printf("syscluster-plan/1\nbuffer\t65536\nmodule\t0\t%s\t%s\n", w.id[0] ? w.id : "-", exe);
    char *sites = NULL;
    size_t sites_len = 0;
    site_out = open_memstream(&sites, &sites_len);
    if (!site_out)
        return 2;
    sys = probe_sys;
    site_gtod(&tv, NULL);
    site_line("clock", SYS_gettimeofday, 0, 1, "gtod");
    site_cgt(0, &tv);
    site_line("clock", SYS_clock_gettime, 0, 2, "cgt");
    site_time(NULL);
    site_line("clock", SYS_time, 0, 3, "time");
    site_getpid();
    site_line("pid", SYS_getpid, 0, 4, "getpid");
    site_gettid();
    site_line("tid", SYS_gettid, 0, 5, "gettid");
    gp = probe_gp;
    site_libc_getpid();
    site_line("pid", SYS_getpid, 0, 6, "libc-getpid");
    wr = probe_wr;
    site_write(0, NULL, 0);
    site_line("write", SYS_write, 4096, 7, "write");
    sk = probe_sk;
    site_seek(0, 0);
    site_line("seek", SYS_lseek, 0, 8, "seek");
    site_seek_whence(0, 0, 0);
    site_line("seek", SYS_lseek, 0, 8, "seek-whence");
    rd = probe_rd;
    site_read(0, NULL, 0);
    site_line("read", SYS_read, 0, 8, "read");
    void *h = open_plugin();
    long (*volatile *psys)(long, ...) = dlsym(h, "plugin_sys");
    long (*pg)(void *) = (long (*)(void *))dlsym(h, "plugin_gtod");
    *psys = probe_sys;
    pg(&tv);
    struct where p = {(uintptr_t)probe_ra, 0, 0, ""};
    dl_iterate_phdr(find_offset, &p);
    char real[4096];
    Dl_info di;
    if (!dladdr((void *)pg, &di) || !realpath(di.dli_fname, real))
        return 2;
    printf("module\t1\t%s\t%s\n", p.id[0] ? p.id : "-", real);
    site_line_in(1, "clock", SYS_gettimeofday, 0, 9, "plugin-gtod");
    fclose(site_out);
    fwrite(sites, 1, sites_len, stdout);
    free(sites);
    return 0;
}

/* A site in a library that is loaded, unloaded and loaded again. */
static int plugin(void)
{
    int ok = 1;
    for (int round = 0; round < 2; round++) {
        void *h = open_plugin();
        long (*pg)(void *) = (long (*)(void *))dlsym(h, "plugin_gtod");
        for (int i = 0; i < 1000; i++) {
            struct timeval a, t, b;
            gettimeofday(&a, NULL);
            ok &= pg(&t) == 0;
            gettimeofday(&b, NULL);
            ok &= us(&a) <= us(&t) && us(&t) <= us(&b);
        }
        dlclose(h);
    }
    CHECK(ok, "dlopen: 2 x 1000 gettimeofday in a library loaded twice");
    return failed;
}

/* ---- clocks ------------------------------------------------------------------ */

static int64_t ns(const struct timespec *t) { return t->tv_sec * 1000000000LL + t->tv_nsec; }

static int clocks(void)
{
    int in_order = 1;
    for (int i = 0; i < 2000; i++) {
        struct timeval a, b, t;
        gettimeofday(&a, NULL);
        long r = site_gtod(&t, NULL);
        gettimeofday(&b, NULL);
        in_order &= r == 0 && us(&a) <= us(&t) && us(&t) <= us(&b);
        struct timespec x, y, z;
        clock_gettime(CLOCK_MONOTONIC, &x);
        r = site_cgt(CLOCK_MONOTONIC, &y);
        clock_gettime(CLOCK_MONOTONIC, &z);
        in_order &= r == 0 && ns(&x) <= ns(&y) && ns(&y) <= ns(&z);
        time_t t0 = time(NULL), t1, t2;
        t1 = site_time(&t2);
        in_order &= t1 == t2 && t0 <= t1 && t1 <= time(NULL);
    }
    CHECK(in_order, "clock: 2000 x gettimeofday, clock_gettime(MONOTONIC), time: each between two vDSO readings");
    struct timeval tv;
    struct timezone tz, ktz;
    memset(&tz, 0x5a, sizeof tz);
    syscall(SYS_gettimeofday, NULL, &ktz);
    CHECK(site_gtod(&tv, &tz) == 0 && tz.tz_minuteswest == ktz.tz_minuteswest && tz.tz_dsttime == ktz.tz_dsttime,
          "clock: the timezone as the kernel gives it");
    CHECK(site_gtod(NULL, NULL) == 0, "clock: gettimeofday(NULL, NULL) = 0");
    errno = 0;
    CHECK(site_gtod((void *)8, NULL) == -1 && errno == EFAULT, "clock: gettimeofday(bad, NULL): EFAULT");
    errno = 0;
    CHECK(site_gtod(&tv, (void *)8) == -1 && errno == EFAULT, "clock: gettimeofday(&tv, bad): EFAULT");
    void *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    errno = 0;
    CHECK(site_gtod(ro, NULL) == -1 && errno == EFAULT, "clock: gettimeofday(read-only page): EFAULT");
    errno = 0;
    CHECK(site_cgt(CLOCK_REALTIME, NULL) == -1 && errno == EFAULT, "clock: clock_gettime(REALTIME, NULL): EFAULT");
    errno = 0;
    CHECK(site_cgt(CLOCK_MONOTONIC, ro) == -1 && errno == EFAULT, "clock: clock_gettime(read-only page): EFAULT");
    struct timespec ts;
    errno = 0;
    CHECK(site_cgt(12345, &ts) == -1 && errno == EINVAL, "clock: clock_gettime(invalid clock): EINVAL");
    CHECK(site_cgt(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0 && ns(&ts) > 0, "clock: a CPU clock (the vDSO asks the kernel)");
    errno = 0;
    CHECK(site_time((void *)8) == -1 && errno == EFAULT, "clock: time(bad): EFAULT");
    CHECK(site_time(NULL) > 0, "clock: time(NULL)");
    /* A page of the stack itself made unwritable: the runtime's own copy
     * meets the fault and must say EFAULT too. */
    char big[4 * 4096];
    char *page = (char *)(((uintptr_t)big + 4095) & ~(uintptr_t)4095);
    page[0] = 1;
    if (mprotect(page, 4096, PROT_READ) == 0) {
        errno = 0;
        long r = site_gtod(page + 8, NULL);
        int e = errno;
        mprotect(page, 4096, PROT_READ | PROT_WRITE);
        CHECK(r == -1 && e == EFAULT, "clock: gettimeofday(read-only page on the stack): EFAULT");
        errno = 0;
        mprotect(page, 4096, PROT_READ);
        r = site_cgt(CLOCK_REALTIME, page + 16);
        e = errno;
        mprotect(page, 4096, PROT_READ | PROT_WRITE);
        CHECK(r == -1 && e == EFAULT, "clock: clock_gettime(read-only page on the stack): EFAULT");
    }
    /* A process whose TSC reads fault (as under record/replay tools): the
     * vDSO cannot answer there, the system call must. */
    pid_t c = fork();
    if (c == 0) {
        struct timeval t;
        if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV) != 0)
            _exit(2); /* every x86-64 CPU has a TSC: this cannot fail here */
        _exit(site_gtod(&t, NULL) == 0 && t.tv_sec > 0 ? 0 : 1);
    }
    int st;
    waitpid(c, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "clock: after prctl(PR_SET_TSC, PR_TSC_SIGSEGV) (status %d)", st);
    return failed;
}

/* ---- ids --------------------------------------------------------------------- */

static void *thread_ids(void *arg)
{
    (void)arg;
    long ok = 1;
    for (int i = 0; i < 1000; i++)
        ok &= site_gettid() == true_tid() && site_getpid() == true_pid();
    return (void *)ok;
}

static int clone_child(void *arg)
{
    (void)arg;
    return site_getpid() == true_pid() ? 0 : 1;
}

static int ids(void)
{
    int ok = 1;
    for (int i = 0; i < 1000; i++)
        ok &= site_getpid() == true_pid() && site_libc_getpid() == true_pid() && site_gettid() == true_tid();
    CHECK(ok, "pid: 1000 x getpid (syscall and libc) and gettid, each the kernel's");
    pid_t c = fork();
    if (c == 0)
        _exit(site_getpid() == true_pid() && site_libc_getpid() == true_pid() && site_gettid() == true_tid() ? 0 : 1);
    int st;
    waitpid(c, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && site_getpid() == true_pid(), "pid: fork: the child's own ids");
    c = vfork();
    if (c == 0)
        _exit(site_getpid() == true_pid() && site_gettid() == true_tid() ? 0 : 1);
    waitpid(c, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && site_getpid() == true_pid() && site_gettid() == true_tid(),
          "pid: vfork: the child's own ids, then the parent's");
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, thread_ids, NULL);
    int all = 1;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        all &= r == (void *)1;
    }
    CHECK(all, "pid: 4 threads: each its own tid, the process's pid");
    /* A process made with clone() sharing our memory: the runtime cannot
     * follow it, so the plan must be off before it runs. */
    c = fork();
    if (c == 0) {
        char *stack = malloc(256 * 1024);
        int p = clone(clone_child, stack + 256 * 1024, CLONE_VM | SIGCHLD, NULL);
        int s;
        waitpid(p, &s, 0);
        _exit(WIFEXITED(s) && WEXITSTATUS(s) == 0 && site_getpid() == true_pid() ? 0 : 1);
    }
    waitpid(c, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "pid: clone(CLONE_VM): the child's own pid");
    return failed;
}

/* ---- writes ------------------------------------------------------------------ */

/* Planned 8-byte records interleaved with unplanned ones on the same file
 * and on a second file: the files hold exactly the sequence written. */
static int writes(const char *path)
{
    char other[4096];
    snprintf(other, sizeof other, "%s.other", path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), fo = open(other, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int ok = fd >= 0 && fo >= 0;
    char rec[16];
    for (int i = 0; i < 20000 && ok; i++) {
        snprintf(rec, sizeof rec, "p%06d\n", i);
        ok &= site_write(fd, rec, 8) == 8;
        if (i % 1000 == 999) {
            snprintf(rec, sizeof rec, "u%06d\n", i);
            ok &= write(fd, rec, 8) == 8 && write(fo, rec, 8) == 8;
        }
    }
    ok &= close(fd) == 0 && close(fo) == 0;
    FILE *f = fopen(path, "r");
    int good = f != NULL;
    for (int i = 0; i < 20000 && good; i++) {
        char want[16], got[16] = "";
        snprintf(want, sizeof want, "p%06d\n", i);
        good &= fread(got, 1, 8, f) == 8 && memcmp(got, want, 8) == 0;
        if (i % 1000 == 999) {
            snprintf(want, sizeof want, "u%06d\n", i);
            good &= fread(got, 1, 8, f) == 8 && memcmp(got, want, 8) == 0;
        }
    }
    good &= f && fgetc(f) == EOF;
    if (f)
        fclose(f);
    CHECK(ok && good, "write: 20000 planned records and 20 unplanned ones, in order");
    return failed;
}

static int enospc(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char rec[16];
    for (long i = 0; i < 1000000; i++) {
        snprintf(rec, sizeof rec, "%07ld\n", i);
        if (site_write(fd, rec, 8) != 8) {
            printf("%s\n", errno == ENOSPC ? "ENOSPC" : "other");
            return 1;
        }
    }
    return close(fd) == 0 ? 0 : 1;
}

/* ---- offsets ----------------------------------------------------------------- */

static unsigned char byte_at(long i) { return (unsigned char)(i * 7 % 251); }

static int block_ok(const unsigned char *b, long at, long n)
{
    for (long i = 0; i < n; i++)
        if (b[i] != byte_at(at + i))
            return 0;
    return 1;
}

static off_t pos(int fd) { return lseek(fd, 0, SEEK_CUR); }

/* Planned lseek + read at off: both results right. */
static int seekread(int fd, off_t off, unsigned char *b, size_t n)
{
    return site_seek(fd, off) == off && site_read(fd, b, n) == (ssize_t)n && block_ok(b, off, (long)n);
}

static off_t fdinfo_pos(int fd)
{
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/self/fdinfo/%d", fd);
    FILE *f = fopen(p, "r");
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "pos: %ld", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

static int make_data(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    unsigned char buf[65536];
    for (long i = 0; i < (long)sizeof buf; i++)
        buf[i] = byte_at(i);
    if (fd < 0 || write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
        exit(2);
    return fd;
}

static int seeks(const char *path)
{
    int fd = make_data(path);
    unsigned char b[512];
    int ok = 1;
    for (int i = 0; i < 1000; i++)
        ok &= seekread(fd, (off_t)(i * 7919L % 120) * 512, b, sizeof b);
    CHECK(ok, "seek: 1000 x lseek + read at scattered offsets");
    CHECK(seekread(fd, 1000, b, 100) && pos(fd) == 1100, "seek: lseek(fd, 0, SEEK_CUR) after them: 1100");
    CHECK(site_seek(fd, 2000) == 2000 && read(fd, b, 10) == 10 && block_ok(b, 2000, 10) && pos(fd) == 2010,
          "seek: an unplanned read reads at the planned offset");
    CHECK(seekread(fd, 3000, b, 10) && site_read(fd, b, 10) == 10 && block_ok(b, 3010, 10) && pos(fd) == 3020,
          "seek: two planned reads go on from each other");
    int d = dup(fd);
    CHECK(seekread(fd, 4000, b, 10) && pos(d) == 4010, "seek: a dup sees the offset");
    close(d);
    CHECK(seekread(fd, 5000, b, 10) && fdinfo_pos(fd) == 5010, "seek: /proc/self/fdinfo sees the offset");
    CHECK(seekread(fd, 6000, b, 10) && pread(fd, b, 10, 100) == 10 && block_ok(b, 100, 10) && pos(fd) == 6010,
          "seek: pread elsewhere leaves the offset");
    int st = 0;
    ok = seekread(fd, 7000, b, 10);
    pid_t c = fork();
    if (c == 0)
        _exit(pos(fd) == 7010 ? 0 : 1);
    waitpid(c, &st, 0);
    CHECK(ok && WIFEXITED(st) && WEXITSTATUS(st) == 0, "seek: a forked child sees the offset");
    ok = seekread(fd, 8000, b, 10);
    c = fork();
    if (c == 0) {
        seekread(fd, 9000, b, 10);
        _exit(0);
    }
    waitpid(c, &st, 0);
    CHECK(ok && pos(fd) == 9010, "seek: a child's planned calls, then its exit: the parent sees its offset");
    CHECK(seekread(fd, 10000, b, 10) && write(fd, "W", 1) == 1 && pread(fd, b, 1, 10010) == 1 && b[0] == 'W' &&
              pos(fd) == 10011,
          "seek: a write goes where the planned read left the offset");
    errno = 0;
    CHECK(site_seek(fd, 11000) == 11000 && site_read(fd, (void *)8, 10) == -1 && errno == EFAULT && pos(fd) == 11000,
          "seek: a read into a bad buffer: EFAULT, the offset unmoved");
    CHECK(seekread(fd, 65530, b, 6) && site_read(fd, b, 10) == 0 && pos(fd) == 65536, "seek: end of file");
    errno = 0;
    CHECK(site_seek(fd, -5) == -1 && errno == EINVAL && pos(fd) == 65536, "seek: a negative offset: EINVAL");
    CHECK(site_seek(fd, 1L << 40) == 1L << 40 && site_read(fd, b, 10) == 0 && pos(fd) == 1L << 40,
          "seek: a huge offset (made as it is)");
    CHECK(site_seek_whence(fd, 10, SEEK_SET) == 10 && site_seek_whence(fd, 5, SEEK_CUR) == 15 &&
              site_read(fd, b, 5) == 5 && block_ok(b, 15, 5) && site_seek_whence(fd, -6, SEEK_END) == 65530 &&
              pos(fd) == 65530,
          "seek: SEEK_CUR and SEEK_END after a pending offset");
    int p[2];
    errno = 0;
    CHECK(pipe(p) == 0 && site_seek(p[0], 0) == -1 && errno == ESPIPE, "seek: a pipe: ESPIPE");
    int wo = open(path, O_WRONLY);
    errno = 0;
    CHECK(site_seek(wo, 100) == 100 && site_read(wo, b, 10) == -1 && errno == EBADF && pos(wo) == 100,
          "seek: a write-only descriptor: lseek works, read says EBADF");
    close(wo);
    ok = seekread(fd, 12000, b, 10);
    CHECK(ok && close(fd) == 0, "seek: close with a pending offset");
    return failed;
}

/* A child makes planned calls on a description it shares with us, then
 * waits to be killed; its offset must be ours once it is dead. */
static int seekkill(const char *path)
{
    int fd = make_data(path);
    lseek(fd, 0, SEEK_SET);
    pid_t c = fork();
    if (c == 0) {
        unsigned char b[64];
        /* No message to the parent: any would publish the offset. */
        seekread(fd, 20000, b, 64);
        for (;;)
            pause();
    }
    /* Ready when it sleeps in pause(). */
    char p[64], line[64] = "";
    snprintf(p, sizeof p, "/proc/%d/syscall", (int)c);
    for (int i = 0; i < 500 && strncmp(line, "34 ", 3) != 0; i++) {
        usleep(10000);
        FILE *f = fopen(p, "r");
        if (!f || !fgets(line, sizeof line, f))
            line[0] = 0;
        if (f)
            fclose(f);
    }
    usleep(50000);
    off_t before = pos(fd);
    kill(c, SIGKILL);
    int st;
    waitpid(c, &st, 0);
    off_t after = pos(fd);
    for (int i = 0; i < 100 && after != 20064; i++) { /* the guardian finishes a moment later */
        usleep(10000);
        after = pos(fd);
    }
    printf("before %ld after %ld\n", (long)before, (long)after);
    return after == 20064 ? 0 : 1;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && !strcmp(argv[1], "spec"))
        return spec();
    if (argc >= 2 && !strcmp(argv[1], "clock"))
        return clocks();
    if (argc >= 2 && !strcmp(argv[1], "pid"))
        return ids();
    if (argc >= 3 && !strcmp(argv[1], "write"))
        return writes(argv[2]);
    if (argc >= 3 && !strcmp(argv[1], "enospc"))
        return enospc(argv[2]);
    if (argc >= 3 && !strcmp(argv[1], "seek"))
        return seeks(argv[2]);
    if (argc >= 3 && !strcmp(argv[1], "seekkill"))
        return seekkill(argv[2]);
    if (argc >= 2 && !strcmp(argv[1], "dlopen"))
        return plugin();
    fprintf(stderr, "usage: planned spec|clock|pid|write FILE|enospc FILE|seek FILE|seekkill FILE|dlopen\n");
    return 2;
}
