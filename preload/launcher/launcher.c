/* `syscluster`, the command users type: runs the plainest `syscluster run`
 * command lines itself and `exec`s the full CLI, `syscluster-cli`
 * (src/cli.rs, installed beside it or in ../lib/syscluster), for
 * everything else, with the same arguments and environment.
 *
 * Why C, static, linked with musl: `syscluster run` is meant to add less
 * than half a millisecond to a program's start (docs/RUNTIME.md,
 * "Start-up").  On this (virtual) machine any program linked with glibc
 * spends ~0.3 ms of CPU before `main` asking the CPU for its features
 * (`cpuid` traps to the hypervisor, ~4 us each), and a Rust one more; this
 * one starts in ~0.08 ms.
 *
 * What it takes itself: `run [--coalesce-writes[=BYTES]]
 * [--flush-interval[=]MS] [-v|--verbose] [--] CMD [ARGS...]`, each flag
 * at most once (a bare `--coalesce-writes` only right before `--`), a
 * size of at least 1 and an interval of 1 to 60000 ms, a program found on
 * PATH that the loader will preload into (interposable.c, shared with the
 * library), the library found, the program started.  Anything else -- another
 * subcommand, `--plan`, `--help`, a mistyped flag, a value clap might read
 * differently, a program not found, static or set-user-ID, an `execve`
 * that fails -- goes to `syscluster-cli`, whose answer (or error) is the
 * reference.  tests/integration/run.rs runs the same command lines through
 * both and compares.
 *
 * What it does is the supervisor's (crates/supervisor/src/lib.rs, `run`):
 * the library and its settings in the environment, a report socket, a
 * child subreaper, the program started by `clone(CLONE_VM | CLONE_VFORK)`
 * and `execve` with signals 32 and 33 at their defaults and an empty
 * mask, SIGINT, SIGTERM, SIGHUP and SIGQUIT passed on, the reports
 * printed (each distinct one once), every guardian handed over waited
 * for, and the program's status as the exit code (128 + N for a death by
 * signal N). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../src/interposable.h"
#include "../src/sys.h"

#define LIBRARY_NAME "libsyscluster-preload.so"
#define FULL_CLI "syscluster-cli"
#define GUARDIAN_COMM "syscluster-grd"
/* The longest program and library path taken here (see main). */
#define SHORT_PATH 1024
#ifndef PRELOAD_BUILT
#error "PRELOAD_BUILT: the library this tree builds (preload/Makefile sets it)"
#endif

extern char **environ;
static char **g_argv;
static char exe_dir[PATH_MAX];

/* One line on stderr, in one write (lines of processes sharing stderr
 * stay whole). */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 1) {
        n = (int)sizeof line - 1;
        line[n - 1] = '\n';
    }
    if (n > 0)
        sc_sys3(SYS_write, 2, (long)line, n);
}

/* The full CLI, same arguments: it parses (or refuses) them as always. */
static _Noreturn void full_cli(void)
{
    char here[PATH_MAX + 32], installed[PATH_MAX + 64];
    snprintf(here, sizeof here, "%s/" FULL_CLI, exe_dir);
    snprintf(installed, sizeof installed, "%s/../lib/syscluster/" FULL_CLI, exe_dir);
    const char *path = access(here, F_OK) != 0 && access(installed, F_OK) == 0 ? installed : here;
    if (!exe_dir[0]) {
        say("syscluster: cannot tell where this program is (/proc/self/exe), so not where " FULL_CLI " is\n");
        exit(127);
    }
    execv(path, g_argv);
    int e = errno;
    say("syscluster: cannot start %s: %s (os error %d) (it is installed beside syscluster or in ../lib/syscluster)\n", path,
        strerror(e), e);
    exit(127);
}

/* Decimal digits only, no overflow past max (clap would take `+5`: left to it). */
static int number(const char *s, unsigned long long max, unsigned long long *out)
{
    if (!*s)
        return 0;
    unsigned long long v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (ULLONG_MAX - 9) / 10)
            return 0;
        v = v * 10 + (unsigned)(*s - '0');
        if (v > max)
            return 0;
    }
    *out = v;
    return 1;
}

struct run {
    unsigned long long coalesce, flush;
    int verbose;
    char **command;
};

/* The command lines taken here (see the top); 0 for any other. */
static int run_args(int argc, char **argv, struct run *r)
{
    if (argc < 2 || strcmp(argv[1], "run") != 0)
        return 0;
    r->coalesce = 4096; /* the supervisor's DEFAULT_THRESHOLD */
    r->flush = 5;       /* DEFAULT_FLUSH_MS */
    r->verbose = 0;
    int coalesce = 0, flush = 0, i = 2;
    while (i < argc && argv[i][0] == '-') {
        const char *a = argv[i++];
        const char *eq = strchr(a, '=');
        if (!strcmp(a, "--"))
            break;
        if ((!strcmp(a, "-v") || !strcmp(a, "--verbose")) && !r->verbose)
            r->verbose = 1;
        else if (!strcmp(a, "--coalesce-writes") && !coalesce && i < argc && !strcmp(argv[i], "--"))
            coalesce = 1;
        else if (!strcmp(a, "--flush-interval") && !flush && i < argc && number(argv[i], 60000, &r->flush))
            flush = 1, i++;
        else if (eq && (size_t)(eq - a) == strlen("--coalesce-writes") && !strncmp(a, "--coalesce-writes", (size_t)(eq - a)) &&
                 !coalesce && number(eq + 1, SIZE_MAX, &r->coalesce))
            coalesce = 1;
        else if (eq && (size_t)(eq - a) == strlen("--flush-interval") && !strncmp(a, "--flush-interval", (size_t)(eq - a)) &&
                 !flush && number(eq + 1, 60000, &r->flush))
            flush = 1;
        else
            return 0;
    }
    r->command = argv + i;
    /* A size of 0 (no coalescing) and an interval of 0 are the full CLI's. */
    return i < argc && r->coalesce > 0 && r->flush > 0;
}

/* As the supervisor's resolve_program: a name with a slash as is (a
 * regular file), else the first executable regular file of that name on
 * PATH.  A path longer than out is left to the full CLI (0). */
static int resolve(const char *cmd, char *out, size_t cap)
{
    struct stat st;
    if (strchr(cmd, '/'))
        return (size_t)snprintf(out, cap, "%s", cmd) < cap && stat(out, &st) == 0 && S_ISREG(st.st_mode);
    const char *dirs = getenv("PATH");
    if (!dirs)
        dirs = "/usr/local/bin:/usr/bin:/bin";
    for (;;) {
        size_t n = strcspn(dirs, ":");
        if ((size_t)snprintf(out, cap, "%.*s/%s", (int)(n ? n : 1), n ? dirs : ".", cmd) >= cap)
            return 0;
        if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111))
            return 1;
        if (!dirs[n])
            return 0;
        dirs += n + 1;
    }
}

/* The canonical path of the file opened as fd (what realpath gives for
 * the path it was opened by), in out; 0 if /proc cannot tell or it does
 * not fit.  One path walk, where realpath walks every prefix again with a
 * readlink each (six on this tree's library: ~25 us of the launcher). */
static int fd_path(int fd, char *out, size_t cap)
{
    char link[32];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    long n = sc_sys3(SYS_readlink, (long)link, (long)out, (long)cap);
    if (n <= 0 || (size_t)n >= cap || out[0] != '/')
        return 0;
    out[n] = 0;
    /* " (deleted)", an anonymous inode: not a path realpath would give. */
    struct stat a, b;
    return stat(out, &a) == 0 && sc_sys2(SYS_fstat, fd, (long)&b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* As the supervisor's find_library: $SYSCLUSTER_PRELOAD, then beside the
 * executable (../lib/syscluster/, then its own directory), then the one
 * this tree built; the first that is a file, made absolute (canonical, as
 * Rust's canonicalize).  A candidate longer than out is left to the full
 * CLI (0). */
static int find_library(char *out, size_t cap)
{
    const char *env = getenv("SYSCLUSTER_PRELOAD");
    for (int i = 0; i < 4; i++) {
        char c[PATH_MAX];
        int k;
        if (i == 0 && env && *env)
            k = snprintf(c, sizeof c, "%s", env);
        else if (i == 1 && exe_dir[0])
            k = snprintf(c, sizeof c, "%s/../lib/syscluster/" LIBRARY_NAME, exe_dir);
        else if (i == 2 && exe_dir[0])
            k = snprintf(c, sizeof c, "%s/" LIBRARY_NAME, exe_dir);
        else if (i == 3)
            k = snprintf(c, sizeof c, "%s", PRELOAD_BUILT);
        else
            continue;
        if ((size_t)k >= cap)
            return 0;
        long fd = sc_sys4(SYS_openat, AT_FDCWD, (long)c, O_PATH | O_CLOEXEC, 0);
        struct stat st;
        if (fd < 0)
            continue;
        int reg = sc_sys2(SYS_fstat, fd, (long)&st) == 0 && S_ISREG(st.st_mode);
        int canon = reg && fd_path((int)fd, out, cap);
        sc_sys1(SYS_close, fd);
        if (!reg)
            continue;
        /* Absolute, as LD_PRELOAD takes it best (the program may chdir). */
        if (!canon) {
            char full[PATH_MAX];
            const char *r = realpath(c, full) ? full : c;
            if (strlen(r) >= cap)
                return 0;
            memcpy(out, r, strlen(r) + 1);
        }
        return 1;
    }
    return 0;
}

/* name=value in env (replacing one there, else added); env has room. */
static void setenv_in(char **env, size_t *n, char *kv)
{
    size_t k = (size_t)(strchr(kv, '=') - kv) + 1;
    for (size_t i = 0; i < *n; i++)
        if (!strncmp(env[i], kv, k)) {
            env[i] = kv;
            return;
        }
    env[(*n)++] = kv;
}

/* ---- the program ----------------------------------------------------------- */

struct child {
    const char *file;
    char **argv, **envp;
    int err;
};

/* Shares our memory until its execve: raw system calls only. */
static int child_main(void *arg)
{
    struct child *c = arg;
    struct {
        void *handler;
        unsigned long flags;
        void *restorer;
        uint64_t mask;
    } dfl = {SIG_DFL, 0, 0, 0};
    sc_sys4(SYS_rt_sigaction, 32, (long)&dfl, 0, 8);
    sc_sys4(SYS_rt_sigaction, 33, (long)&dfl, 0, 8);
    uint64_t none = 0;
    sc_sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, 8);
    long r = sc_sys3(SYS_execve, (long)c->file, (long)c->argv, (long)c->envp);
    c->err = (int)-r;
    sc_sys1(SYS_exit, 127);
    return 127;
}

static volatile pid_t target;

static void forward(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    /* A terminal's Ctrl-C already reaches the program's process group. */
    int tty = (sig == SIGINT || sig == SIGQUIT) && info->si_code == SI_KERNEL;
    if (target > 0 && !tty)
        kill(target, sig);
}

static void forward_signals(int on)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        if (on) {
            sa.sa_sigaction = forward;
            sa.sa_flags = SA_RESTART | SA_SIGINFO;
        } else {
            sa.sa_handler = SIG_DFL;
        }
        sigaction(sigs[i], &sa, NULL);
    }
}

/* ---- reports ------------------------------------------------------------- */

static uint64_t seen[256];
static unsigned n_seen;

static uint64_t fnv(const char *a, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)a[i]) * 0x100000001b3ULL;
    return h;
}

/* `syscluster-runtime/1 TAB kind TAB pid TAB comm TAB text`, as the
 * supervisor's report.rs shows it. */
static void show(char *msg, size_t n, int verbose)
{
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' ' || msg[n - 1] == '\t' || msg[n - 1] == '\r'))
        n--;
    msg[n] = 0;
    char *f[5];
    f[0] = msg;
    for (int i = 1; i < 5; i++) {
        char *t = strchr(f[i - 1], '\t');
        if (!t)
            return;
        *t = 0;
        f[i] = t + 1;
    }
    if (strcmp(f[0], "syscluster-runtime/1") != 0)
        return;
    if (!strcmp(f[1], "stats")) {
        if (verbose)
            say("syscluster run: %s[%s]: %s\n", f[3], f[2], f[4]);
        return;
    }
    uint64_t h = fnv(f[4], strlen(f[4]), fnv(f[1], strlen(f[1]) + 1, 0xcbf29ce484222325ULL));
    for (unsigned i = 0; i < n_seen; i++)
        if (seen[i] == h)
            return;
    if (n_seen < sizeof seen / sizeof seen[0])
        seen[n_seen++] = h;
    if (verbose)
        say("syscluster run: %s[%s]: %s\n", f[3], f[2], f[4]);
    else
        say("syscluster run: %s\n", f[4]);
}

static void drain(int sock, int verbose)
{
    char buf[2049];
    long n;
    while ((n = recv(sock, buf, sizeof buf - 1, MSG_DONTWAIT)) > 0)
        show(buf, (size_t)n, verbose);
}

/* ---- guardians handed over ------------------------------------------------ */

static int has_children(void)
{
    siginfo_t info;
    return waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT | __WALL) == 0;
}

/* The start of a small file of /proc, NUL-terminated; 0 if it cannot be read. */
static int read_proc(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    long n = read(fd, buf, cap - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    return 1;
}

/* Waits for our children that are guardians (of programs that died). */
static void wait_for_guardians(void)
{
    for (int round = 0; round < 64 && has_children(); round++) {
        char path[64], buf[4096];
        snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
        if (!read_proc(path, buf, sizeof buf))
            return;
        int found = 0;
        for (char *t = strtok(buf, " \n"); t; t = strtok(NULL, " \n")) {
            char comm[32];
            snprintf(path, sizeof path, "/proc/%s/comm", t);
            if (!read_proc(path, comm, sizeof comm))
                continue;
            comm[strcspn(comm, "\n")] = 0;
            if (!strcmp(comm, GUARDIAN_COMM)) {
                int st;
                waitpid(atoi(t), &st, __WALL);
                found = 1;
            }
        }
        if (!found)
            return;
    }
}

int main(int argc, char **argv)
{
    g_argv = argv;
    long n = readlink("/proc/self/exe", exe_dir, sizeof exe_dir - 1);
    exe_dir[n > 0 ? n : 0] = 0;
    char *slash = strrchr(exe_dir, '/');
    if (slash)
        *slash = 0;
    else
        exe_dir[0] = 0;

    /* Every page of memory touched costs a fault (~2.5 us on this virtual
     * machine): the buffers are no larger than common paths need, a longer
     * one goes to the full CLI. */
    struct run r;
    char path[SHORT_PATH], lib[SHORT_PATH], why[600];
    if (!run_args(argc, argv, &r) || !resolve(r.command[0], path, sizeof path) ||
        sc_elf_static_or_setuid(path, why, sizeof why) || !find_library(lib, sizeof lib))
        full_cli();

    /* Descriptors 0-2 exist (a closed one on /dev/null), as the CLI's. */
    struct pollfd std[3] = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}};
    if (poll(std, 3, 0) >= 0)
        for (int i = 0; i < 3; i++)
            if (std[i].revents & POLLNVAL)
                open("/dev/null", O_RDWR);

    /* The report socket: an abstract name the library finds in the environment. */
    struct timespec now; /* not through the vDSO: its two pages would fault in */
    sc_sys2(SYS_clock_gettime, CLOCK_REALTIME, (long)&now);
    char name[96];
    int name_len = snprintf(name, sizeof name, "syscluster-run-%d-%llx", (int)getpid(),
                            (unsigned long long)now.tv_sec * 1000000000ULL + (unsigned long long)now.tv_nsec);
    int sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path + 1, name, (size_t)name_len);
    if (sock < 0 || bind(sock, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)name_len)) != 0)
        full_cli();

    /* The environment: ours, without a plan or a size of the caller's, with the library's settings. */
    size_t env_n = 0, cap = 8;
    for (char **e = environ; *e; e++)
        cap++;
    /* On the stack when small (the heap's first page is a fault and two brk). */
    char *env_small[256];
    char **env = cap <= sizeof env_small / sizeof env_small[0] ? env_small : malloc(cap * sizeof *env);
    if (!env)
        full_cli();
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "SYSCLUSTER_PLAN=", 16) && strncmp(*e, "SYSCLUSTER_COALESCE=", 20))
            env[env_n++] = *e;
    const char *old = getenv("LD_PRELOAD");
    size_t pl_len = strlen(lib) + (old ? strlen(old) : 0) + 16;
    char preload_small[SHORT_PATH + 64], flush[48], coalesce[48], report[128];
    char *preload = pl_len <= sizeof preload_small ? preload_small : malloc(pl_len);
    if (!preload)
        full_cli();
    snprintf(preload, pl_len, old && *old ? "LD_PRELOAD=%s %s" : "LD_PRELOAD=%s", lib, old);
    snprintf(flush, sizeof flush, "SYSCLUSTER_FLUSH_MS=%llu", r.flush);
    snprintf(coalesce, sizeof coalesce, "SYSCLUSTER_COALESCE=%llu", r.coalesce);
    snprintf(report, sizeof report, "SYSCLUSTER_REPORT=%s", name);
    setenv_in(env, &env_n, preload);
    setenv_in(env, &env_n, flush);
    setenv_in(env, &env_n, report);
    setenv_in(env, &env_n, coalesce);
    if (r.verbose)
        setenv_in(env, &env_n, "SYSCLUSTER_VERBOSE=1");
    env[env_n] = NULL;
    if (r.verbose)
        say("syscluster run: coalescing writes shorter than %llu bytes to regular files, time bound %llu ms, with %s\n",
            r.coalesce, r.flush, lib);

    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    /* The file found on PATH; argv[0] as the user typed it. */
    struct child c = {path, r.command, env, 0};
    /* The child runs on our stack, in this array: we are stopped until
     * its execve (CLONE_VFORK), and its frames are small. */
    char stack[4096] __attribute__((aligned(16)));
    sigset_t all, old_mask;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old_mask);
    pid_t pid = clone(child_main, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    if (pid < 0 || c.err) {
        if (pid > 0) {
            int st;
            waitpid(pid, &st, 0);
        }
        close(sock);
        full_cli(); /* it says why, as it always did */
    }
    target = pid;
    forward_signals(1);

    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0), status = 0;
    for (;;) {
        struct pollfd p[2] = {{sock, POLLIN, 0}, {pidfd, POLLIN, 0}};
        poll(p, pidfd >= 0 ? 2 : 1, pidfd >= 0 ? -1 : 20);
        if (p[0].revents)
            drain(sock, r.verbose);
        if (pidfd < 0 || p[1].revents) {
            pid_t w = waitpid(pid, &status, pidfd < 0 ? WNOHANG : 0);
            if (w == pid)
                break;
            if (w < 0 && errno != EINTR) {
                say("syscluster run: waitpid: %s (os error %d)\n", strerror(errno), errno);
                return 125;
            }
        }
    }
    if (pidfd >= 0)
        close(pidfd);
    target = 0;
    forward_signals(0);
    wait_for_guardians();
    drain(sock, r.verbose);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
