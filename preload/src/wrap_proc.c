/* Process-level events: fork, vfork, spawn, exec, exit, syscall(),
 * changes of the fd table, limits or credentials the guardian runs under,
 * and code loaded later.  Everything pending is written out before any of
 * them, so a child, a new program image or a parent reaping us sees every
 * byte the program wrote before. */
#include "rt.h"
#include <sys/mman.h>
#include "sys.h"
#include "syscall_lists.h" /* data/gen/, from data/syscall_properties.tsv */

#include <dlfcn.h>
#include <errno.h>
#include <mqueue.h>
#include <sched.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

pid_t _Fork(void);

/* ---- exec ------------------------------------------------------------- */

void sc_exec_prepare(int *saved)
{
    sc_signals_exec(0);
    *saved = sc_mode();
    if (*saved == SC_OFF || sc_vfork_child()) {
        *saved = SC_OFF;
        return;
    }
    /* No more deferring: threads that exec kills must not hold bytes. */
    if (*saved == SC_ACTIVE)
        sc_quiesce(SC_WT);
    sc_drop_held("the program execs");
    sc_guardian_stop();
}

void sc_exec_failed(int saved)
{
    sc_signals_exec(1);
    if (saved == SC_ACTIVE)
        atomic_store(&G.mode, SC_ACTIVE);
}

#define EXEC_BODY(path, use_path, call)                                                                 \
    do {                                                                                                \
        int saved_;                                                                                     \
        sc_exec_prepare(&saved_);                                                                       \
        if (saved_ != SC_OFF)                                                                           \
            sc_check_exec_target((path), (use_path));                                                   \
        int r_ = call;                                                                                  \
        int e_ = errno;                                                                                 \
        sc_exec_failed(saved_);                                                                         \
        errno = e_;                                                                                     \
        return r_;                                                                                      \
    } while (0)

SC_EXPORT int execve(const char *p, char *const a[], char *const e[]) { EXEC_BODY(p, 0, SC_REAL(execve)(p, a, e)); }
SC_EXPORT int execv(const char *p, char *const a[]) { EXEC_BODY(p, 0, SC_REAL(execv)(p, a)); }
SC_EXPORT int execvp(const char *p, char *const a[]) { EXEC_BODY(p, 1, SC_REAL(execvp)(p, a)); }
SC_EXPORT int execvpe(const char *p, char *const a[], char *const e[]) { EXEC_BODY(p, 1, SC_REAL(execvpe)(p, a, e)); }
SC_EXPORT int fexecve(int fd, char *const a[], char *const e[]) { EXEC_BODY(NULL, 0, SC_REAL(fexecve)(fd, a, e)); }
SC_EXPORT int execveat(int d, const char *p, char *const a[], char *const e[], int f)
{
    EXEC_BODY(NULL, 0, SC_REAL(execveat)(d, p, a, e, f));
}

/* execl* take their arguments inline: gather them, then use the v forms. */
#define GATHER(first, argv, envp_out)                                                                   \
    va_list ap;                                                                                         \
    size_t n_ = 1;                                                                                      \
    va_start(ap, first);                                                                                \
    while (va_arg(ap, char *))                                                                          \
        n_++;                                                                                           \
    va_end(ap);                                                                                         \
    char **argv = __builtin_alloca((n_ + 1) * sizeof(char *));                                          \
    argv[0] = (char *)(first);                                                                          \
    va_start(ap, first);                                                                                \
    for (size_t i_ = 1; i_ <= n_; i_++)                                                                 \
        argv[i_] = va_arg(ap, char *);                                                                  \
    envp_out;                                                                                           \
    va_end(ap)

SC_EXPORT int execl(const char *p, const char *arg, ...)
{
    GATHER(arg, argv, (void)0);
    EXEC_BODY(p, 0, SC_REAL(execv)(p, argv));
}

SC_EXPORT int execlp(const char *p, const char *arg, ...)
{
    GATHER(arg, argv, (void)0);
    EXEC_BODY(p, 1, SC_REAL(execvp)(p, argv));
}

SC_EXPORT int execle(const char *p, const char *arg, ...)
{
    char **envp;
    GATHER(arg, argv, envp = va_arg(ap, char **));
    EXEC_BODY(p, 0, SC_REAL(execve)(p, argv, envp));
}

/* ---- fork, vfork, spawn, clone ------------------------------------------ */

/* The program's own MADV_DONTFORK marks, which the guardian's start must
 * leave as they are (guardian.c, g_nocopy_mark). */
SC_EXPORT int madvise(void *addr, size_t len, int advice)
{
    if (sc_likely(advice != MADV_DONTFORK && advice != MADV_DOFORK))
        return SC_REAL(madvise)(addr, len, advice);
    long r = sc_madvise_fork((uintptr_t)addr, len, advice);
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return 0;
}

/* glibc's fork() runs our pthread_atfork handlers (process.c); _Fork does
 * not, so it runs them itself: the child's slots are a copy of the parent's
 * taken with every slot locked, not read from the region the parent goes on
 * using (guardian.c, sc_region_fork_snapshot).  The guardian's clone is
 * held off meanwhile (g_lock: it marks the program's memory not to be
 * copied, guardian.c). */
SC_EXPORT pid_t _Fork(void)
{
    if (!sc_live())
        return SC_REAL(_Fork)();
    sc_fork_prepare();
    pid_t r = SC_REAL(_Fork)();
    if (r == 0)
        sc_fork_child();
    else
        sc_fork_parent();
    return r;
}

SC_HIDDEN void *sc_vfork_prepare(void)
{
    static void *real;
    if (!real)
        real = sc_dlnext("vfork");
    if (sc_live()) {
        sc_publish();
        sc_may_share();
        sc_tls.vfork = 1;
    }
    return real;
}

SC_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    pid_t *ptid = va_arg(ap, pid_t *);
    void *tls = va_arg(ap, void *);
    pid_t *ctid = va_arg(ap, pid_t *);
    va_end(ap);
    if (sc_live())
        sc_give_up("the program calls clone() itself");
    return SC_REAL(clone)(fn, stack, flags, arg, ptid, tls, ctid);
}

SC_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                          const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
    if (sc_live()) {
        sc_publish();
        sc_may_share();
        sc_check_exec_target(path, 0);
    }
    sc_signals_exec(0);
    int r = SC_REAL(posix_spawn)(pid, path, fa, at, argv, envp);
    sc_signals_exec(1);
    return r;
}

SC_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
    if (sc_live()) {
        sc_publish();
        sc_may_share();
        sc_check_exec_target(file, 1);
    }
    sc_signals_exec(0);
    int r = SC_REAL(posix_spawnp)(pid, file, fa, at, argv, envp);
    sc_signals_exec(1);
    return r;
}

SC_EXPORT int system(const char *cmd)
{
    sc_publish();
    sc_may_share();
    sc_signals_exec(0);
    int r = SC_REAL(system)(cmd), err = errno;
    sc_signals_exec(1);
    errno = err;
    return r;
}

SC_EXPORT FILE *popen(const char *cmd, const char *mode)
{
    sc_publish();
    sc_may_share();
    sc_signals_exec(0);
    FILE *f = SC_REAL(popen)(cmd, mode);
    int e = errno;
    sc_signals_exec(1);
    errno = e;
    if (f && sc_live()) {
        int err = errno;
        sc_after_open(fileno(f));
        errno = err;
    }
    return f;
}

/* ---- the end ------------------------------------------------------------ */

SC_EXPORT void _exit(int status)
{
    if (sc_live())
        sc_process_end();
    SC_REAL(_exit)(status);
    __builtin_unreachable();
}

SC_EXPORT void _Exit(int status)
{
    if (sc_live())
        sc_process_end();
    SC_REAL(_Exit)(status);
    __builtin_unreachable();
}

SC_EXPORT void quick_exit(int status)
{
    if (sc_live())
        sc_process_end();
    SC_REAL(quick_exit)(status);
    __builtin_unreachable();
}

SC_EXPORT void abort(void)
{
    if (sc_live())
        sc_process_end();
    SC_REAL(abort)();
    __builtin_unreachable();
}

/* ---- what the guardian depends on --------------------------------------- */

/* The guardian shares the fd table, limits and credentials it was created
 * with: when they change, stop it; the next deferred write starts a new
 * one. */
#define RESTART_AROUND(call)                                                                            \
    do {                                                                                                \
        int was_ = sc_live() ? sc_mode() : SC_OFF;                                                      \
        if (was_ == SC_ACTIVE)                                                                          \
            sc_quiesce(SC_WT);                                                                          \
        if (was_ != SC_OFF)                                                                             \
            sc_guardian_stop();                                                                         \
        int r_ = call;                                                                                  \
        int e_ = errno;                                                                                 \
        if (was_ == SC_ACTIVE)                                                                          \
            atomic_store(&G.mode, SC_ACTIVE);                                                           \
        errno = e_;                                                                                     \
        return r_;                                                                                      \
    } while (0)

SC_EXPORT int unshare(int flags)
{
    if (!(flags & CLONE_FILES))
        return SC_REAL(unshare)(flags);
    RESTART_AROUND(SC_REAL(unshare)(flags));
}

SC_EXPORT int setrlimit(__rlimit_resource_t r, const struct rlimit *l) { RESTART_AROUND(SC_REAL(setrlimit)(r, l)); }
SC_EXPORT int setrlimit64(__rlimit_resource_t r, const struct rlimit64 *l)
{
    RESTART_AROUND(SC_REAL(setrlimit64)(r, l));
}

SC_EXPORT int prlimit(pid_t pid, __rlimit_resource_t r, const struct rlimit *n, struct rlimit *o)
{
    if (!n || (pid != 0 && pid != G.pid))
        return SC_REAL(prlimit)(pid, r, n, o);
    RESTART_AROUND(SC_REAL(prlimit)(pid, r, n, o));
}

SC_EXPORT int prlimit64(pid_t pid, __rlimit_resource_t r, const struct rlimit64 *n, struct rlimit64 *o)
{
    if (!n || (pid != 0 && pid != G.pid))
        return SC_REAL(prlimit64)(pid, r, n, o);
    RESTART_AROUND(SC_REAL(prlimit64)(pid, r, n, o));
}

SC_EXPORT int setuid(uid_t u) { RESTART_AROUND(SC_REAL(setuid)(u)); }
SC_EXPORT int seteuid(uid_t u) { RESTART_AROUND(SC_REAL(seteuid)(u)); }
SC_EXPORT int setreuid(uid_t a, uid_t b) { RESTART_AROUND(SC_REAL(setreuid)(a, b)); }
SC_EXPORT int setresuid(uid_t a, uid_t b, uid_t c) { RESTART_AROUND(SC_REAL(setresuid)(a, b, c)); }
SC_EXPORT int setgid(gid_t g) { RESTART_AROUND(SC_REAL(setgid)(g)); }
SC_EXPORT int setegid(gid_t g) { RESTART_AROUND(SC_REAL(setegid)(g)); }
SC_EXPORT int setregid(gid_t a, gid_t b) { RESTART_AROUND(SC_REAL(setregid)(a, b)); }
SC_EXPORT int setresgid(gid_t a, gid_t b, gid_t c) { RESTART_AROUND(SC_REAL(setresgid)(a, b, c)); }

/* ---- code loaded later -------------------------------------------------- */

static void scan_new(void)
{
    if (sc_mode() != SC_ACTIVE)
        return;
    char culprit[256];
    if (sc_scan_loaded(culprit, sizeof culprit)) {
        char why[400];
        snprintf(why, sizeof why, "%s makes system calls without libc (raw syscall instructions)", culprit);
        sc_give_up(why);
    }
}

/* New code: search it for raw system calls, and resolve the plan's sites
 * in it. */
static void loaded(void)
{
    int err = errno;
    scan_new();
    if (sc_mode() == SC_ACTIVE)
        sc_plan_resolve();
    errno = err;
}

SC_EXPORT void *dlopen(const char *file, int mode)
{
    sc_publish(); /* the loader's fstat, read and mmap of the file see every byte */
    void *h = SC_REAL(dlopen)(file, mode);
    if (h && sc_live())
        loaded();
    return h;
}

SC_EXPORT void *dlmopen(Lmid_t lm, const char *file, int mode)
{
    sc_publish(); /* the loader's fstat, read and mmap of the file see every byte */
    void *h = SC_REAL(dlmopen)(lm, file, mode);
    if (h && sc_live())
        loaded();
    return h;
}

/* Code unloaded: its return addresses must not match what is loaded there
 * later.  No site applies while it goes. */
SC_EXPORT int dlclose(void *h)
{
    if (!sc_planned(~0))
        return SC_REAL(dlclose)(h);
    sc_plan_close_begin();
    int r = SC_REAL(dlclose)(h);
    int err = errno;
    sc_plan_close_end();
    errno = err;
    return r;
}

/* ---- ids a plan caches -------------------------------------------------- */

SC_EXPORT pid_t getpid(void)
{
    if (sc_planned(SC_PK_PID)) {
        long id = sc_plan_id(__builtin_return_address(0), SYS_getpid);
        if (id > 0)
            return (pid_t)id;
    }
    return SC_REAL(getpid)();
}

SC_EXPORT pid_t gettid(void)
{
    if (sc_planned(SC_PK_TID)) {
        long id = sc_plan_id(__builtin_return_address(0), SYS_gettid);
        if (id > 0)
            return (pid_t)id;
    }
    return SC_REAL(gettid)();
}

/* ---- syscall() and prctl() ---------------------------------------------- */

SC_EXPORT int prctl(int op, ...)
{
    va_list ap;
    va_start(ap, op);
    unsigned long a = va_arg(ap, unsigned long), b = va_arg(ap, unsigned long), c = va_arg(ap, unsigned long),
                  d = va_arg(ap, unsigned long);
    va_end(ap);
    if (op == PR_SET_SECCOMP && sc_live())
        sc_give_up("the program installs a seccomp filter");
    if (op == PR_SET_TSC && sc_live())
        sc_plan_tsc(a);
    return SC_REAL(prctl)(op, a, b, c, d);
}

SC_EXPORT long syscall(long n, ...)
{
    va_list ap;
    va_start(ap, n);
    long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long), d = va_arg(ap, long),
         e = va_arg(ap, long), f = va_arg(ap, long);
    va_end(ap);
    long r;
    if (sc_mode() == SC_OFF)
        return SC_REAL(syscall)(n, a, b, c, d, e, f);
    /* The caller's stack pointer is just above our return address. */
    if (sc_planned(SC_PK_CLOCK | SC_PK_PID | SC_PK_TID) &&
        sc_plan_syscall(__builtin_return_address(0), (uintptr_t)__builtin_frame_address(0) + 16, n, a, b, &r))
        return r;
    if (n == SYS_madvise && (c == MADV_DONTFORK || c == MADV_DOFORK)) {
        r = sc_madvise_fork((uintptr_t)a, (size_t)b, (int)c);
        if (r < 0) {
            errno = (int)-r;
            return -1;
        }
        return 0;
    }
    /* Harmless numbers (data/syscall_properties.tsv): another process cannot
     * observe them; a shared futex wake (wrap_sync.c's messages) is not one. */
    if (!sc_live() || scl_harmless(n, (const long[6]){a, b, c, d, e, f}))
        return SC_REAL(syscall)(n, a, b, c, d, e, f);
    if (n == SYS_prctl && a == PR_SET_TSC)
        sc_plan_tsc((unsigned long)b);
    switch (n) {
    case SYS_fork:
    case SYS_vfork:
    case SYS_clone:
    case SYS_clone3:
        sc_give_up("the program creates processes through syscall()");
        break;
    case SYS_io_uring_setup:
        sc_give_up("the program uses io_uring");
        break;
    case SYS_seccomp:
        sc_give_up("the program installs a seccomp filter");
        break;
    case SYS_rt_sigaction:
        sc_give_up("the program installs signal handlers through syscall()");
        break;
    case SYS_execve:
    case SYS_execveat: {
        int saved;
        sc_exec_prepare(&saved);
        long r = SC_REAL(syscall)(n, a, b, c, d, e, f);
        int err = errno;
        sc_exec_failed(saved);
        errno = err;
        return r;
    }
    case SYS_exit_group:
        sc_process_end();
        break;
    case SYS_close:
    case SYS_dup2:
    case SYS_dup3: {
        sc_enter();
        sc_flush_all();
        sc_release_fd((int)(n == SYS_close ? a : b), NULL);
        sc_leave();
        break;
    }
    case SYS_close_range:
        sc_enter();
        sc_flush_all();
        sc_forget_range((unsigned)a, (unsigned)b);
        sc_leave();
        break;
    default:
        sc_publish();
    }
    return SC_REAL(syscall)(n, a, b, c, d, e, f);
}

/* ---- messages to other processes ---------------------------------------- */

SC_EXPORT int msgsnd(int id, const void *m, size_t n, int f)
{
    sc_publish();
    return SC_REAL(msgsnd)(id, m, n, f);
}

SC_EXPORT int mq_send(mqd_t q, const char *m, size_t n, unsigned int p)
{
    sc_publish();
    return SC_REAL(mq_send)(q, m, n, p);
}

SC_EXPORT int mq_timedsend(mqd_t q, const char *m, size_t n, unsigned int p, const struct timespec *t)
{
    sc_publish();
    return SC_REAL(mq_timedsend)(q, m, n, p, t);
}
