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

/* ---- x86-64 instruction lengths --------------------------------------- */

enum { M = 0x10, I8 = 1, I16 = 2, IZ = 3, IV = 4, MO = 5, I24 = 6, G3B = 7, G3Z = 8, R32 = 9 };

static const uint8_t one[256] = {
    /* 00 */ M, M, M, M, I8, IZ, 0, 0, M, M, M, M, I8, IZ, 0, 0,
    /* 10 */ M, M, M, M, I8, IZ, 0, 0, M, M, M, M, I8, IZ, 0, 0,
    /* 20 */ M, M, M, M, I8, IZ, 0, 0, M, M, M, M, I8, IZ, 0, 0,
    /* 30 */ M, M, M, M, I8, IZ, 0, 0, M, M, M, M, I8, IZ, 0, 0,
    /* 40 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 50 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 60 */ 0, 0, 0, M, 0, 0, 0, 0, IZ, M | IZ, I8, M | I8, 0, 0, 0, 0,
    /* 70 */ I8, I8, I8, I8, I8, I8, I8, I8, I8, I8, I8, I8, I8, I8, I8, I8,
    /* 80 */ M | I8, M | IZ, M | I8, M | I8, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 90 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* a0 */ MO, MO, MO, MO, 0, 0, 0, 0, I8, IZ, 0, 0, 0, 0, 0, 0,
    /* b0 */ I8, I8, I8, I8, I8, I8, I8, I8, IV, IV, IV, IV, IV, IV, IV, IV,
    /* c0 */ M | I8, M | I8, I16, 0, 0, 0, M | I8, M | IZ, I24, 0, I16, 0, 0, I8, 0, 0,
    /* d0 */ M, M, M, M, I8, I8, 0, 0, M, M, M, M, M, M, M, M,
    /* e0 */ I8, I8, I8, I8, I8, I8, I8, I8, R32, R32, 0, I8, 0, 0, 0, 0,
    /* f0 */ 0, 0, 0, 0, 0, 0, M | G3B, M | G3Z, 0, 0, 0, 0, 0, 0, M, M,
};

static const uint8_t two[256] = {
    /* 00 */ M, M, M, M, 0, 0, 0, 0, 0, 0, 0, 0, 0, M, 0, M | I8,
    /* 10 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 20 */ M, M, M, M, 0, 0, 0, 0, M, M, M, M, M, M, M, M,
    /* 30 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 40 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 50 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 60 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 70 */ M | I8, M | I8, M | I8, M | I8, M, M, M, 0, M, M, M, M, M, M, M, M,
    /* 80 */ R32, R32, R32, R32, R32, R32, R32, R32, R32, R32, R32, R32, R32, R32, R32, R32,
    /* 90 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* a0 */ 0, 0, 0, M, M | I8, M, 0, 0, 0, 0, 0, M, M | I8, M, M, M,
    /* b0 */ M, M, M, M, M, M, M, M, M, M, M | I8, M, M, M, M, M,
    /* c0 */ M, M, M | I8, M, M | I8, M | I8, M | I8, M, 0, 0, 0, 0, 0, 0, 0, 0,
    /* d0 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* e0 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* f0 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
};

static int vex0f_imm(uint8_t op) { return (op >= 0x70 && op <= 0x73) || op == 0xC2 || op == 0xC4 || op == 0xC5 || op == 0xC6; }

/* Length of the instruction at p, or -1.  *opcode gets the offset of its
 * first opcode byte (after prefixes). */
static long insn_len(const uint8_t *p0, const uint8_t *end, long *opcode)
{
    const uint8_t *p = p0;
    int o16 = 0, a32 = 0, w = 0;
    for (;;) {
        if (p >= end || p - p0 > 14)
            return -1;
        uint8_t b = *p;
        if (b == 0x66)
            o16 = 1;
        else if (b == 0x67)
            a32 = 1;
        else if (!(b == 0xF0 || b == 0xF2 || b == 0xF3 || b == 0x2E || b == 0x36 || b == 0x3E || b == 0x26 ||
                   b == 0x64 || b == 0x65))
            break;
        p++;
    }
    if ((*p & 0xF0) == 0x40) {
        w = (*p & 8) != 0;
        p++;
    }
    if (p >= end)
        return -1;
    if (opcode)
        *opcode = p - p0;
    uint8_t op = *p++, f;
    if (op == 0x0F) {
        if (p >= end)
            return -1;
        uint8_t op2 = *p++;
        if (op2 == 0x38) {
            p++;
            f = M;
        } else if (op2 == 0x3A) {
            p++;
            f = M | I8;
        } else {
            f = two[op2];
        }
    } else if (op == 0xC4 || op == 0xC5) {
        int map = 1;
        if (op == 0xC4) {
            if (p >= end)
                return -1;
            map = p[0] & 0x1F;
            p += 2;
        } else {
            p += 1;
        }
        if (p >= end)
            return -1;
        uint8_t v = *p++;
        f = M | (map == 3 || (map == 1 && vex0f_imm(v)) ? I8 : 0);
        if (map == 1 && v == 0x77)
            f = 0;
    } else if (op == 0x62) {
        if (p + 3 >= end)
            return -1;
        int map = p[0] & 0x07;
        p += 3;
        uint8_t v = *p++;
        f = M | (map == 3 || (map == 1 && vex0f_imm(v)) ? I8 : 0);
    } else if (op == 0x8F && p < end && (p[0] & 0x1F) >= 8) {
        int map = p[0] & 0x1F; /* AMD XOP */
        p += 3;
        f = M | (map == 8 ? I8 : map == 10 ? IZ : 0);
    } else {
        f = one[op];
    }
    int imm = f & 0x0F;
    if (f & M) {
        if (p >= end)
            return -1;
        uint8_t m = *p++;
        int mod = m >> 6, rm = m & 7, reg = (m >> 3) & 7;
        if (mod != 3) {
            if (rm == 4) {
                if (p >= end)
                    return -1;
                uint8_t sib = *p++;
                if (mod == 0 && (sib & 7) == 5)
                    p += 4;
            } else if (mod == 0 && rm == 5) {
                p += 4;
            }
            if (mod == 1)
                p += 1;
            else if (mod == 2)
                p += 4;
        }
        if (imm == G3B)
            imm = reg < 2 ? I8 : 0;
        else if (imm == G3Z)
            imm = reg < 2 ? IZ : 0;
    }
    switch (imm) {
    case I8: p += 1; break;
    case I16: p += 2; break;
    case IZ: p += o16 ? 2 : 4; break;
    case IV: p += w ? 8 : o16 ? 2 : 4; break;
    case MO: p += a32 ? 4 : 8; break;
    case I24: p += 3; break;
    case R32: p += 4; break;
    default: break;
    }
    if (p > end)
        return -1;
    return p - p0;
}

long sc_x86_insn_len(const uint8_t *p, const uint8_t *end) { return insn_len(p, end, NULL); }

/* Is the candidate at c the opcode of an instruction, decoding from
 * `from`? */
static int confirmed(const uint8_t *from, const uint8_t *c, const uint8_t *end)
{
    const uint8_t *p = from;
    while (p <= c) {
        long op = 0, n = insn_len(p, end, &op);
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
