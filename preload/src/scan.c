/* What cannot be interposed.
 *
 * Raw system calls: the executable segments of every loaded object but
 * libc, the dynamic loader, the vDSO and this library are searched for the
 * bytes of `syscall`, `sysenter` and `int $0x80`; each hit is confirmed by
 * decoding instructions from the start of the function that contains it
 * (from .eh_frame_hdr), so that the same bytes inside a longer instruction
 * do not count.  A verdict is kept per file (scancache.c), so a program
 * started again reads it instead of decoding its libraries again.
 *
 * Static, setuid/setgid and file-capability executables: the loader does
 * not load LD_PRELOAD libraries into them at all (or not at all securely),
 * so they run unchanged; exec and posix_spawn report them. */
#include "interposable.h"
#include "rt.h"
#include "scancache.h"
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

/* Can the instruction whose opcode starts at op run in a 64-bit user
 * program?  Opcodes that are invalid in 64-bit mode, and I/O and
 * privileged ones, are never in compiled user code but are common in data
 * decoded as instructions. */
static int user_opcode(const uint8_t *op)
{
    switch (op[0]) {
    case 0x06: case 0x07: case 0x0E: case 0x16: case 0x17: case 0x1E: case 0x1F: case 0x27: case 0x2F:
    case 0x37: case 0x3F: case 0x60: case 0x61: case 0x82: case 0x9A: case 0xCE: case 0xD4: case 0xD5:
    case 0xD6: case 0xEA: case 0xE4: case 0xE5: case 0xE6: case 0xE7: case 0xEC: case 0xED: case 0xEE:
    case 0xEF: case 0x6C: case 0x6D: case 0x6E: case 0x6F: case 0xF4: case 0xFA: case 0xFB:
        return 0;
    case 0x0F:
        switch (op[1]) {
        case 0x04: case 0x06: case 0x07: case 0x08: case 0x09: case 0x0A: case 0x0C: case 0x0F: case 0x20:
        case 0x21: case 0x22: case 0x23: case 0x24: case 0x25: case 0x26: case 0x27: case 0x30: case 0x32:
        case 0x35: case 0x36: case 0x39: case 0x3B: case 0x3C: case 0x3D: case 0x3E: case 0x3F: case 0x7A:
        case 0x7B: case 0xA6: case 0xA7: case 0xFF:
            return 0;
        }
    }
    return 1;
}

/* Where decoding stops or resumes within one stretch of code: the last
 * instruction start reached (NULL: nothing decoded yet), and whether the
 * stretch turned out not to be code. */
struct walk {
    const uint8_t *from, *at;
    int strict, dead;
};

/* Is the candidate at c the opcode of an instruction, decoding from
 * w->from?  Strictly (see function_start), every instruction on the way
 * must be one a user program can run.  Candidates of one segment come in
 * increasing order, so a walk over the same stretch resumes where the
 * previous candidate left it. */
static int confirmed(struct walk *w, const uint8_t *c, const uint8_t *end)
{
    const uint8_t *p = w->at ? w->at : w->from;
    if (w->dead)
        return 0;
    while (p <= c) {
        long op = 0, n = sc_x86_insn(p, end, &op);
        if (n <= 0 || (w->strict && !user_opcode(p + op))) {
            w->dead = w->strict; /* nothing after this is reachable code */
            return 0;
        }
        w->at = p;
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

static uint64_t uleb(const uint8_t **pp)
{
    uint64_t v = 0;
    int shift = 0;
    const uint8_t *p = *pp;
    do {
        if (shift < 64)
            v |= (uint64_t)(*p & 0x7F) << shift;
        shift += 7;
    } while (*p++ & 0x80);
    *pp = p;
    return v;
}

/* Bytes of a pointer in DWARF encoding enc (its low four bits); -1 for
 * LEB128, 0 for an encoding we do not know. */
static int enc_size(unsigned enc)
{
    switch (enc & 0x0F) {
    case 0x00: case 0x04: case 0x0C: return 8;
    case 0x02: case 0x0A: return 2;
    case 0x03: case 0x0B: return 4;
    case 0x01: case 0x09: return -1;
    default: return 0;
    }
}

/* The number of bytes of code an FDE covers (its pc_range), or 0 if its
 * CIE is not one we can read. */
static uint64_t fde_range(const uint8_t *fde)
{
    uint32_t len;
    int32_t cie_off;
    memcpy(&len, fde, 4);
    memcpy(&cie_off, fde + 4, 4);
    if (len == 0 || len == 0xFFFFFFFFu || cie_off <= 0)
        return 0;
    const uint8_t *cie = fde + 4 - cie_off, *p = cie + 9;
    unsigned version = cie[8], enc = 0; /* absptr without 'R' */
    const char *aug = (const char *)p;
    p += strlen(aug) + 1;
    uleb(&p);                               /* code alignment */
    uleb(&p);                               /* data alignment (SLEB128: same length) */
    if (version == 1)
        p++;
    else
        uleb(&p);                           /* return address register */
    if (aug[0] == 'z') {
        uleb(&p);                           /* augmentation data length */
        for (const char *a = aug + 1; *a; a++) {
            if (*a == 'R') {
                enc = *p++;
                break;
            } else if (*a == 'P') {
                int n = enc_size(*p++);
                if (n == 0)
                    return 0;
                if (n < 0)
                    uleb(&p);
                else
                    p += n;
            } else if (*a == 'L') {
                p++;
            } else if (*a != 'S' && *a != 'B') {
                return 0;
            }
        }
    } else if (aug[0]) {
        return 0;
    }
    int n = enc_size(enc);
    if (n == 0)
        return 0;
    const uint8_t *r = fde + 8 + (n > 0 ? n : 0);
    if (n < 0) {
        r = fde + 8;
        uleb(&r);
        return uleb(&r);
    }
    uint64_t v = 0;
    memcpy(&v, r, (size_t)n); /* little-endian: the low bytes */
    return v;
}

/* Where to decode from to confirm a candidate at addr, from the binary
 * search table of .eh_frame_hdr (in w).
 *
 * Inside an FDE's range [pc_begin, pc_begin + pc_range): from pc_begin,
 * the start of a function.  Outside every FDE: the bytes may be code
 * without unwind information (hand-written assembly, or all of Go's code
 * in a cgo program, which makes its system calls itself) or data placed in
 * the text (OpenSSL's precomputed tables in libcrypto: 150 KB with the
 * bytes of `syscall` and `int $0x80` in them).  Treating the gap as data
 * would miss Go's raw system calls; decoding it like a function finds
 * "instructions" in any data, since x86 decoding falls into step within a
 * few bytes.  So a gap is decoded from its start (the end of the previous
 * FDE, or the segment start) strictly: the candidate counts only if every
 * instruction on the way is one a 64-bit user program can run — data hits
 * an invalid or privileged opcode within a few dozen bytes, compiled code
 * never does.  Without a usable .eh_frame_hdr the whole segment is one
 * gap. */
static void function_start(const uint8_t *hdr, const uint8_t *addr, const uint8_t *seg, struct walk *w)
{
    const uint8_t *from = seg;
    int strict = 1;
    if (hdr && hdr[0] == 1 && hdr[2] == (DW_EH_PE_udata4) && hdr[3] == (DW_EH_PE_datarel | DW_EH_PE_sdata4) &&
        (hdr[1] & 0x0F) == DW_EH_PE_sdata4) {
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
        if (best >= 0 && hdr + t[2 * best] >= seg) {
            const uint8_t *begin = hdr + t[2 * best];
            uint64_t range = fde_range(hdr + t[2 * best + 1]);
            if (range == 0 || (uint64_t)(addr - begin) < range) {
                from = begin; /* a function (or an FDE we cannot read: as one) */
                strict = 0;
            } else {
                from = begin + range;
            }
        }
    }
    if (w->from != from || w->strict != strict)
        *w = (struct walk){from, NULL, strict, 0};
}

static int scan_segment(const uint8_t *seg, size_t n, const uint8_t *hdr)
{
    const uint8_t *end = seg + n;
    struct walk w = {NULL, NULL, 0, 0};
    for (const uint8_t *p = seg; p + 1 < end; p++) {
        p = memchr(p, 0x0F, (size_t)(end - p - 1));
        /* int $0x80 (cd 80) is rare enough to look for separately below. */
        if (!p)
            break;
        if (p[1] == 0x05 || p[1] == 0x34) {
            function_start(hdr, p, seg, &w);
            if (confirmed(&w, p, end))
                return 1;
        }
    }
    w = (struct walk){NULL, NULL, 0, 0};
    for (const uint8_t *p = seg; p + 1 < end; p++) {
        p = memchr(p, 0xCD, (size_t)(end - p - 1));
        if (!p)
            break;
        if (p[1] == 0x80) {
            function_start(hdr, p, seg, &w);
            if (confirmed(&w, p, end))
                return 1;
        }
    }
    return 0;
}

/* ---- loaded objects ---------------------------------------------------- */

#define MAX_SCANNED 512
static uintptr_t scanned[MAX_SCANNED] SC_APART;
static int n_scanned;
static _Atomic int scan_lock;

struct scan_ctx {
    uintptr_t self;
    char *culprit;
    size_t len;
    int found;
    struct sc_scancache cache;
};

/* Objects whose verdict came from the scan cache, and objects scanned (-v). */
int sc_scan_cached, sc_scan_scanned;

static int exempt(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
#ifdef __SANITIZE_ADDRESS__
    /* The sanitized test build (make test-asan): the sanitizers' run-time
     * libraries make raw system calls for their own bookkeeping; the
     * program's calls reach this library through their interceptors. */
    if (strncmp(base, "libasan.so", 10) == 0 || strncmp(base, "libubsan.so", 11) == 0)
        return 1;
#endif
    return strncmp(base, "libc.so", 7) == 0 || strncmp(base, "ld-linux", 8) == 0 ||
           strncmp(base, "linux-vdso", 10) == 0 || strncmp(base, "linux-gate", 10) == 0;
}

/* Does the object have raw system calls in its executable segments? */
static int scan_object(const struct dl_phdr_info *info, const uint8_t *hdr)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || !(ph->p_flags & PF_R))
            continue;
        if (scan_segment((const uint8_t *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, hdr))
            return 1;
    }
    return 0;
}

/* The verdict on one object: from the scan cache (scancache.c) if it holds
 * one for exactly these bytes, else scanned, and kept if the file did not
 * change during the scan. */
static int judge(struct scan_ctx *c, const struct dl_phdr_info *info, const uint8_t *hdr)
{
    struct sc_scan_key k, after;
    int keyed = sc_scancache_key(&c->cache, info, &k);
    if (keyed) {
        int v = sc_scancache_get(&c->cache, &k);
        if (v >= 0) {
            sc_scan_cached++;
            return v;
        }
    }
    int v = scan_object(info, hdr);
    sc_scan_scanned++;
    if (keyed && sc_scancache_key(&c->cache, info, &after) && memcmp(&k, &after, sizeof k) == 0)
        sc_scancache_put(&c->cache, &k, v);
    return v;
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
    if (judge(c, info, hdr)) {
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
    return 0;
}

int sc_scan_loaded(char *culprit, size_t len)
{
    struct scan_ctx c = {0, culprit, len, 0, SC_SCANCACHE_INIT};
    c.self = sc_self_base();
    sc_spin_lock(&scan_lock);
    sc_scancache_begin(&c.cache, (const void *)c.self);
    dl_iterate_phdr(visit, &c);
    sc_scancache_end(&c.cache);
    sc_spin_unlock(&scan_lock);
    return c.found;
}

/* ---- executables the loader will not preload into ----------------------- */

/* sc_elf_static_or_setuid: interposable.c (the launcher uses it too). */

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
