/* Plans: the clusters `syscluster run --plan` applies at code locations
 * (docs/RUNTIME.md, "Plans").  The supervisor checks the plan and passes
 * the sites to apply in $SYSCLUSTER_PLAN (the plan line format, read by
 * plan_line.c; docs/PLAN_FORMAT.md);
 * here each site -- (module, file offset of a return address) -- becomes an
 * absolute return address, at start and whenever code is loaded or
 * unloaded, and the wrappers look their caller up in the sorted table.
 *
 * What is applied at a site, by kind:
 *   write  short writes deferred with the coalescing machinery (coalesce.c);
 *   clock  gettimeofday/clock_gettime/time made through syscall() answered
 *          by the vDSO, when every pointer is known to be writable;
 *   pid    getpid answered from the pid the runtime keeps per process;
 *   tid    gettid answered from a per-thread cache;
 *   seek   lseek(SEEK_SET) on a regular file kept as a pending offset
 *          (offsets.c), which a planned read then uses with pread. */
#include "rt.h"
#include "sys.h"
#include "formats.h"
#include "plan_line.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* The supervisor keeps plans within these (data/formats.tsv). */
#define MAX_SITES SCL_PLAN_LINE_MAX_SITES

/* A site's kind is its bit in the library's masks. */
_Static_assert(SC_PK_WRITE == 1 << 0 && SC_PK_CLOCK == 1 << 1 && SC_PK_PID == 1 << 2 && SC_PK_TID == 1 << 3 &&
                   SC_PK_SEEK == 1 << 4 && SC_PK_READ == 1 << 5 && SCL_PLAN_LINE_SITE_KIND_COUNT == 6,
               "SC_PK_* follow plan_line_site_kind of data/formats.tsv");

static struct sc_plan_lines plan SC_APART; /* $SYSCLUSTER_PLAN, read once */
static struct sc_plan_module *const modules = plan.modules;
static struct sc_plan_site *const sites = plan.sites;

/* What became of each site in this process. */
static struct site_state {
    int resolved;
    _Atomic uint64_t calls, answered;
} state[MAX_SITES] SC_APART;

struct plan_entry {
    uintptr_t addr;
    int site;
};

struct plan_table {
    int n;
    struct plan_entry e[];
};

static _Atomic(struct plan_table *) table;
static _Atomic int publish_lock;
static _Atomic uint64_t snapshots; /* tickets of resolutions, in loader order */
static uint64_t published;         /* the ticket of the table published */
static _Atomic int closing; /* a dlclose is under way: apply nothing */
static int plan_off;          /* dropped for good in this process */
static int clock_off;         /* clock sites dropped: the TSC faults here */

/* The vDSO's clocks. */
static int (*vdso_gettimeofday)(struct timeval *, void *);
static int (*vdso_clock_gettime)(clockid_t, struct timespec *);
static time_t (*vdso_time)(time_t *);

/* Reads the plan the supervisor passed; returns the number of sites.  A
 * plan that is not valid as a whole applies nothing, and says why. */
int sc_plan_parse(const char *text)
{
    size_t len = strlen(text);
    char *copy = (char *)sc_sys6(SYS_mmap, 0, (long)len + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if ((long)copy < 0 && (long)copy > -4096)
        return 0;
    memcpy(copy, text, len + 1);
    char err[300];
    if (sc_plan_lines_parse(copy, &plan, err, sizeof err) < 0) {
        sc_report("plan", "$SYSCLUSTER_PLAN: %s: nothing is applied", err);
        memset(&plan, 0, sizeof plan);
        sc_sys2(SYS_munmap, (long)copy, (long)len + 1);
        return 0;
    }
    if (plan.dropped) /* sites beyond the table: said, not silent */
        sc_report("plan", "the plan has %d sites this runtime cannot hold (at most %d, in %d modules): "
                  "they are not applied", plan.dropped, MAX_SITES, SCL_PLAN_LINE_MAX_MODULES);
    return plan.n_sites;
}

size_t sc_plan_buffer(void) { return plan.buffer; }

int sc_plan_present(void) { return plan.n_sites > 0; }

/* The largest size below which a planned write is deferred. */
size_t sc_plan_max_threshold(void)
{
    size_t m = 0;
    for (int i = 0; i < plan.n_sites; i++)
        if (sites[i].kind == SC_PK_WRITE && sites[i].param > m)
            m = sites[i].param;
    return m;
}

/* ---- resolving sites to return addresses --------------------------------- */

/* The GNU build-id of a loaded object, from its notes in memory. */
static int build_id(const struct dl_phdr_info *info, const uint8_t **id)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const void *)p;
            const uint8_t *name = p + sizeof *n, *desc = name + ((n->n_namesz + 3) & ~3u);
            if (desc + n->n_descsz > end)
                break;
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                *id = desc;
                return (int)n->n_descsz;
            }
            p = desc + ((n->n_descsz + 3) & ~3u);
        }
    }
    return 0;
}

struct resolve_ctx {
    struct plan_table *t;
    int cap;
    uint64_t ticket; /* 0 until the first object is visited */
    char exe[4096];  /* the main program's path, once asked for */
};

/* A module without a build-id: is the loaded object the file it names? */
static int same_file(const char *loaded, const char *planned, struct resolve_ctx *c)
{
    char real[4096];
    if (loaded[0])
        return realpath(loaded, real) && strcmp(real, planned) == 0;
    if (!c->exe[0]) { /* the main program */
        long n = sc_sys4(SYS_readlinkat, AT_FDCWD, (long)"/proc/self/exe", (long)c->exe, sizeof c->exe - 1);
        c->exe[n > 0 ? n : 0] = 0;
    }
    return strcmp(c->exe, planned) == 0;
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct resolve_ctx *c = arg;
    if (!c->ticket) /* under the loader's lock: the order of snapshots */
        c->ticket = atomic_fetch_add(&snapshots, 1) + 1;
    const uint8_t *id = NULL;
    int idlen = build_id(info, &id);
    for (int m = 0; m < plan.n_modules; m++) {
        struct sc_plan_module *pm = &modules[m];
        if (!pm->path)
            continue;
        /* A build-id names the very code; a path is all a module without one has. */
        int match = pm->idlen ? idlen == pm->idlen && memcmp(id, pm->id, (size_t)idlen) == 0
                              : same_file(info->dlpi_name, pm->path, c);
        if (!match)
            continue;
        for (int s = 0; s < plan.n_sites && c->t->n < c->cap; s++) {
            if (sites[s].module != m)
                continue;
            for (int i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                uint64_t off = sites[s].offset;
                if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && off >= ph->p_offset &&
                    off < ph->p_offset + ph->p_filesz) {
                    c->t->e[c->t->n].addr = info->dlpi_addr + ph->p_vaddr + (off - ph->p_offset);
                    c->t->e[c->t->n].site = s;
                    c->t->n++;
                    state[s].resolved = 1;
                    break;
                }
            }
        }
    }
    return 0;
}

/* Publishes the kinds of sites the wrappers must look up. */
static void set_kinds(int kinds)
{
    uint64_t old = sc_attn(), want;
    do
        want = (old & SC_ERRS) | SC_PLAN(kinds);
    while (!atomic_compare_exchange_weak(&G.attn, &old, want));
}

/* Builds the table of return addresses of the loaded objects and publishes
 * it.  Old tables are never freed: a wrapper may still be reading one. */
void sc_plan_resolve(void)
{
    if (!plan.n_sites)
        return;
    size_t bytes = sizeof(struct plan_table) + sizeof(struct plan_entry) * (size_t)plan.n_sites * 4;
    struct plan_table *t =
        (struct plan_table *)sc_sys6(SYS_mmap, 0, (long)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if ((long)t < 0 && (long)t > -4096)
        return;
    struct resolve_ctx *c =
        (struct resolve_ctx *)sc_sys6(SYS_mmap, 0, sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if ((long)c < 0 && (long)c > -4096) {
        sc_sys2(SYS_munmap, (long)t, (long)bytes);
        return;
    }
    c->t = t;
    c->cap = plan.n_sites * 4;
    /* No lock of ours is held across dl_iterate_phdr, which takes the
     * loader's (a constructor running under it may dlopen, and land here). */
    dl_iterate_phdr(visit, c);
    /* Sorted by address (insertion sort: a few hundred at most). */
    for (int i = 1; i < t->n; i++) {
        struct plan_entry x = t->e[i];
        int j = i - 1;
        while (j >= 0 && t->e[j].addr > x.addr) {
            t->e[j + 1] = t->e[j];
            j--;
        }
        t->e[j + 1] = x;
    }
    int kinds = 0;
    for (int i = 0; i < t->n; i++)
        kinds |= sites[t->e[i].site].kind;
    if (!vdso_gettimeofday || clock_off)
        kinds &= ~SC_PK_CLOCK;
    sc_enter();
    sc_spin_lock(&publish_lock);
    /* Snapshots are numbered in the order the loader let them be taken;
     * an older one never replaces a newer. */
    struct plan_table *old = atomic_load(&table);
    int keep = c->ticket > published;
    int same = old && old->n == t->n && memcmp(old->e, t->e, sizeof t->e[0] * (size_t)t->n) == 0;
    if (keep && !same)
        atomic_store(&table, t);
    if (keep) {
        published = c->ticket;
        if ((sc_mode() == SC_ACTIVE || sc_mode() == SC_WT) && !plan_off)
            set_kinds(kinds);
    }
    sc_spin_unlock(&publish_lock);
    sc_leave();
    if (!keep || same) /* never published: no wrapper can be reading it */
        sc_sys2(SYS_munmap, (long)t, (long)bytes);
    sc_sys2(SYS_munmap, (long)c, sizeof *c);
}

/* Around dlclose: addresses of the object closed must not match anything
 * loaded at the same place later. */
void sc_plan_close_begin(void) { atomic_fetch_add(&closing, 1); }

void sc_plan_close_end(void)
{
    sc_plan_resolve();
    atomic_fetch_sub(&closing, 1);
}

/* The site planned at return address ra for a call of this kind (and
 * system call number, 0: any), or -1. */
static int find(uintptr_t ra, int kind, long nr)
{
    struct plan_table *t = atomic_load_explicit(&table, memory_order_acquire);
    if (!t || atomic_load_explicit(&closing, memory_order_relaxed))
        return -1;
    int lo = 0, hi = t->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (t->e[mid].addr < ra)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < t->n && t->e[lo].addr == ra; lo++) {
        struct sc_plan_site *s = &sites[t->e[lo].site];
        if (s->kind == kind && (!nr || s->nr == nr)) {
            atomic_fetch_add_explicit(&state[t->e[lo].site].calls, 1, memory_order_relaxed);
            return t->e[lo].site;
        }
    }
    return -1;
}

static void answered(int site) { atomic_fetch_add_explicit(&state[site].answered, 1, memory_order_relaxed); }

int sc_plan_site(const void *ra, int kind, long nr) { return find((uintptr_t)ra, kind, nr); }

void sc_plan_answered(int site) { answered(site); }

size_t sc_plan_write_site(const void *ra)
{
    int s = find((uintptr_t)ra, SC_PK_WRITE, 0);
    return s < 0 ? 0 : sites[s].param;
}

/* ---- ids ----------------------------------------------------------------- */

/* getpid or gettid planned at ra: the cached id, or 0 to make the call. */
long sc_plan_id(const void *ra, long nr)
{
    if (sc_vfork_child())
        return 0; /* shares our memory, not our pid */
    int s = find((uintptr_t)ra, nr == SYS_getpid ? SC_PK_PID : SC_PK_TID, nr);
    if (s < 0)
        return 0;
    long id;
    if (nr == SYS_getpid) {
        id = G.pid;
    } else {
        if (!sc_tls.tid)
            sc_tls.tid = (int)sc_gettid();
        id = sc_tls.tid;
    }
    answered(s);
    return id;
}

/* ---- clocks -------------------------------------------------------------- */

/* Finds the vDSO's clock functions in its dynamic symbol table. */
static void find_vdso(void)
{
    const uint8_t *base = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
    if (!base)
        return;
    const ElfW(Ehdr) *eh = (const void *)base;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shentsize != sizeof(ElfW(Shdr)))
        return;
    const ElfW(Phdr) *ph = (const void *)(base + eh->e_phoff);
    uintptr_t load = 0;
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD) {
            load = (uintptr_t)base - ph[i].p_vaddr;
            break;
        }
    const ElfW(Shdr) *sh = (const void *)(base + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
            continue;
        const ElfW(Sym) *sym = (const void *)(base + sh[i].sh_offset);
        const char *str = (const char *)(base + sh[sh[i].sh_link].sh_offset);
        size_t n = sh[i].sh_size / sizeof *sym;
        for (size_t j = 0; j < n; j++) {
            if (sym[j].st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym[j].st_info) != STT_FUNC)
                continue;
            void *f = (void *)(load + sym[j].st_value);
            const char *name = str + sym[j].st_name;
            if (strcmp(name, "__vdso_gettimeofday") == 0)
                vdso_gettimeofday = (int (*)(struct timeval *, void *))f;
            else if (strcmp(name, "__vdso_clock_gettime") == 0)
                vdso_clock_gettime = (int (*)(clockid_t, struct timespec *))f;
            else if (strcmp(name, "__vdso_time") == 0)
                vdso_time = (time_t(*)(time_t *))f;
        }
    }
    if (!vdso_clock_gettime || !vdso_time)
        vdso_gettimeofday = NULL; /* all three, or the sites stay system calls */
}

/* This thread's stack, once, where asking for it is safe (pthread_getattr_np
 * may allocate: never inside a signal handler). */
static int stack_known(void)
{
    if (sc_tls.stack_hi)
        return 1;
    if (sc_tls.in_handler)
        return 0;
    pthread_attr_t a;
    void *lo;
    size_t n;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return 0;
    int ok = pthread_attr_getstack(&a, &lo, &n) == 0;
    pthread_attr_destroy(&a);
    if (!ok)
        return 0;
    sc_tls.stack_lo = (uintptr_t)lo;
    sc_tls.stack_hi = (uintptr_t)lo + n;
    return 1;
}

/* Is [p, p+n) in the live part of this thread's stack, between the
 * caller's stack pointer csp and the top: memory a system call would write
 * without EFAULT, and none of the runtime's own frames? */
static int on_live_stack(const void *p, size_t n, uintptr_t csp)
{
    uintptr_t a = (uintptr_t)p;
    if (!stack_known() || csp < sc_tls.stack_lo || csp >= sc_tls.stack_hi)
        return 0; /* another stack: a signal stack, a coroutine's */
    return a >= csp && a + n >= a && a + n <= sc_tls.stack_hi;
}

/* The answer's bytes, copied where the program asked, as the kernel copies
 * them: a fault is EFAULT (the copy routine catches it). */
static int put(void *dst, const void *src, size_t n)
{
    return dst && sc_copy_user(dst, src, n) < 0 ? -EFAULT : 0;
}

/* A clock read through syscall() at a planned site, answered by the vDSO:
 * 1 and *ret when answered, 0 to make the call.  Pointers must be NULL
 * where the call allows it or on the live stack; else the system call
 * decides (EFAULT stays EFAULT: the vDSO would fault instead). */
static int clock_call(int site, long n, long a, long b, uintptr_t csp, long *ret)
{
    long r;
    sc_enter();
    if (n == SYS_gettimeofday) {
        struct timeval tv;
        struct timezone tz;
        if ((a && !on_live_stack((void *)a, sizeof tv, csp)) || (b && !on_live_stack((void *)b, sizeof tz, csp))) {
            sc_leave();
            return 0;
        }
        r = vdso_gettimeofday(a ? &tv : NULL, b ? &tz : NULL);
        if (r == 0)
            r = put((void *)a, &tv, sizeof tv);
        if (r == 0)
            r = put((void *)b, &tz, sizeof tz);
    } else if (n == SYS_clock_gettime) {
        struct timespec ts;
        if (!on_live_stack((void *)b, sizeof ts, csp)) { /* NULL included: the kernel's EFAULT */
            sc_leave();
            return 0;
        }
        r = vdso_clock_gettime((clockid_t)a, &ts);
        if (r == 0)
            r = put((void *)b, &ts, sizeof ts);
    } else {
        time_t t;
        if (a && !on_live_stack((void *)a, sizeof t, csp)) {
            sc_leave();
            return 0;
        }
        r = vdso_time(&t);
        if (a && put((void *)a, &t, sizeof t) < 0)
            r = -EFAULT;
    }
    sc_leave();
    answered(site);
    *ret = r;
    return 1;
}

/* syscall(n, a, b, ...) from ra, whose stack pointer was csp: answered
 * here (1, result in *ret, errno set on failure) or not (0). */
int sc_plan_syscall(const void *ra, uintptr_t csp, long n, long a, long b, long *ret)
{
    int kinds = (int)(sc_attn() >> 32);
    if ((kinds & SC_PK_CLOCK) && (n == SYS_gettimeofday || n == SYS_clock_gettime || n == SYS_time)) {
        int s = find((uintptr_t)ra, SC_PK_CLOCK, n);
        if (s < 0 || !clock_call(s, n, a, b, csp, ret))
            return 0;
        if (*ret < 0) { /* -errno (a time is never negative here) */
            errno = (int)-*ret;
            *ret = -1;
        }
        return 1;
    }
    if ((kinds & (SC_PK_PID | SC_PK_TID)) && (n == SYS_getpid || n == SYS_gettid)) {
        long id = sc_plan_id(ra, n);
        if (id <= 0)
            return 0;
        *ret = id;
        return 1;
    }
    return 0;
}

/* ---- start and the -v report -------------------------------------------- */

static int tsc_mode;

/* After sc_plan_parse, once the process is set up: find the vDSO, resolve
 * the sites of what is loaded, and learn the main thread's stack. */
void sc_plan_start(void)
{
    if (!plan.n_sites)
        return;
    find_vdso();
    /* The vDSO reads the TSC: where reading it faults (PR_SET_TSC, set by
     * record/replay tools), only the system call answers. */
    if (sc_sys2(SYS_prctl, PR_GET_TSC, (long)&tsc_mode) == 0 && tsc_mode == PR_TSC_SIGSEGV)
        clock_off = 1;
    sc_plan_resolve();
    if ((sc_attn() >> 32) & SC_PK_CLOCK)
        stack_known();
    for (int i = 0; i < plan.n_sites; i++)
        if (sites[i].kind == SC_PK_CLOCK && state[i].resolved && !vdso_gettimeofday) {
            sc_report("plan", "no vDSO clocks in this process: the plan's clock sites stay system calls");
            break;
        }
}

/* In a fork child: its thread has a new id. */
void sc_plan_forked(void) { sc_tls.tid = 0; }

/* The plan is dropped for good (the runtime gave up on this process). */
void sc_plan_off(void)
{
    plan_off = 1;
    set_kinds(0);
}

/* prctl(PR_SET_TSC, PR_TSC_SIGSEGV): reading the TSC will fault, and the
 * vDSO reads it.  Clock sites are dropped before the change. */
void sc_plan_tsc(unsigned long mode)
{
    if (mode != PR_TSC_SIGSEGV || clock_off)
        return;
    clock_off = 1;
    set_kinds((int)(sc_attn() >> 32) & ~SC_PK_CLOCK);
}

void sc_plan_report(void)
{
    static const char *what[] = {[SC_PK_WRITE] = "calls", [SC_PK_CLOCK] = "answered by the vDSO",
                                 [SC_PK_PID] = "answered from the cached pid", [SC_PK_TID] = "answered from the cached tid",
                                 [SC_PK_SEEK] = "kept as a pending offset", [SC_PK_READ] = "made as pread"};
    for (int i = 0; i < plan.n_sites; i++) {
        struct sc_plan_site *s = &sites[i];
        uint64_t calls = atomic_load(&state[i].calls), ans = atomic_load(&state[i].answered);
        if (!state[i].resolved)
            continue;
        if (s->kind == SC_PK_WRITE)
            sc_report("stats", "plan cluster #%d at %s: %llu writes (deferred or not, see deferred=)", s->cluster, s->label,
                      (unsigned long long)calls);
        else
            sc_report("stats", "plan cluster #%d at %s: %llu calls, %llu %s", s->cluster, s->label,
                      (unsigned long long)calls, (unsigned long long)ans, what[s->kind]);
    }
}
