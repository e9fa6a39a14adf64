/* Signals.  The runtime takes over the kernel-level disposition of the
 * signals whose handlers matter to it and keeps the program's view in a
 * table (sigaction and friends read and write that table):
 *
 *  - a program handler runs through a trampoline that holds the signal
 *    back while the interrupted thread is inside a runtime critical
 *    section (it is re-queued, blocked, and released when the section
 *    ends), so a handler that writes never sees a half-updated buffer nor
 *    waits on a lock its own thread holds;
 *  - a signal whose action is the default "terminate" gets a trampoline
 *    that writes out everything pending, restores the default action and
 *    re-raises, so the exit status (and core dump) are unchanged;
 *  - a fault while copying the caller's buffer (write with a bad pointer)
 *    is turned into EFAULT, as the kernel would report it.
 *
 * They are installed when first needed, not at start (sc_signals_take):
 * before the runtime first takes a lock (the first deferral takes one),
 * at the program's first sigaction-family call that sets an action, and at
 * start when a plan is given.  Until then the kernel holds the program's
 * own actions and nothing is deferred: docs/RUNTIME.md, "Signals before
 * the first deferral", says why nothing of the above is needed then. */
#include "rt.h"
#include "sys.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#define NSIG_MAX 65

static struct sigaction prog[NSIG_MAX] SC_APART; /* what the program asked for */
static _Atomic int sig_lock;
static _Atomic int managed; /* the trampolines are installed and the table is in use */
static _Atomic int armed;   /* the runtime is on: install them when needed (sc_signals_arm) */
static _Atomic int installing; /* set before the installation reads the first action */
static int exec_windows;    /* execs and spawns under way (sc_signals_exec), under sig_lock */

static int default_terminates(int sig)
{
    switch (sig) {
    case SIGCHLD:
    case SIGCONT:
    case SIGURG:
    case SIGWINCH:
    case SIGSTOP:
    case SIGTSTP:
    case SIGTTIN:
    case SIGTTOU:
    case SIGKILL:
        return 0;
    default:
        return 1;
    }
}

static int is_fault(int sig, const siginfo_t *si)
{
    return si->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL);
}

static void raw_default(int sig)
{
    struct {
        void *h;
        unsigned long flags;
        void *restorer;
        uint64_t mask;
    } ka = {SIG_DFL, 0, 0, 0};
    sc_sys4(SYS_rt_sigaction, sig, (long)&ka, 0, 8);
}

static void requeue(int sig, siginfo_t *si)
{
    sc_sys4(SYS_rt_tgsigqueueinfo, G.pid, sc_gettid(), sig, (long)si);
}

static void trampoline(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    if (sc_tls.in_rt) {
        uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
        if (is_fault(sig, si)) {
            if (ip >= (uintptr_t)sc_copy_start && ip < (uintptr_t)sc_copy_end) {
                uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)sc_copy_fixup;
                return;
            }
            raw_default(sig); /* a fault in the runtime itself: die of it */
            return;
        }
        /* Hold it back until the critical section ends. */
        sigaddset(&uc->uc_sigmask, sig);
        sc_tls.deferred_mask |= 1ULL << (sig - 1);
        requeue(sig, si);
        return;
    }
    struct sigaction *pa = &prog[sig];
    void (*h)(int) = pa->sa_handler;
    if (h == SIG_DFL || (h == SIG_IGN && is_fault(sig, si))) {
        /* Dying: write out what is pending, then die of the same signal. */
        int saved = errno;
        if (sc_mode() == SC_ACTIVE)
            sc_quiesce(SC_WT);
        raw_default(sig);
        if (!is_fault(sig, si))
            requeue(sig, si); /* a fault happens again when we return */
        errno = saved;
        return;
    }
    if (h == SIG_IGN)
        return; /* SIGSEGV/SIGBUS sent by kill() while the program ignores them */
    if (pa->sa_flags & SA_RESETHAND)
        pa->sa_handler = SIG_DFL; /* the kernel reset it too */
    sc_tls.in_handler++; /* what is not async-signal-safe waits (plan.c) */
    if (pa->sa_flags & SA_SIGINFO)
        pa->sa_sigaction(sig, si, ucv);
    else
        h(sig);
    sc_tls.in_handler--;
}

/* Which kernel action implements the program's action for sig. */
static int kernel_action(int sig, const struct sigaction *want, struct sigaction *k)
{
    memset(k, 0, sizeof *k);
    if (want->sa_handler == SIG_IGN && sig != SIGSEGV && sig != SIGBUS) {
        *k = *want;
        return 0;
    }
    if (want->sa_handler == SIG_DFL || want->sa_handler == SIG_IGN) {
        if (want->sa_handler == SIG_DFL && !default_terminates(sig)) {
            *k = *want;
            return 0;
        }
        k->sa_sigaction = trampoline;
        sigemptyset(&k->sa_mask);
        k->sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
        return 1;
    }
    k->sa_sigaction = trampoline;
    k->sa_mask = want->sa_mask;
    k->sa_flags = (want->sa_flags & ~0x04000000 /* SA_RESTORER */) | SA_SIGINFO;
    return 1;
}

static int is_trampoline(const struct sigaction *k)
{
    return (k->sa_flags & SA_SIGINFO) && k->sa_sigaction == trampoline;
}

static int sc_sigaction_impl(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (sig < 1 || sig >= NSIG_MAX || sig == SIGKILL || sig == SIGSTOP || (sig >= 32 && sig < SIGRTMIN) ||
        sc_vfork_child())
        return SC_REAL(sigaction)(sig, act, old);
    struct sigaction was;
    int raced = 0;
    if (!atomic_load_explicit(&managed, memory_order_acquire)) {
        if (!atomic_load_explicit(&armed, memory_order_relaxed))
            return SC_REAL(sigaction)(sig, act, old);
        if (!act || act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN) {
            /* Before the trampolines, a question, or an action that runs
             * no handler of the program's, goes to the kernel, which holds
             * the program's own actions.  Unless the installation (another
             * thread's) overlapped it: a question that finds a trampoline
             * asks the table (written before the swap); an action set while
             * it ran may have been read by it or may have overwritten its
             * trampoline -- set again through the table below, which also
             * says what the action was before. */
            int r = SC_REAL(sigaction)(sig, act, &was);
            atomic_thread_fence(memory_order_seq_cst);
            raced = r == 0 && (is_trampoline(&was) || (act && atomic_load(&installing)));
            if (!raced) {
                if (r == 0 && old)
                    *old = was;
                return r;
            }
        }
        sc_signals_take(); /* a handler set: through a trampoline from now on */
    }
    sc_enter();
    sc_spin_lock(&sig_lock);
    int r = 0;
    struct sigaction prev = prog[sig];
    if (raced && act && !is_trampoline(&was))
        prev = was; /* the kernel's answer was the program's action before ours */
    if (act) {
        struct sigaction k;
        kernel_action(sig, act, &k);
        r = SC_REAL(sigaction)(sig, &k, NULL);
        if (r == 0)
            prog[sig] = *act;
    }
    if (r == 0 && old)
        *old = prev;
    int err = errno;
    sc_spin_unlock(&sig_lock);
    sc_leave();
    errno = err;
    return r;
}

SC_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    return sc_sigaction_impl(sig, act, old);
}

SC_EXPORT int __sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    return sc_sigaction_impl(sig, act, old);
}

static sighandler_t set_handler(int sig, sighandler_t h, int flags)
{
    struct sigaction a, o;
    memset(&a, 0, sizeof a);
    a.sa_handler = h;
    sigemptyset(&a.sa_mask);
    if (!(flags & SA_NODEFER))
        sigaddset(&a.sa_mask, sig);
    a.sa_flags = flags;
    if (sc_sigaction_impl(sig, &a, &o) < 0)
        return SIG_ERR;
    return o.sa_handler;
}

SC_EXPORT sighandler_t signal(int sig, sighandler_t h) { return set_handler(sig, h, SA_RESTART); }
SC_EXPORT sighandler_t bsd_signal(int sig, sighandler_t h) { return set_handler(sig, h, SA_RESTART); }
SC_EXPORT sighandler_t ssignal(int sig, sighandler_t h) { return set_handler(sig, h, SA_RESTART); }
SC_EXPORT sighandler_t sysv_signal(int sig, sighandler_t h) { return set_handler(sig, h, SA_RESETHAND | SA_NODEFER); }
SC_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t h) { return set_handler(sig, h, SA_RESETHAND | SA_NODEFER); }

SC_EXPORT sighandler_t sigset(int sig, sighandler_t h)
{
    if (h == SIG_HOLD) {
        struct sigaction o;
        sigset_t m, om;
        sigemptyset(&m);
        sigaddset(&m, sig);
        if (sc_sigaction_impl(sig, NULL, &o) < 0 || sigprocmask(SIG_BLOCK, &m, &om) < 0)
            return SIG_ERR;
        return sigismember(&om, sig) ? SIG_HOLD : o.sa_handler;
    }
    sigset_t m, om;
    sigemptyset(&m);
    sigaddset(&m, sig);
    sigprocmask(SIG_UNBLOCK, &m, &om);
    sighandler_t prev = set_handler(sig, h, 0);
    if (prev == SIG_ERR)
        return SIG_ERR;
    return sigismember(&om, sig) ? SIG_HOLD : prev;
}

/* The kernel keeps SIG_IGN across exec and resets caught signals to
 * SIG_DFL; glibc's posix_spawn child (so also system and popen) resets
 * caught ones too.  SIGSEGV and SIGBUS the program ignores are caught by
 * the trampoline (a fault in the runtime's copy of a write's buffer becomes
 * EFAULT), so around an exec or a spawn they are set to SIG_IGN: the new
 * program starts ignoring them, as without the runtime.  after=1 puts the
 * trampolines back (the exec failed, the spawn returned) when no other
 * exec or spawn is under way.  Meanwhile a write with a bad pointer in
 * another thread kills the process instead of failing with EFAULT.  While
 * one is under way, trampolines installed for the first time (by another
 * thread) leave those two at SIG_IGN too (exec_windows). */
static void segv_bus_for_exec(int after)
{
    static const int sigs[] = {SIGSEGV, SIGBUS};
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction k;
        if (prog[sigs[i]].sa_handler != SIG_IGN)
            continue;
        if (after)
            kernel_action(sigs[i], &prog[sigs[i]], &k);
        else
            k = prog[sigs[i]];
        SC_REAL(sigaction)(sigs[i], &k, NULL);
    }
}

void sc_signals_exec(int after)
{
    if (!atomic_load_explicit(&armed, memory_order_relaxed) && !atomic_load_explicit(&managed, memory_order_relaxed))
        return;
    if (sc_vfork_child()) {
        /* Its actions are its own copy; the memory (the table, the count)
         * is the parent's, and an exec that succeeds never comes back. */
        if (atomic_load(&managed))
            segv_bus_for_exec(after);
        return;
    }
    uint64_t all = ~0ULL, mask;
    sc_sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&mask, 8);
    sc_lock_word(&sig_lock);
    exec_windows += after ? -1 : 1;
    if (atomic_load(&managed) && (!after || exec_windows == 0))
        segv_bus_for_exec(after);
    sc_spin_unlock(&sig_lock);
    sc_sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&mask, 0, 8);
}

/* In a fork child: the threads that held sig_lock or had an exec or a
 * spawn under way are not in it. */
void sc_signals_forked(void)
{
    atomic_store(&sig_lock, 0);
    exec_windows = 0;
}

/* The runtime is on in this process (at start): the trampolines are to
 * be installed when first needed. */
void sc_signals_arm(void)
{
    atomic_store(&armed, 1);
    atomic_store_explicit(&sc_first_lock, sc_signals_take, memory_order_release);
}

/* Takes over every signal whose action matters, once: what the kernel
 * holds then is the program's (set through the pass-through above, inherited
 * across exec, or installed behind our back: another library's
 * constructor, a raw system call), and goes in the table.  Called holding
 * no lock of the runtime's.  While it installs, this thread blocks every
 * signal (no handler runs in it while it holds sig_lock) and other threads
 * calling it wait on sig_lock; a signal delivered meanwhile to another
 * thread finds either the program's own action (not swapped yet: nothing
 * is deferred before this returns) or a trampoline whose table entry was
 * written before the swap. */
void sc_signals_take(void)
{
    if (atomic_load_explicit(&managed, memory_order_acquire) || !atomic_load_explicit(&armed, memory_order_relaxed) ||
        sc_vfork_child())
        return; /* a vfork child has its own actions: installing there would leave the parent's alone */
    uint64_t all = ~0ULL, mask;
    sc_sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&mask, 8);
    sc_lock_word(&sig_lock);
    if (!atomic_load(&managed) && atomic_load(&armed)) {
        atomic_store(&installing, 1); /* before the first read: see sc_sigaction_impl */
        for (int sig = 1; sig < NSIG_MAX; sig++) {
            if (sig == SIGKILL || sig == SIGSTOP || (sig >= 32 && sig < SIGRTMIN))
                continue; /* glibc keeps 32 and 33 for itself */
            struct sigaction cur, k;
            if (SC_REAL(sigaction)(sig, NULL, &cur) != 0)
                continue;
            prog[sig] = cur;
            if (exec_windows && (sig == SIGSEGV || sig == SIGBUS) && cur.sa_handler == SIG_IGN)
                continue; /* as sc_signals_exec left it: the new program ignores it */
            if (kernel_action(sig, &cur, &k))
                SC_REAL(sigaction)(sig, &k, NULL);
        }
        atomic_store_explicit(&managed, 1, memory_order_release);
        atomic_store_explicit(&sc_first_lock, NULL, memory_order_release);
    }
    sc_spin_unlock(&sig_lock);
    sc_sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&mask, 0, 8);
}
