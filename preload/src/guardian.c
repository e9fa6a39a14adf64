/* The guardian: a process that shares the program's fd table (CLONE_FILES)
 * and one MAP_SHARED region with it -- the slot headers, the buffers and a
 * few control words (struct sc_shared) -- and nothing else: it has its own
 * copy of the address space (without the program's anonymous memory:
 * g_nocopy_mark), from which it unmaps all but this library and the
 * region.  It starts at the process's first deferral.  It does two jobs:
 *
 *  - the time bound: it writes out each buffer before its first
 *    acknowledged byte is one flush interval old, even while the program is
 *    blocked or stopped;
 *  - nothing is lost: when the program dies in a way no code of ours runs
 *    (SIGKILL, a fault on an exhausted stack, ...), the fd table and the
 *    region live on in the guardian, which completes the pending writes and
 *    then exits.
 *
 * It never holds more than the right to write the pending bytes to the
 * program's own descriptors: right after it starts it makes itself
 * undumpable (no ptrace, no /proc/PID/mem), drops every capability, sets
 * no_new_privs and installs a seccomp filter that kills it on any call but
 * the few it needs.  Whatever the program later gives up (chroot, capabilities,
 * its own seccomp filter), the guardian has less.  Everything it reads from
 * the region is untrusted input: header fields are copied into locals and
 * checked (fd range, len <= cap), and a slot's buffer is always its own
 * computation (bufs + i * cap, from its private copy of the state taken at
 * clone time), never a pointer read from shared memory.
 *
 * It has no libc of its own (libc is unmapped): raw system calls only, and
 * no call to any function outside this library.  See docs/RUNTIME.md. */
#include "rt.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define G_STACK (128 * 1024)
#define G_FDMAX (1 << 20) /* the largest fd table the runtime tracks */

/* The guardian's stack and "thread pointer" block live in this library's
 * .bss, which is all of the program's memory it keeps.  TLS offsets of this
 * library and the stack protector's canary (%fs:0x28) land inside g_tls. */
static char g_stack[G_STACK] SC_APART __attribute__((aligned(4096)));
static char g_tls[32768] SC_APART __attribute__((aligned(4096)));

struct k_sigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    uint64_t mask;
};

static void g_on_signal(int sig)
{
    (void)sig;
    atomic_fetch_add(&G.sh->wake, 1);
}

static void g_say(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    sc_sys3(SYS_write, 2, (long)s, (long)n);
}

static int64_t g_now(void)
{
    struct sc_timespec t;
    if (sc_sys2(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&t) != 0)
        return 0;
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* Writes buf[0..n) at the description's current offset; 0 or -errno,
 * with the bytes written in *done. */
static long g_write_all(int fd, const char *buf, size_t n, size_t *done)
{
    *done = 0;
    while (*done < n) {
        long r = sc_sys3(SYS_write, fd, (long)(buf + *done), (long)(n - *done));
        if (r > 0)
            *done += (size_t)r;
        else if (r != -EINTR)
            return r == 0 ? -EIO : r;
    }
    return 0;
}

/* Writes out slot i.  The slot lock is held, or the program is dead.
 * Every field is read once and checked: the program may have scribbled on
 * the region. */
static void g_flush(unsigned i, int dead)
{
    struct sc_slot *s = &G.sh->slots[i];
    int fd = s->fd;
    size_t len = s->len;
    int vset = s->vpos_set;
    int64_t vpos = s->vpos;
    if (fd < 0 || fd >= G_FDMAX || len > G.cap) {
        s->len = 0;
        s->vpos_set = 0;
        return;
    }
    const char *buf = G.bufs + (size_t)i * G.cap;
    if (vset) {
        /* The offset the program's reads left: others sharing the file
         * description see it, as they would have. */
        sc_sys3(SYS_lseek, fd, vpos, SEEK_SET);
        s->vpos_set = 0;
    }
    size_t from = 0;
    if (dead && atomic_load(&s->flushing)) {
        /* Killed inside a flush.  flush_done bytes are known to be in the
         * kernel.  A flush we made for it (flushing 2: flush.c, sc_delegate)
         * is exact: none of our calls was cut short.  A flush it made
         * itself (flushing 1) is one it alone could have moved the
         * offset of -- a description it opened, not O_APPEND, no other
         * process holding it (flush.c, sc_alone_moves_offset) -- so one write
         * call of the rest may have been in flight, and it wrote what
         * moved the offset past call_pos.  Nothing is ever written at a
         * recorded position: the rest goes to the current offset. */
        size_t done = atomic_load(&s->flush_done);
        int64_t cpos = atomic_load(&s->call_pos), csize = atomic_load(&s->call_size);
        if (done > len)
            done = len;
        int64_t cur = atomic_load(&s->flushing) == 2 ? cpos : sc_sys3(SYS_lseek, fd, 0, SEEK_CUR);
        int64_t k = 0;
        if (cur >= 0 && cur != cpos)
            k = cur - (s->append ? csize : cpos);
        if (k < 0)
            k = 0;
        if ((uint64_t)k > len - done)
            k = (int64_t)(len - done);
        from = done + (size_t)k;
    }
    if (from < len) {
        size_t wrote;
        long r = g_write_all(fd, buf + from, len - from, &wrote);
        if (r < 0) {
            atomic_store(&s->gerr, (int)-r);
            if (dead) {
                g_say("syscluster: the program died; completing its deferred writes failed, bytes were lost\n");
            } else {
                /* The program lives: the bytes not written stay, for the
                 * program to report the error and retry them (flush.c,
                 * keep); the guardian leaves the slot until it has. */
                size_t rest = len - from - wrote;
                /* By hand: libc's memmove is not mapped here, and a
                 * volatile copy is not turned back into a call to it. */
                volatile char *d = (volatile char *)buf;
                const volatile char *o = buf + from + wrote;
                for (size_t k = 0; k < rest; k++)
                    d[k] = o[k];
                s->len = rest;
                atomic_store(&s->flushing, 0);
                return;
            }
        }
    }
    s->n_flushes++;
    s->len = 0;
    atomic_store(&s->flushing, 0);
}

/* Makes the flushes the program asked for (flush.c, sc_delegate), the
 * program's thread waiting with the slot lock held: writes slot i from
 * flush_done on, keeping flush_done exact after every call (no write of
 * ours is ever cut short by the program's death), then answers. */
static void serve(void)
{
    for (unsigned i = 0; i < SC_NSLOTS; i++) {
        int asked = 1;
        if (atomic_load(&G.sh->ask[i]) != 1 || !atomic_compare_exchange_strong(&G.sh->ask[i], &asked, 2))
            continue;
        struct sc_slot *s = &G.sh->slots[i];
        int fd = s->fd, err = 0;
        size_t len = s->len, done = atomic_load(&s->flush_done);
        if (fd < 0 || fd >= G_FDMAX || len > G.cap || done > len) {
            err = EINVAL;
        } else {
            const char *buf = G.bufs + (size_t)i * G.cap;
            while (done < len) {
                long r = sc_sys3(SYS_write, fd, (long)(buf + done), (long)(len - done));
                if (r > 0) {
                    done += (size_t)r;
                    atomic_store(&s->flush_done, done);
                } else if (r != -EINTR) {
                    err = r == 0 ? EIO : (int)-r;
                    break;
                }
            }
        }
        atomic_store(&G.sh->ask_err[i], err);
        atomic_store(&G.sh->ask[i], 3);
        sc_futex_wake_shared(&G.sh->ask[i], 1);
    }
}

/* The program is dead: complete what it acknowledged.  Nothing else runs
 * on these slots now, whatever their locks say. */
static void postmortem(void)
{
    serve(); /* a flush it asked for and never saw made is still its */
    for (unsigned i = 0; i < SC_NSLOTS; i++)
        g_flush(i, 1);
}

/* Writes out every slot whose first byte is due (the interval minus the
 * margin); returns when to look again (ns, 0: nothing pending). */
static int64_t tick(int64_t interval, int64_t margin)
{
    int64_t now = g_now(), next = 0;
    for (unsigned i = 0; i < SC_NSLOTS; i++) {
        struct sc_slot *s = &G.sh->slots[i];
        if ((s->len == 0 && !s->vpos_set) || atomic_load(&s->gerr))
            continue; /* nothing, or bytes kept after an error the program has yet to see */
        int64_t first = atomic_load(&s->first_ns);
        int64_t due = first + interval - margin;
        if (first <= 0 || first > now)
            due = now; /* not a time we can trust: now */
        if (due <= now) {
            if (sc_slot_trylock(s)) {
                g_flush(i, 0);
                sc_slot_unlock(s);
                continue;
            }
            due = now + 100000; /* a program thread holds it: soon again */
        }
        if (!next || due < next)
            next = due;
    }
    return next;
}

/* The seccomp filter: x86-64 calls only, and only these. */
static int g_sandbox(void)
{
#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
    /* static: a local array would be filled by a memcpy call into libc, which is gone */
    static const struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        ALLOW(SYS_write),
        ALLOW(SYS_lseek),
        ALLOW(SYS_futex),
        ALLOW(SYS_membarrier), /* taking a biased slot (state.c, sc_slot_trylock) */
        ALLOW(SYS_clock_gettime),
        ALLOW(SYS_getppid),
        ALLOW(SYS_rt_sigreturn),
        ALLOW(SYS_rt_sigprocmask),
        ALLOW(SYS_restart_syscall),
        ALLOW(SYS_exit),
        ALLOW(SYS_exit_group),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
#undef ALLOW
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), (struct sock_filter *)f};
    /* Undumpable first: a same-uid program can neither ptrace us nor open
     * our /proc/PID/mem from here on. */
    if (sc_sys2(SYS_prctl, PR_SET_DUMPABLE, 0) != 0)
        return -1;
    for (long cap = 0; cap < 64; cap++)
        sc_sys2(SYS_prctl, PR_CAPBSET_DROP, cap); /* EPERM without CAP_SETPCAP: then there is nothing to drop */
    sc_sys5(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    for (int j = 0; j < 2; j++)
        d[j].effective = d[j].permitted = d[j].inheritable = 0;
    if (sc_sys2(SYS_capset, (long)&h, (long)d) != 0)
        return -1;
    if (sc_sys5(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    if (sc_sys3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, (long)&prog) != 0)
        return -1;
    return 0;
}

/* What the guardian keeps of the program's memory: this library (its code,
 * its state, the guardian's stack) and the region.  Found before the clone. */
static uintptr_t keep_lo, keep_hi;
/* The rseq area glibc registered for the thread that starts the guardian. */
static void *g_rseq_addr;
static unsigned g_rseq_len;
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t me = (uintptr_t)arg, lo = UINTPTR_MAX, hi = 0;
    for (int j = 0; j < info->dlpi_phnum; j++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[j];
        if (p->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + p->p_vaddr, b = a + p->p_memsz;
        if (a < lo)
            lo = a;
        if (b > hi)
            hi = b;
    }
    if (me < lo || me >= hi)
        return 0;
    keep_lo = lo & ~(uintptr_t)4095;
    keep_hi = (hi + 4095) & ~(uintptr_t)4095;
    return 1;
}

/* Unmaps everything but [a0, a1) and [b0, b1): the program's heap, stacks
 * and mappings.  Besides taking them out of reach, this spares the program
 * the copy-on-write copies of every page it writes after the clone. */
static void g_unmap_rest(uintptr_t a0, uintptr_t a1, uintptr_t b0, uintptr_t b1)
{
    if (b0 < a0) {
        uintptr_t t0 = a0, t1 = a1;
        a0 = b0, a1 = b1, b0 = t0, b1 = t1;
    }
    uintptr_t top = (uintptr_t)1 << 56; /* 5-level paging, else 47 bits */
    if (sc_sys2(SYS_munmap, (long)b1, (long)(top - 4096 - b1)) != 0)
        sc_sys2(SYS_munmap, (long)b1, (long)(((uintptr_t)1 << 47) - 4096 - b1));
    if (b0 > a1)
        sc_sys2(SYS_munmap, (long)a1, (long)(b0 - a1));
    if (a0 > 4096)
        sc_sys2(SYS_munmap, 4096, (long)(a0 - 4096));
}

/* The guardian runs for microseconds per wake-up, and must run when its
 * timer fires even on a machine whose CPUs are busy.  With the right to
 * (CAP_SYS_NICE, or an RLIMIT_RTPRIO of at least 1) it takes SCHED_FIFO
 * at the lowest real-time priority; otherwise it asks for the scheduler's
 * shortest slice (Linux 6.12+, no privilege needed; earlier kernels
 * refuse it), with which its wake-up preempts a busy task sooner.  On this
 * 2-CPU machine at load average 14, the 99th percentile of isolated
 * records was 2.7-5 ms with SCHED_FIFO and 170 ms with the short slice alone
 * (docs/BENCHMARKS.md, "Runtime time bound and guardian start"). */
static void g_sched(void)
{
    struct {
        uint32_t size, policy;
        uint64_t flags;
        int32_t nice;
        uint32_t prio;
        uint64_t runtime, deadline, period;
        uint32_t util_min, util_max;
    } a;
    volatile char *z = (volatile char *)&a; /* by hand: no memset here */
    for (size_t k = 0; k < sizeof a; k++)
        z[k] = 0;
    if (sc_sys4(SYS_sched_getattr, 0, (long)&a, sizeof a, 0) != 0 || a.policy != 0 /* SCHED_OTHER */)
        return;
    a.size = sizeof a;
    a.flags = 1; /* SCHED_FLAG_RESET_ON_FORK (it never forks; belt and braces) */
    a.policy = 1; /* SCHED_FIFO */
    a.prio = 1;
    a.nice = 0;
    if (sc_sys3(SYS_sched_setattr, 0, (long)&a, 0) == 0)
        return;
    sc_sys4(SYS_sched_getattr, 0, (long)&a, sizeof a, 0);
    a.size = sizeof a;
    a.flags = 0;
    a.runtime = 100000; /* ns: the shortest slice the kernel takes */
    sc_sys3(SYS_sched_setattr, 0, (long)&a, 0);
}

/* Ends the guardian.  Not by returning: that goes back into libc's clone,
 * which is unmapped here -- every guardian used to end by SIGSEGV (a
 * "segfault" line in the kernel log per process). */
static __attribute__((noreturn)) void g_exit(int code)
{
    for (;;)
        sc_sys1(SYS_exit, code);
}

static int guardian_main(void *arg)
{
    (void)arg;
    struct sc_shared *sh = G.sh;
    G.g_pid = (int)sc_getpid(); /* our private copy: marks the locks we hold (sc_slot_trylock) */
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
    sc_sys2(SYS_prctl, PR_SET_TIMERSLACK, 1); /* wake at the deadline, not 50 us after */
    g_sched();
    sc_sys0(SYS_setsid); /* out of the program's process group and its signals */
    /* The kernel writes a thread's rseq area (glibc's, in the program's
     * thread block, about to go) at every preemption: unregister it. */
    if (g_rseq_addr && sc_sys4(SYS_rseq, (long)g_rseq_addr, 32, 1 /* RSEQ_FLAG_UNREGISTER */, 0x53053053) != 0)
        sc_sys4(SYS_rseq, (long)g_rseq_addr, (long)g_rseq_len, 1, 0x53053053);
    g_unmap_rest(keep_lo, keep_hi, (uintptr_t)sh, (uintptr_t)sh + G.sh_len);
    if (g_sandbox() != 0) {
        atomic_store(&sh->ready, 2);
        sc_futex_wake_shared(&sh->ready, 1);
        g_exit(1);
    }
    /* Slots are biased only if we can take them back (coalesce.c, fast_write). */
    atomic_store(&sh->barrier, sc_barrier_all() == 0 ? 1 : 0);
    atomic_store(&sh->ready, 1);
    sc_futex_wake_shared(&sh->ready, 1);
    uint64_t unblock = 1ULL << (SIGUSR1 - 1);
    sc_sys4(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&unblock, 0, 8);

    /* Each buffer is due half an interval after its first byte: the other
     * half is the margin for what the deadline cannot control -- this task
     * waiting for a CPU after its timer fires, and the write itself.  On a
     * loaded machine a quarter (1.25 ms of 5) was not enough: the 99th
     * percentile was 7.5 ms (docs/BENCHMARKS.md, "Runtime time bound and
     * guardian start"). */
    int64_t interval = (int64_t)G.flush_ms * 1000000;
    int64_t margin = interval / 2;
    for (;;) {
        if (atomic_load(&sh->quit))
            break;
        if (sc_sys0(SYS_getppid) != G.pid) {
            postmortem();
            break;
        }
        int w = atomic_load(&sh->wake);
        serve(); /* after reading wake: an ask made since wakes us */
        struct sc_timespec now;
        if (sc_sys2(SYS_clock_gettime, CLOCK_MONOTONIC_COARSE, (long)&now) == 0)
            atomic_store(&sh->beat, now.tv_sec * 1000L + now.tv_nsec / 1000000L);
        int64_t next = tick(interval, margin);
        if (!next) {
            atomic_store(&sh->idle, 1);
            /* Anything committed before idle was set is seen by this scan;
             * anything after wakes us. */
            next = tick(interval, margin);
            if (!next && !atomic_load(&sh->quit))
                sc_futex_wait_shared(&sh->wake, w, NULL);
            atomic_store(&sh->idle, 0);
            continue;
        }
        if (next > g_now()) {
            /* An absolute deadline: time spent between reading the clock
             * and sleeping (preempted) is not added to it. */
            struct sc_timespec ts = {next / 1000000000L, next % 1000000000L};
            sc_sys6(SYS_futex, (long)&sh->wake, 9 /* FUTEX_WAIT_BITSET */, w, (long)&ts, 0, -1 /* any bit */);
        }
    }
    g_exit(0);
}

int64_t sc_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* Maps a region and moves the slots `from` into it (their headers; the
 * buffers are the region's), with their bytes when `bytes`; from NULL:
 * free slots.  Nothing may be pending in the slots it copies. */
static struct sc_shared *region_new(const struct sc_slot *from, int bytes)
{
    size_t head = (sizeof(struct sc_shared) + 4095) & ~(size_t)4095;
    size_t len = head + SC_NSLOTS * G.cap;
    void *m = (void *)sc_sys6(SYS_mmap, 0, (long)len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
                              -1, 0);
    if ((long)m < 0 && (long)m > -4096)
        return NULL;
    struct sc_shared *sh = m;
    char *bufs = (char *)m + head;
    for (unsigned i = 0; i < SC_NSLOTS; i++) {
        struct sc_slot *s = &sh->slots[i];
        const struct sc_slot *o = from ? &from[i] : NULL;
        if (o) {
            memcpy(s, o, sizeof *s);
        } else {
            memset(s, 0, sizeof *s); /* the mapping is zeroes already: this says so */
            s->fd = -1;
        }
        atomic_store(&s->lock, 0);
        atomic_store(&s->owner, 0);
        atomic_store(&s->bias, 0); /* a fork child's thread has the address of the parent's */
        atomic_store(&s->busy, 0);
        atomic_store(&s->busy_waiter, 0);
        s->buf = bufs + (size_t)i * G.cap;
        s->cap = G.cap;
        if (!bytes || !o)
            s->len = 0;
        else if (o->len && o->buf)
            memcpy(s->buf, o->buf, o->len);
    }
    G.bufs = bufs;
    G.sh_len = len;
    return sh;
}

/* The region, made when the guardian starts, at the first deferral (a
 * process that never defers maps nothing).  0 or -1. */
int sc_region_create(void)
{
    if (__atomic_load_n(&G.sh, __ATOMIC_ACQUIRE))
        return 0;
    sc_enter();
    sc_spin_lock(&G.bind_lock);
    if (!G.sh) {
        /* The fast path's barrier (state.c), registered for before any slot
         * can be biased -- here rather than at start: a process that defers
         * nothing does not pay for it.  A fork child keeps the
         * registration. */
        if (!sc_fast_ok)
            sc_fast_register();
        struct sc_shared *sh = region_new(G.slots, 1);
        if (sh) {
            G.slots = sh->slots;
            __atomic_store_n(&G.sh, sh, __ATOMIC_RELEASE);
        }
    }
    sc_spin_unlock(&G.bind_lock);
    sc_leave();
    return G.sh ? 0 : -1;
}

/* The slot headers as they were at a fork, taken by the parent while it
 * holds every slot lock, every slot written out (sc_region_fork_snapshot,
 * from process.c's fork preparation).  After the fork the parent and its
 * guardian go on with the region, which is shared memory -- in the child's
 * mapping too, until the child replaces it.  So the child must neither
 * read the slots there (a buffer the parent started since would be copied
 * into the child's region and written out again by the child: the parent's
 * records twice in the file) nor write them (resetting the locks it
 * inherited held would free the parent's: the guardian's timed flush would
 * then write out a buffer the parent was writing out).  This copy is in
 * private memory: in the child it is the slots at the fork. */
static struct sc_slot fork_slots[SC_NSLOTS] SC_APART;
static struct sc_shared *fork_sh; /* the region fork_slots were taken from */

/* Before a fork, every slot lock and bind_lock held (no region can appear). */
void sc_region_fork_snapshot(void)
{
    fork_sh = G.sh;
    if (fork_sh)
        memcpy(fork_slots, fork_sh->slots, sizeof fork_slots);
}

/* In a fork child: the region is the parent's and its guardian's.  The
 * child gets its own, built from the slots at the fork (fork_slots: every
 * one written out, bytes held after a failed flush left to the parent), so
 * that parent and child never share a slot. */
void sc_region_forked(void)
{
    struct sc_shared *old = G.sh;
    if (!old)
        return;
    size_t old_len = G.sh_len;
    struct sc_shared *sh = old == fork_sh ? region_new(fork_slots, 0) : NULL;
    if (!sh) {
        static struct sc_slot lone[SC_NSLOTS] SC_APART;
        for (unsigned i = 0; i < SC_NSLOTS; i++)
            lone[i].fd = -1;
        G.slots = lone;
        G.sh = NULL;
        atomic_store(&G.mode, SC_PASS);
    } else {
        G.slots = sh->slots;
        G.sh = sh;
    }
    sc_sys2(SYS_munmap, (long)old, (long)old_len);
}

/* The program's memory the guardian's clone leaves out.  A clone without
 * CLONE_VM copies the page tables of every private page the program has
 * written and write-protects them all: with 500 MiB touched the clone took
 * 80-150 ms and writing the memory again 270-480 ms of faults
 * (docs/BENCHMARKS.md, "Runtime time bound and guardian start").  The
 * guardian needs none of it (it unmaps all but this library and the region
 * at once), so before the clone every anonymous private writable mapping
 * (the heap, the stacks, anonymous mmaps: where written memory is) is
 * marked MADV_DONTFORK, and MADV_DOFORK again after it -- except one the
 * program marked itself (its madvise calls are noted: sc_madvise_fork), and
 * the one holding the calling thread's rseq area (the kernel writes it in
 * the new task until the guardian unregisters it).  Forks are held off
 * meanwhile: fork() and _Fork() take g_lock, which the caller holds;
 * posix_spawn, vfork and system() share the address space (CLONE_VM) and
 * copy nothing.  The mappings come from /proc/self/maps (~30 us; smaps,
 * which says which are marked, walks every page: 85-240 ms with 500 MiB);
 * if it cannot be read, the clone copies everything, as before. */
#define G_NOCOPY_MAX 256
static struct {
    uintptr_t lo, hi;
} g_nocopy[G_NOCOPY_MAX] SC_APART;
static unsigned g_nocopy_n;

/* The ranges the program marked MADV_DONTFORK (as it asked: a later munmap
 * or mmap over them leaves them here, which only means that memory is
 * copied).  Past G_MARKED_MAX of them, nothing is left out any more. */
#define G_MARKED_MAX 64
static struct {
    uintptr_t lo, hi;
} g_marked[G_MARKED_MAX];
static unsigned g_marked_n;
static int g_marked_lost;
static _Atomic int g_marked_lock;

long sc_madvise_fork(uintptr_t lo, size_t len, int advice)
{
    uintptr_t hi = lo + ((len + 4095) & ~(size_t)4095);
    sc_enter();
    /* Held by a guardian's start from its marking to its unmarking. */
    sc_spin_lock(&g_marked_lock);
    long r = sc_sys3(SYS_madvise, (long)lo, (long)len, advice);
    if (r == 0 && advice == MADV_DOFORK) {
        /* Only a range noted whole is dropped; a part of one stays (copied: safe). */
        for (unsigned i = 0; i < g_marked_n; i++)
            if (g_marked[i].lo >= lo && g_marked[i].hi <= hi)
                g_marked[i--] = g_marked[--g_marked_n];
    } else if (r == 0 && g_marked_n < G_MARKED_MAX) {
        g_marked[g_marked_n].lo = lo;
        g_marked[g_marked_n].hi = hi;
        g_marked_n++;
    } else if (r == 0) {
        g_marked_lost = 1;
    }
    sc_spin_unlock(&g_marked_lock);
    sc_leave();
    return r;
}

static int g_marked_by_program(uintptr_t lo, uintptr_t hi)
{
    for (unsigned i = 0; i < g_marked_n; i++)
        if (g_marked[i].lo < hi && g_marked[i].hi > lo)
            return 1;
    return 0;
}

static uintptr_t g_hex(const char **p)
{
    uintptr_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        if (c >= '0' && c <= '9')
            v = v * 16 + (uintptr_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (uintptr_t)(c - 'a' + 10);
        else
            return v;
    }
}

/* A line of /proc/self/maps: "start-end perms offset dev inode [path]". */
static void g_nocopy_line(const char *p, const char *end, uintptr_t sh_lo, uintptr_t sh_hi, uintptr_t tp)
{
    uintptr_t lo = g_hex(&p);
    if (p >= end || *p != '-')
        return;
    p++;
    uintptr_t hi = g_hex(&p);
    if (end - p < 5 || p[1] != 'r' || p[2] != 'w' || p[4] != 'p')
        return; /* private writable only */
    int field = 0;
    for (; p < end && field < 5; field++) { /* past perms, offset, dev, inode */
        while (p < end && *p == ' ')
            p++;
        if (field < 4)
            while (p < end && *p != ' ')
                p++;
    }
    /* Anonymous: no path, the heap, a stack, a named anonymous mapping. */
    int anon = p == end || (end - p == 6 && !memcmp(p, "[heap]", 6)) || (end - p >= 6 && !memcmp(p, "[stack", 6)) ||
               (end - p >= 6 && !memcmp(p, "[anon:", 6));
    if (!anon || (hi > keep_lo && lo < keep_hi) || (hi > sh_lo && lo < sh_hi) || (tp >= lo && tp < hi) ||
        g_marked_by_program(lo, hi) || g_nocopy_n >= G_NOCOPY_MAX)
        return;
    g_nocopy[g_nocopy_n].lo = lo;
    g_nocopy[g_nocopy_n].hi = hi;
    g_nocopy_n++;
}

/* Marks; g_marked_lock stays held until g_nocopy_undo, so that no
 * madvise of the program's falls in between. */
static void g_nocopy_mark(uintptr_t sh_lo, uintptr_t sh_hi, uintptr_t tp)
{
    g_nocopy_n = 0;
    sc_spin_lock(&g_marked_lock);
    if (g_marked_lost)
        return;
    long fd = sc_sys4(SYS_openat, AT_FDCWD, (long)"/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
    if (fd >= 0) {
        char buf[4096];
        size_t have = 0;
        for (;;) {
            long n = have < sizeof buf ? sc_sys3(SYS_read, fd, (long)(buf + have), (long)(sizeof buf - have)) : 0;
            if (n > 0)
                have += (size_t)n;
            char *nl;
            while ((nl = memchr(buf, '\n', have)) != NULL) {
                g_nocopy_line(buf, nl, sh_lo, sh_hi, tp);
                size_t used = (size_t)(nl + 1 - buf);
                memmove(buf, nl + 1, have - used);
                have -= used;
            }
            if (n <= 0)
                break; /* the end, an error, or a line longer than the buffer: the rest is copied */
        }
        sc_sys1(SYS_close, fd);
    }
    /* Marked after the reading: marking merges and splits mappings. */
    for (unsigned i = 0; i < g_nocopy_n; i++)
        if (sc_sys3(SYS_madvise, (long)g_nocopy[i].lo, (long)(g_nocopy[i].hi - g_nocopy[i].lo), MADV_DONTFORK) != 0)
            g_nocopy[i].hi = g_nocopy[i].lo; /* not marked: nothing to undo */
}

static void g_nocopy_undo(void)
{
    for (unsigned i = 0; i < g_nocopy_n; i++)
        if (g_nocopy[i].hi > g_nocopy[i].lo)
            sc_sys3(SYS_madvise, (long)g_nocopy[i].lo, (long)(g_nocopy[i].hi - g_nocopy[i].lo), MADV_DOFORK);
    g_nocopy_n = 0;
    sc_spin_unlock(&g_marked_lock);
}

int sc_guardian_start(void)
{
    int rc = 0;
#ifdef SC_TEST_NO_GUARDIAN
    /* A test build only (preload/Makefile: build/test/libsyscluster-preload-noguardian.so):
     * the control that shows SIGKILL loses records without a guardian.  The
     * region at the first deferral, as in the library, and no task. */
    if (sc_region_create() != 0) {
        atomic_store(&G.g_state, 2);
        return -1;
    }
    atomic_store(&G.sh->barrier, 1); /* no guardian to take slots: only threads do */
    atomic_store(&G.g_state, 1);
    return rc;
#endif
    if (atomic_load(&G.g_state) != 1 && sc_region_create() != 0) {
        atomic_store(&G.g_state, 2);
        return -1;
    }
    sc_enter();
    sc_spin_lock(&G.g_lock);
    if (atomic_load(&G.g_state) == 1)
        goto out;
    if (atomic_load(&G.g_state) == 2) {
        rc = -1;
        goto out;
    }
    if (G.pid == 1) {
        /* PID 1 of a PID namespace: its death kills every process in the
         * namespace, the guardian with it.  Nothing is deferred here. */
        atomic_store(&G.g_state, 2);
        sc_spin_unlock(&G.g_lock);
        sc_report("unchanged", "PID 1 of a PID namespace: writes are not deferred (its guardian would die with it)");
        sc_leave();
        return -1;
    }
    if (!keep_hi)
        dl_iterate_phdr(find_self, (void *)&sc_g);
    struct sc_shared *sh = G.sh;
    g_rseq_addr = &__rseq_size && __rseq_size ? (char *)__builtin_thread_pointer() + __rseq_offset : NULL;
    g_rseq_len = &__rseq_size ? __rseq_size : 0;
    char *tp = g_tls + sizeof g_tls / 2;
    ((void **)tp)[0] = tp; /* tcb->tcb */
    ((void **)tp)[2] = tp; /* tcb->self */
    uint64_t canary;
    __asm__("movq %%fs:0x28, %0" : "=r"(canary));
    *(uint64_t *)(tp + 0x28) = canary;
    atomic_store(&sh->quit, 0);
    atomic_store(&sh->idle, 0);
    atomic_store(&sh->ready, 0);
    /* It starts with every signal blocked, so that no handler of the
     * program's ever runs in it.  No CLONE_VM: its own copy of the address
     * space; CLONE_FILES: the program's fd table, with no new reference to
     * any open file. */
    uint64_t all = ~0ULL, old;
    sc_sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8);
    if (keep_hi)
        g_nocopy_mark((uintptr_t)sh, (uintptr_t)sh + G.sh_len, (uintptr_t)g_rseq_addr);
    int pid = keep_hi ? SC_REAL(clone)(guardian_main, g_stack + G_STACK - 64, CLONE_FILES | CLONE_SETTLS | CLONE_UNTRACED,
                                       NULL, NULL, tp, NULL)
                      : -1;
    int err = keep_hi ? errno : ENOENT;
    if (keep_hi)
        g_nocopy_undo();
    sc_sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8);
    const char *why = NULL;
    if (pid > 0) {
        /* Deferring without a guardian that holds no more than it should
         * would be worse than not deferring: wait until it is sandboxed. */
        int st;
        while (atomic_load(&sh->ready) == 0) {
            struct sc_timespec ts = {0, 10 * 1000 * 1000};
            sc_futex_wait_shared(&sh->ready, 0, &ts);
            if (atomic_load(&sh->ready) == 0 && sc_sys4(SYS_wait4, pid, (long)&st, __WCLONE | WNOHANG, 0) == pid) {
                pid = -2;
                break;
            }
        }
        if (pid > 0 && atomic_load(&sh->ready) != 1) {
            sc_sys4(SYS_wait4, pid, (long)&st, __WCLONE, 0);
            pid = -2;
        }
        if (pid == -2)
            why = "cannot sandbox the guardian task (capabilities, no_new_privs or seccomp refused)";
    }
    if (pid < 0) {
        atomic_store(&G.g_state, 2);
        sc_spin_unlock(&G.g_lock);
        if (why)
            sc_report("unchanged", "%s: writes are not deferred", why);
        else
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
    if (atomic_load(&G.g_state) != 1)
        return;
    sc_enter();
    sc_spin_lock(&G.g_lock);
    if (atomic_load(&G.g_state) == 1 && G.g_pid > 0) {
        atomic_store(&G.sh->quit, 1);
        atomic_fetch_add(&G.sh->wake, 1);
        sc_futex_wake_shared(&G.sh->wake, 1);
        sc_sys2(SYS_kill, G.g_pid, SIGCONT); /* stopped by someone: it must run to exit */
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

/* In a fork child: the guardian and the region belong to the parent. */
void sc_guardian_forget(void)
{
    G.g_pid = 0;
    atomic_store(&G.g_state, 0);
    sc_region_forked();
#ifdef SC_TEST_NO_GUARDIAN
    /* The test build without a guardian has none in a fork child either
     * (as sc_init: a region, no task). */
    if (G.sh)
        atomic_store(&G.g_state, 1);
#endif
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
