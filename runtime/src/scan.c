/* What cannot be interposed.
 *
 * Raw system calls: the executable segments of every loaded object but
 * libc, the dynamic loader, the vDSO and this library are searched for the
 * bytes of `syscall`, `sysenter` and `int $0x80`; each hit is confirmed by
 * decoding instructions from the start of the function that contains it
 * (from .eh_frame_hdr), so that the same bytes inside a longer instruction
 * do not count.
 *
 * Static, setuid/setgid and file-capability executables: the loader does
 * not load LD_PRELOAD libraries into them at all (or not at all securely),
 * so they run unchanged; exec and posix_spawn report them. */
#include "rt.h"
#include "sys.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Is the candidate at c the opcode of an instruction, decoding from
 * `from`? */
static int confirmed(const uint8_t *from, const uint8_t *c, const uint8_t *end)
{
    const uint8_t *p = from;
    while (p <= c) {
        long op = 0, n = sc_x86_insn(p, end, &op);
        if (n <= 0)
            return 0;
        if (p + op == c)
            return 1;
        if (p + n > c)
            return 0;
        p += n;
    }
    return 0;
}

#ifndef DW_EH_PE_udata4
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_datarel 0x30
#endif

/* The start of the function containing addr, from the binary search table
 * of .eh_frame_hdr; else the segment start. */
static const uint8_t *function_start(const uint8_t *hdr, const uint8_t *addr, const uint8_t *seg)
{
    if (!hdr || hdr[0] != 1 || hdr[2] != (DW_EH_PE_udata4) || hdr[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4) ||
        (hdr[1] & 0x0F) != DW_EH_PE_sdata4)
        return seg;
    uint32_t count;
    memcpy(&count, hdr + 8, 4);
    const int32_t *t = (const int32_t *)(hdr + 12);
    long lo = 0, hi = (long)count - 1, best = -1;
    while (lo <= hi) {
        long mid = (lo + hi) / 2;
        if (hdr + t[2 * mid] <= addr) {
            best = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    if (best < 0 || hdr + t[2 * best] < seg)
        return seg;
    return hdr + t[2 * best];
}

static int scan_segment(const uint8_t *seg, size_t n, const uint8_t *hdr)
{
    const uint8_t *end = seg + n;
    for (const uint8_t *p = seg; p + 1 < end; p++) {
        p = memchr(p, 0x0F, (size_t)(end - p - 1));
        const uint8_t *q = NULL;
        /* int $0x80 (cd 80) is rare enough to look for separately below. */
        if (!p)
            break;
        if (p[1] == 0x05 || p[1] == 0x34)
            q = p;
        if (q && confirmed(function_start(hdr, q, seg), q, end))
            return 1;
    }
    for (const uint8_t *p = seg; p + 1 < end; p++) {
        p = memchr(p, 0xCD, (size_t)(end - p - 1));
        if (!p)
            break;
        if (p[1] == 0x80 && confirmed(function_start(hdr, p, seg), p, end))
            return 1;
    }
    return 0;
}

/* ---- loaded objects ---------------------------------------------------- */

#define MAX_SCANNED 512
static uintptr_t scanned[MAX_SCANNED];
static int n_scanned;
static _Atomic int scan_lock;

struct scan_ctx {
    uintptr_t self;
    char *culprit;
    size_t len;
    int found;
};

static int exempt(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    return strncmp(base, "libc.so", 7) == 0 || strncmp(base, "ld-linux", 8) == 0 ||
           strncmp(base, "linux-vdso", 10) == 0 || strncmp(base, "linux-gate", 10) == 0;
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct scan_ctx *c = arg;
    if (info->dlpi_addr == c->self || (info->dlpi_name[0] && exempt(info->dlpi_name)))
        return 0;
    for (int i = 0; i < n_scanned; i++)
        if (scanned[i] == info->dlpi_addr)
            return 0;
    if (n_scanned < MAX_SCANNED)
        scanned[n_scanned++] = info->dlpi_addr;
    const uint8_t *hdr = NULL;
    int has_text = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_EH_FRAME)
            hdr = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
            has_text = 1;
    }
    if (!has_text)
        return 0; /* the vDSO and friends without a name have none of interest */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || !(ph->p_flags & PF_R))
            continue;
        if (scan_segment((const uint8_t *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, hdr)) {
            const char *name = info->dlpi_name;
            char exe[256];
            if (!name[0]) {
                long n = sc_sys4(SYS_readlinkat, AT_FDCWD, (long)"/proc/self/exe", (long)exe, sizeof exe - 1);
                exe[n > 0 ? n : 0] = 0;
                name = n > 0 ? exe : "the program";
            }
            snprintf(c->culprit, c->len, "%s", name);
            c->found = 1;
            return 1;
        }
    }
    return 0;
}

int sc_scan_loaded(char *culprit, size_t len)
{
    Dl_info self;
    struct scan_ctx c = {0, culprit, len, 0};
    if (dladdr((void *)sc_scan_loaded, &self))
        c.self = (uintptr_t)self.dli_fbase;
    sc_spin_lock(&scan_lock);
    dl_iterate_phdr(visit, &c);
    sc_spin_unlock(&scan_lock);
    return c.found;
}

/* ---- executables the loader will not preload into ----------------------- */

static long rd(int fd, void *buf, size_t n, off_t at)
{
    return sc_sys4(SYS_pread64, fd, (long)buf, (long)n, at);
}

int sc_elf_static_or_setuid(const char *path, char *why, size_t len)
{
    for (int depth = 0; depth < 2; depth++) {
        long fd = sc_sys4(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
        if (fd < 0)
            return 0;
        struct stat st;
        int verdict = 0;
        char interp[256];
        if (sc_sys2(SYS_fstat, fd, (long)&st) == 0 && (st.st_mode & (S_ISUID | S_ISGID))) {
            snprintf(why, len, "%s is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD", path);
            verdict = 1;
        } else if (sc_sys4(SYS_fgetxattr, fd, (long)"security.capability", 0, 0) > 0) {
            snprintf(why, len, "%s has file capabilities: the loader ignores LD_PRELOAD", path);
            verdict = 1;
        } else {
            ElfW(Ehdr) eh;
            long n = rd((int)fd, &eh, sizeof eh, 0);
            if (n >= 2 && ((char *)&eh)[0] == '#' && ((char *)&eh)[1] == '!') {
                /* A script: what matters is its interpreter. */
                char line[256];
                long m = rd((int)fd, line, sizeof line - 1, 2);
                line[m > 0 ? m : 0] = 0;
                char *s = line + strspn(line, " \t");
                s[strcspn(s, " \t\n")] = 0;
                snprintf(interp, sizeof interp, "%s", s);
                sc_sys1(SYS_close, fd);
                if (!interp[0])
                    return 0;
                path = interp;
                continue;
            }
            if (n == (long)sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_phentsize == sizeof(ElfW(Phdr)) &&
                eh.e_phnum < 64) {
                ElfW(Phdr) ph[64];
                size_t want = sizeof(ElfW(Phdr)) * eh.e_phnum;
                int has_interp = 0;
                if (rd((int)fd, ph, want, (off_t)eh.e_phoff) == (long)want) {
                    for (int i = 0; i < eh.e_phnum; i++)
                        has_interp |= ph[i].p_type == PT_INTERP;
                    if (!has_interp) {
                        snprintf(why, len, "%s is statically linked: its system calls cannot be interposed", path);
                        verdict = 1;
                    }
                }
            }
        }
        sc_sys1(SYS_close, fd);
        return verdict;
    }
    return 0;
}

void sc_check_exec_target(const char *path, int use_path)
{
    if (!path || !*path)
        return;
    char full[4096], why[600];
    if (use_path && !strchr(path, '/')) {
        const char *dirs = getenv("PATH");
        if (!dirs)
            dirs = "/bin:/usr/bin";
        int found = 0;
        while (*dirs && !found) {
            size_t n = strcspn(dirs, ":");
            if (n + strlen(path) + 2 < sizeof full) {
                memcpy(full, n ? dirs : ".", n ? n : 1);
                size_t k = n ? n : 1;
                full[k] = '/';
                strcpy(full + k + 1, path);
                found = sc_sys4(SYS_faccessat, AT_FDCWD, (long)full, X_OK, 0) == 0;
            }
            dirs += n + (dirs[n] == ':');
        }
        if (!found)
            return;
        path = full;
    }
    if (sc_elf_static_or_setuid(path, why, sizeof why))
        sc_report("unchanged", "%s; it runs unchanged", why);
}
