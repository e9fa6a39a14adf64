/* The process: the library's start (configuration from the environment),
 * fork, vfork and exec, and its end (everything written out, the guardian
 * stopped).  Builds on everything else. */
#include "rt.h"
#include "sys.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

/* ---- start and end ---------------------------------------------------- */

static size_t env_size(const char *name, size_t dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    return *end ? dflt : (size_t)x;
}

/* Around a fork (glibc's fork() runs these as pthread_atfork handlers;
 * wrap_proc.c's _Fork calls them itself): every slot is written out and
 * stays locked across the fork, and the child starts from the slots as
 * they were then (guardian.c, sc_region_fork_snapshot). */
void sc_fork_prepare(void)
{
    if (sc_mode() == SC_OFF)
        return;
    sc_may_share();
    sc_enter();
    sc_spin_lock(&G.bind_lock);
    for (unsigned i = 0; G.slots && i < SC_NSLOTS; i++) {
        sc_slot_lock(&G.slots[i]);
        sc_flush_locked(&G.slots[i]);
    }
    sc_region_fork_snapshot();
    sc_spin_lock(&G.g_lock);
}

void sc_fork_parent(void)
{
    if (sc_mode() == SC_OFF)
        return;
    sc_spin_unlock(&G.g_lock);
    for (unsigned i = 0; G.slots && i < SC_NSLOTS; i++)
        sc_slot_unlock(&G.slots[i]);
    sc_spin_unlock(&G.bind_lock);
    sc_leave();
}

void sc_fork_child(void)
{
    if (sc_mode() == SC_OFF)
        return;
    G.pid = (int)sc_getpid();
    atomic_store(&G.g_lock, 0);
    /* Slots in the region are the parent's, which runs on with them: the
     * child never touches them (guardian.c, sc_region_forked, gives it
     * unlocked copies).  Slots of our own (no region: a fork child's that
     * could not map one) are unlocked here. */
    if (!G.sh)
        for (unsigned i = 0; G.slots && i < SC_NSLOTS; i++) {
            atomic_store(&G.slots[i].lock, 0);
            atomic_store(&G.slots[i].owner, 0);
        }
    atomic_store(&G.bind_lock, 0);
    sc_signals_forked();
    if (sc_fast_ok)
        sc_fast_register(); /* this process's own registration (a no-op: fork keeps it) */
    /* The guardian shares the parent's fd table, not ours; so does the
     * region: the child gets its own (a copy) first, then forgets the held
     * bytes in it -- in the parent's region they are the parent's. */
    sc_guardian_forget();
    sc_forget_held();
    sc_plan_forked();
    sc_leave();
}

void sc_process_end(void)
{
    int m = sc_mode();
    if (m == SC_OFF || sc_vfork_child()) /* a vfork child's exit is not ours */
        return;
    if (m == SC_ACTIVE)
        sc_quiesce(SC_WT);
    sc_guardian_stop();
    sc_drop_held("the program did not write to the file again");
    if (sc_attn() & SC_ERRS) {
        size_t top = atomic_load(&G.fd_hi);
        for (size_t fd = 0; fd < top; fd++)
            if (G.fdtab[fd].err)
                sc_lost_err((int)fd, sc_take_err((int)fd));
    }
}

__attribute__((constructor(101))) static void sc_init(void)
{
    G.pid = (int)sc_getpid();
    G.threshold = env_size("SYSCLUSTER_COALESCE", 0);
    G.verbose = (int)env_size("SYSCLUSTER_VERBOSE", 0);
    G.flush_ms = (int)env_size("SYSCLUSTER_FLUSH_MS", 5);
    sc_no_kcmp = (int)env_size("SYSCLUSTER_TEST_NO_KCMP", 0);
    if (G.flush_ms < 1)
        G.flush_ms = 1;
    const char *rep = getenv("SYSCLUSTER_REPORT");
    if (rep && *rep && strlen(rep) < sizeof G.report - 1) {
        /* An abstract socket name: a leading NUL, then the name. */
        G.report[0] = 0;
        memcpy(G.report + 1, rep, strlen(rep));
        G.report_len = (int)strlen(rep) + 1;
    }
    const char *plan = getenv("SYSCLUSTER_PLAN");
    int planned = plan && *plan && sc_plan_parse(plan) > 0;
    if (G.threshold == 0 && !planned)
        return; /* not asked to coalesce nor to apply a plan: stay out of the way */
    /* The plan's table is read only when there is one (its pages are
     * touched only then). */
    size_t thr = G.threshold, plan_thr = planned ? sc_plan_max_threshold() : 0, plan_buf = planned ? sc_plan_buffer() : 0;
    if (thr < plan_thr)
        thr = plan_thr;
    G.cap = 64 * 1024;
    if (G.cap < plan_buf && plan_buf <= (1 << 20))
        G.cap = (plan_buf + 4095) & ~(size_t)4095;
    if (G.cap < 4 * thr)
        G.cap = (4 * thr + 4095) & ~(size_t)4095;
    struct rlimit rl;
    size_t n = 1 << 16;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && rl.rlim_max > n)
        n = rl.rlim_max;
    if (n > (1 << 20))
        n = 1 << 20;
    void *t = (void *)sc_sys6(SYS_mmap, 0, (long)(n * sizeof(struct sc_fdent)), PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if ((long)t < 0 && (long)t > -4096)
        return;
    G.fdtab = t;
    G.fdmax = n;
    char culprit[256];
    if (sc_scan_loaded(culprit, sizeof culprit)) {
        atomic_store(&G.mode, SC_PASS);
        sc_report("unchanged", "%s makes system calls without libc (raw syscall instructions): it runs unchanged%s",
                  culprit, planned ? " (the plan is not applied)" : "");
        return;
    }
    pthread_atfork(sc_fork_prepare, sc_fork_parent, sc_fork_child);
    atomic_store(&G.mode, SC_ACTIVE);
    /* The signal trampolines are installed when first needed (signals.c):
     * before the first lock (the first deferral takes one), at the
     * program's first sigaction that sets a handler -- and now when there
     * is a plan (its sites copy answers into the program's memory, where a
     * fault must become EFAULT, and ask whether a handler is running). */
    sc_signals_arm();
    if (planned) {
        sc_signals_take();
        sc_plan_start();
    }
    /* The guardian starts at the first deferral (coalesce.c): a program
     * that defers nothing (most short ones) starts none, and its system
     * calls on fds do not pay for a shared fd table.  Its clone leaves the
     * program's memory out (guardian.c, g_nocopy_mark), so a large program
     * pays no page-table copy for it. */
}

__attribute__((destructor(101))) static void sc_fini(void)
{
    sc_process_end();
    if (G.verbose && G.fdtab) {
        uint64_t lost = 0, deferred = 0, slow = 0;
        for (unsigned i = 0; G.slots && i < SC_NSLOTS; i++) {
            lost += G.slots[i].n_lost;
            deferred += G.slots[i].n_writes;
            slow += sc_slow_writes[i];
        }
        sc_report("stats",
                  "deferred=%llu direct=%llu flushes=%llu fused=%llu lost_bytes=%llu fast=%llu scanned=%d "
                  "scan_cached=%d",
                  (unsigned long long)deferred, (unsigned long long)G.c_direct,
                  (unsigned long long)G.c_flushes, (unsigned long long)G.c_fused, (unsigned long long)lost,
                  (unsigned long long)(deferred - slow), sc_scan_scanned, sc_scan_cached);
        sc_plan_report();
    }
}
