/* The guardian: a task that shares the program's memory and fd table but is
 * not one of its threads (clone with CLONE_VM | CLONE_FILES, no
 * CLONE_THREAD).  It does two jobs:
 *
 *  - the time bound: it writes out buffers that have waited longer than
 *    the flush interval, even while the program is blocked or stopped;
 *  - nothing is lost: when the program dies in a way no code of ours runs
 *    (SIGKILL, a fault on an exhausted stack, ...), the fd table and the
 *    buffers live on in the guardian, which completes the pending writes
 *    and then exits.
 *
 * It has no real thread-local storage and no libc thread of its own, so it
 * uses raw system calls only and calls nothing in libc but memcpy.  Being a
 * separate process, it changes neither getpid(), nor the thread count, nor
 * what fork() copies.  See docs/RUNTIME.md. */
#include "rt.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define G_STACK (256 * 1024)

/* The guardian's "thread pointer" block: TLS offsets of this library (and
 * the stack protector's canary at %fs:0x28) land inside it. */
static char g_tls[32768] __attribute__((aligned(4096)));

struct k_sigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    uint64_t mask;
};

static void g_on_signal(int sig)
{
    (void)sig;
    atomic_fetch_add(&G.g_wake, 1);
}

static void g_say(const char *s)
{
    sc_sys3(SYS_write, 2, (long)s, (long)strlen(s));
}

/* The program is dead: complete what it acknowledged.  Nothing else runs
 * on these slots now, whatever their locks say. */
static void postmortem(void)
{
    for (unsigned i = 0; i < SC_NSLOTS; i++) {
        struct sc_slot *s = &G.slots[i];
        if (s->fd >= 0 && s->vpos_set) {
            /* The offset the program's reads left: others sharing the file
             * description see it, as they would have. */
            sc_sys3(SYS_lseek, s->fd, s->vpos, SEEK_SET);
            s->vpos_set = 0;
        }
        if (s->fd < 0 || s->len == 0)
            continue;
        size_t done = 0;
        int bad = 0;
        if (atomic_load(&s->flushing)) {
            /* Killed inside a flush: the kernel may have written part. */
            if (s->append) {
                struct stat st;
                if (sc_sys2(SYS_fstat, s->fd, (long)&st) == 0 && st.st_size >= s->flush_pos)
                    done = (size_t)(st.st_size - s->flush_pos) < s->len ? (size_t)(st.st_size - s->flush_pos) : s->len;
            } else {
                /* Rewriting the same bytes at the same place is harmless. */
                while (done < s->len) {
                    long r = sc_sys4(SYS_pwrite64, s->fd, (long)(s->buf + done), (long)(s->len - done),
                                     s->flush_pos + (long)done);
                    if (r <= 0 && r != -EINTR) {
                        bad = 1;
                        break;
                    }
                    if (r > 0)
                        done += (size_t)r;
                }
                long cur = sc_sys3(SYS_lseek, s->fd, 0, SEEK_CUR);
                if (cur >= 0 && cur < s->flush_pos + (long)done)
                    sc_sys3(SYS_lseek, s->fd, s->flush_pos + (long)done, SEEK_SET);
                done = s->len;
            }
        }
        while (!bad && done < s->len) {
            long r = sc_sys3(SYS_write, s->fd, (long)(s->buf + done), (long)(s->len - done));
            if (r > 0)
                done += (size_t)r;
            else if (r != -EINTR)
                bad = 1;
        }
        if (bad)
            g_say("syscluster: the program died; completing its deferred writes failed, bytes were lost\n");
        s->len = 0;
    }
    atomic_store(&G.pending, 0);
}

static void tick(uint32_t *last, uint64_t *seen)
{
    uint64_t m = atomic_load(&G.pending);
    for (unsigned i = 0; i < SC_NSLOTS; i++) {
        struct sc_slot *s = &G.slots[i];
        uint32_t c = atomic_load(&s->cycle);
        if ((m & (1ULL << i)) && (*seen & (1ULL << i)) && last[i] == c && sc_slot_trylock(s)) {
            if (atomic_load(&s->cycle) == c && s->fd >= 0)
                sc_flush_locked(s);
            sc_slot_unlock(s);
        }
        last[i] = c;
        if (m & (1ULL << i))
            *seen |= 1ULL << i;
        else
            *seen &= ~(1ULL << i);
    }
}

static int guardian_main(void *arg)
{
    (void)arg;
    /* Our own dispositions (this task does not share the program's). */
    for (int sig = 1; sig <= 64; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP)
            continue;
        struct k_sigaction ka = {sig == SIGUSR1 ? (void *)g_on_signal : (void *)SIG_IGN, 0x04000000 /* SA_RESTORER */,
                                 (void *)sc_restorer, 0};
        sc_sys4(SYS_rt_sigaction, sig, (long)&ka, 0, 8);
    }
    sc_sys2(SYS_prctl, PR_SET_PDEATHSIG, SIGUSR1);
    sc_sys2(SYS_prctl, PR_SET_NAME, (long)"syscluster-grd");
    sc_sys0(SYS_setsid); /* out of the program's process group and its signals */
    uint64_t unblock = 1ULL << (SIGUSR1 - 1);
    sc_sys4(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&unblock, 0, 8);

    uint32_t last[SC_NSLOTS] = {0};
    uint64_t seen = 0;
    long half = (long)G.flush_ms * 1000000L / 2;
    for (;;) {
        if (atomic_load(&G.g_quit))
            break;
        if (sc_sys0(SYS_getppid) != G.pid) {
            postmortem();
            break;
        }
        int w = atomic_load(&G.g_wake);
        if (!atomic_load(&G.pending)) {
            atomic_store(&G.g_idle, 1);
            if (!atomic_load(&G.pending) && !atomic_load(&G.g_quit))
                sc_futex_wait(&G.g_wake, w, NULL);
            atomic_store(&G.g_idle, 0);
            continue;
        }
        struct sc_timespec ts = {half / 1000000000L, half % 1000000000L};
        sc_futex_wait(&G.g_wake, w, &ts);
        struct sc_timespec now;
        if (sc_sys2(SYS_clock_gettime, CLOCK_MONOTONIC_COARSE, (long)&now) == 0)
            atomic_store(&G.g_beat, now.tv_sec * 1000L + now.tv_nsec / 1000000L);
        tick(last, &seen);
    }
    return 0;
}

int sc_guardian_start(void)
{
    if (G.testing_no_guardian) {
        atomic_store(&G.g_state, 1);
        return 0;
    }
    int rc = 0;
    sc_enter();
    sc_spin_lock(&G.g_lock);
    if (atomic_load(&G.g_state) == 1)
        goto out;
    if (atomic_load(&G.g_state) == 2) {
        rc = -1;
        goto out;
    }
    char *stack = (char *)sc_sys6(SYS_mmap, 0, G_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                                  -1, 0);
    if ((long)stack < 0 && (long)stack > -4096) {
        atomic_store(&G.g_state, 2);
        rc = -1;
        goto out;
    }
    char *tp = g_tls + sizeof g_tls / 2;
    ((void **)tp)[0] = tp; /* tcb->tcb */
    ((void **)tp)[2] = tp; /* tcb->self */
    uint64_t canary;
    __asm__("movq %%fs:0x28, %0" : "=r"(canary));
    *(uint64_t *)(tp + 0x28) = canary;
    atomic_store(&G.g_quit, 0);
    atomic_store(&G.g_idle, 0);
    /* It starts with every signal blocked, so that no handler of the
     * program's ever runs in it. */
    uint64_t all = ~0ULL, old;
    sc_sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8);
    int pid = SC_REAL(clone)(guardian_main, stack + G_STACK - 64, CLONE_VM | CLONE_FILES | CLONE_SETTLS | CLONE_UNTRACED,
                             NULL, NULL, tp, NULL);
    int err = errno;
    sc_sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8);
    if (pid < 0) {
        sc_sys2(SYS_munmap, (long)stack, G_STACK);
        atomic_store(&G.g_state, 2);
        sc_spin_unlock(&G.g_lock);
        sc_report("unchanged", "cannot start the guardian task (%s): writes are not deferred", strerror(err));
        sc_leave();
        return -1;
    }
    G.g_pid = pid;
    atomic_store(&G.g_state, 1);
out:
    sc_spin_unlock(&G.g_lock);
    sc_leave();
    return rc;
}

/* Asks the guardian to exit and reaps it (before exec, at exit, when the
 * fd table or the limits it runs under change).  Nothing may be pending. */
void sc_guardian_stop(void)
{
    if (atomic_load(&G.g_state) != 1 || G.testing_no_guardian) {
        if (G.testing_no_guardian)
            atomic_store(&G.g_state, 0);
        return;
    }
    sc_enter();
    sc_spin_lock(&G.g_lock);
    if (atomic_load(&G.g_state) == 1 && G.g_pid > 0) {
        atomic_store(&G.g_quit, 1);
        atomic_fetch_add(&G.g_wake, 1);
        sc_futex_wake(&G.g_wake, 1);
        int st;
        long r;
        do
            r = sc_sys4(SYS_wait4, G.g_pid, (long)&st, __WCLONE, 0);
        while (r == -EINTR);
        G.g_pid = 0;
        atomic_store(&G.g_state, 0);
    }
    sc_spin_unlock(&G.g_lock);
    sc_leave();
}

/* In a fork child: the guardian belongs to the parent. */
void sc_guardian_forget(void)
{
    G.g_pid = 0;
    atomic_store(&G.g_state, 0);
    atomic_store(&G.g_idle, 0);
    atomic_store(&G.g_quit, 0);
}

/* The guardian died (someone killed it alone): reap it and say so; the
 * caller starts a new one.  Returns 1. */
int sc_guardian_lost(void)
{
    sc_enter();
    sc_spin_lock(&G.g_lock);
    if (atomic_load(&G.g_state) == 1 && G.g_pid > 0) {
        int st;
        sc_sys4(SYS_wait4, G.g_pid, (long)&st, __WCLONE | WNOHANG, 0);
        G.g_pid = 0;
        atomic_store(&G.g_state, 0);
    }
    sc_spin_unlock(&G.g_lock);
    sc_leave();
    return 1;
}
