/* The scan cache: the verdict of the raw-syscall scan (scan.c) kept per
 * file, so that a program started again does not decode its libraries
 * again (~0.4-0.5 ms of a short tar or cp: docs/RUNTIME.md, "Start-up").
 *
 * An entry says "the executable segments of this file have (or have no)
 * raw system calls".  It is trusted only if it names exactly the bytes
 * now mapped: the key (scancache.h) holds the file's device and inode as
 * /proc/self/maps shows them for the mapping (so a file renamed over the
 * path after it was loaded, or deleted, is not taken for the mapped one),
 * its size, modification, change and birth times to the nanosecond (no
 * write leaves the change time as it was: touch -d restores the
 * modification time only), the object's build-id, the layout of its
 * segments, and this library's own build-id (another scanner may judge
 * differently).  Only regular files with a link on a local file system
 * are keyed; memfds, deleted files, /proc paths, objects with text
 * relocations (their code in memory is not the file's) and file systems
 * whose times another machine sets (NFS, FUSE, ...) are scanned every
 * time.  A miss scans and stores the verdict -- "raw system calls" too --
 * if the key did not change during the scan and the file was last changed
 * more than two seconds ago (a coarse clock gives changes within one tick
 * the same time): written to a temporary file
 * and renamed over the slot, so a reader sees a whole entry or none; an
 * entry that does not check out (size, magic, checksum, key) is a miss.
 *
 * Where: $XDG_CACHE_HOME/syscluster/scan-1 (or ~/.cache/...), a directory
 * of this user's with no write permission for others, else no cache.
 * Off for secure-execution programs (AT_SECURE) and with
 * SYSCLUSTER_SCAN_CACHE=0.  At most SC_SCANCACHE_SLOTS entries: an entry's
 * file is named after its key's hash modulo that, and a key that lands on
 * another's slot replaces it.  Everything is raw system calls (sys.h), as
 * in the rest of the library; nothing is printed. */
#include "rt.h"
#include "scancache.h"
#include "sys.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>

/* ---- what the bytes are ------------------------------------------------- */

/* The NT_GNU_BUILD_ID of an object whose program headers are ph (n of
 * them), loaded at base: its length (at most 32 bytes copied), 0 if none. */
static uint32_t build_id(uintptr_t base, const ElfW(Phdr) *ph, int n, uint8_t out[32])
{
    for (int i = 0; i < n; i++) {
        if (ph[i].p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(base + ph[i].p_vaddr), *end = p + ph[i].p_memsz;
        while (p + 12 <= end) {
            uint32_t namesz, descsz, type;
            memcpy(&namesz, p, 4);
            memcpy(&descsz, p + 4, 4);
            memcpy(&type, p + 8, 4);
            const uint8_t *name = p + 12, *desc = name + ((namesz + 3) & ~3u);
            if (desc + descsz > end || desc < name)
                break;
            if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(name, "GNU", 4) == 0 && descsz > 0) {
                uint32_t len = descsz < 32 ? descsz : 32;
                memcpy(out, desc, len);
                return len;
            }
            p = desc + ((descsz + 3) & ~3u);
        }
    }
    return 0;
}

/* Code whose bytes in memory are not the file's: relocations applied to
 * the text (DT_TEXTREL), at an address that changes from run to run. */
static int text_relocated(uintptr_t base, const ElfW(Phdr) *ph, int n)
{
    for (int i = 0; i < n; i++) {
        if (ph[i].p_type != PT_DYNAMIC)
            continue;
        for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(base + ph[i].p_vaddr); d->d_tag != DT_NULL; d++)
            if (d->d_tag == DT_TEXTREL || (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_TEXTREL)))
                return 1;
    }
    return 0;
}

/* File systems whose times only this kernel sets. */
static int local_fs(long type)
{
    switch ((unsigned long)type) {
    case 0xEF53UL:     /* ext2/3/4 */
    case 0x58465342UL: /* xfs */
    case 0x9123683EUL: /* btrfs */
    case 0x01021994UL: /* tmpfs */
    case 0x794C7630UL: /* overlayfs */
    case 0x73717368UL: /* squashfs */
    case 0xF2F52010UL: /* f2fs */
    case 0x2FC12FC1UL: /* zfs */
    case 0x858458F6UL: /* ramfs */
        return 1;
    }
    return 0;
}

static const char *hexnum(const char *p, uint64_t *v)
{
    *v = 0;
    for (;; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0)
            return p;
        *v = *v * 16 + (uint64_t)d;
    }
}

/* PROCMAP_QUERY (Linux 6.11, <linux/fs.h>): one mapping of /proc/PID/maps
 * by address, without the text. */
struct sc_procmap_query {
    uint64_t size, query_flags, query_addr, vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
    uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    uint64_t vma_name_addr, build_id_addr;
};
#define SC_PROCMAP_QUERY _IOWR('f', 17, struct sc_procmap_query)

/* /proc/self/maps as text, for kernels without PROCMAP_QUERY: read once
 * per scan (the caller holds the scan's lock).  In .bss: pages are touched
 * only as far as it is filled.  A longer one is cut, and the objects
 * mapped past the cut are not keyed. */
static char maps[1 << 16] SC_APART;

static int mapped_file_text(struct sc_scancache *c, uintptr_t addr, uint32_t *maj, uint32_t *min, uint64_t *ino)
{
    if (c->maps_len < 0) {
        c->maps_len = 0;
        long n;
        while (c->maps_len < (long)sizeof maps - 1 &&
               (n = sc_sys3(SYS_read, c->maps_fd, (long)(maps + c->maps_len), (long)(sizeof maps - 1 - c->maps_len))) >
                   0)
            c->maps_len += n;
        maps[c->maps_len] = 0;
    }
    for (const char *line = maps; line < maps + c->maps_len;) {
        const char *nl = strchr(line, '\n');
        if (!nl)
            return 0; /* the cut line */
        uint64_t lo, hi, off, a, b, i;
        const char *p = hexnum(line, &lo);
        if (*p == '-' && (p = hexnum(p + 1, &hi), *p == ' ') && lo <= addr && addr < hi) {
            p = strchr(p + 1, ' '); /* past the permissions */
            if (!p || (p = hexnum(p + 1, &off), *p != ' ') || (p = hexnum(p + 1, &a), *p != ':') ||
                (p = hexnum(p + 1, &b), *p != ' '))
                return 0;
            i = 0;
            for (p++; *p >= '0' && *p <= '9'; p++)
                i = i * 10 + (uint64_t)(*p - '0');
            *maj = (uint32_t)a;
            *min = (uint32_t)b;
            *ino = i;
            return i != 0;
        }
        line = nl + 1;
    }
    return 0;
}

/* The device and inode of the file mapped at addr, as /proc/self/maps
 * shows them: 1 if found. */
static int mapped_file(struct sc_scancache *c, uintptr_t addr, uint32_t *maj, uint32_t *min, uint64_t *ino)
{
    if (c->maps_fd < 0) {
        long fd = sc_sys4(SYS_openat, AT_FDCWD, (long)"/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
        if (fd < 0)
            return 0;
        c->maps_fd = (int)fd;
    }
    if (c->maps_len < 0) {
        struct sc_procmap_query q;
        memset(&q, 0, sizeof q);
        q.size = sizeof q;
        q.query_addr = addr;
        long r = sc_sys3(SYS_ioctl, c->maps_fd, (long)SC_PROCMAP_QUERY, (long)&q);
        if (r == 0) {
            *maj = q.dev_major;
            *min = q.dev_minor;
            *ino = q.inode;
            return q.inode != 0 && q.vma_start <= addr && addr < q.vma_end;
        }
        if (r != -ENOTTY && r != -EINVAL && r != -EOPNOTSUPP)
            return 0;
    }
    return mapped_file_text(c, addr, maj, min, ino);
}

/* This library's build-id, once: the scanner that judged. */
static uint8_t self_id[32];
static uint32_t self_id_len, self_id_done;

void sc_scancache_begin(struct sc_scancache *c, const void *self_base)
{
    (void)c;
    if (self_id_done || !self_base)
        return;
    self_id_done = 1;
    const ElfW(Ehdr) *eh = self_base;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
        return;
    self_id_len = build_id((uintptr_t)eh, (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff), eh->e_phnum, self_id);
}

int sc_scancache_key(struct sc_scancache *c, const struct dl_phdr_info *info, struct sc_scan_key *k)
{
    if (c->off)
        return 0;
    if (!c->tried) {
        c->tried = 1;
        const char *v = getenv("SYSCLUSTER_SCAN_CACHE");
        if (getauxval(AT_SECURE) || (v && strcmp(v, "0") == 0)) {
            c->off = 1;
            return 0;
        }
        const char *all = getenv("SYSCLUSTER_TEST_SCAN_CACHE_ALL"),
                   *settle = getenv("SYSCLUSTER_TEST_SCAN_CACHE_SETTLE_0");
        c->all = all && strcmp(all, "1") == 0;
        c->settle_ns = settle && strcmp(settle, "1") == 0 ? 0 : SC_SCANCACHE_SETTLE_NS;
        if (self_id_len == 0) {
            c->off = 1; /* which scanner judged cannot be told */
            return 0;
        }
    }
    const char *name = info->dlpi_name;
    if (name[0] && (name[0] != '/' || strncmp(name, "/proc/", 6) == 0))
        return 0; /* relative to a directory that may have changed, or not a file's */
    const char *path = name[0] ? name : "/proc/self/exe";
    uintptr_t text = 0;
    uint64_t code = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            if (!text)
                text = info->dlpi_addr + ph->p_vaddr;
            code += ph->p_memsz;
        }
    }
    if ((code < SC_SCANCACHE_MIN_TEXT && !c->all) || text_relocated(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum))
        return 0;
    /* The file at the path, and whether its file system is one whose times
     * only this kernel sets.  On a device already asked about (the
     * previous object's: a device number names one mounted file system,
     * held mounted by the mapping compared below), the statx of the path
     * alone; else the path opened once (O_PATH), so that statx and fstatfs
     * answer for the same file. */
    struct statx sx;
    const unsigned need = STATX_TYPE | STATX_NLINK | STATX_INO | STATX_SIZE | STATX_MTIME | STATX_CTIME;
    long r = -1;
    if (c->fs_known)
        r = sc_sys5(SYS_statx, AT_FDCWD, (long)path, 0, STATX_BASIC_STATS | STATX_BTIME, (long)&sx);
    if (r != 0 || sx.stx_dev_major != c->fs_major || sx.stx_dev_minor != c->fs_minor) {
        long fd = sc_sys4(SYS_openat, AT_FDCWD, (long)path, O_PATH | O_CLOEXEC, 0);
        if (fd < 0)
            return 0;
        struct statfs sf;
        r = sc_sys5(SYS_statx, fd, (long)"", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME, (long)&sx);
        long rf = sc_sys2(SYS_fstatfs, fd, (long)&sf);
        sc_sys1(SYS_close, fd);
        if (r != 0 || rf != 0)
            return 0;
        c->fs_known = 1;
        c->fs_major = sx.stx_dev_major;
        c->fs_minor = sx.stx_dev_minor;
        c->fs_local = local_fs(sf.f_type);
    }
    if ((sx.stx_mask & need) != need || !S_ISREG(sx.stx_mode) || sx.stx_nlink == 0 || !c->fs_local)
        return 0;
    uint32_t maj, min;
    uint64_t ino;
    if (!mapped_file(c, text, &maj, &min, &ino) || maj != sx.stx_dev_major || min != sx.stx_dev_minor ||
        ino != sx.stx_ino)
        return 0; /* the path names another file than the one mapped */
    memset(k, 0, sizeof *k);
    memcpy(k->scanner, self_id, self_id_len);
    k->scanner_len = self_id_len;
    k->build_id_len = build_id(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, k->build_id);
    k->dev_major = maj;
    k->dev_minor = min;
    k->ino = ino;
    k->size = sx.stx_size;
    k->mtime_s = sx.stx_mtime.tv_sec;
    k->mtime_ns = sx.stx_mtime.tv_nsec;
    k->ctime_s = sx.stx_ctime.tv_sec;
    k->ctime_ns = sx.stx_ctime.tv_nsec;
    if (sx.stx_mask & STATX_BTIME) {
        k->has_btime = 1;
        k->btime_s = sx.stx_btime.tv_sec;
        k->btime_ns = sx.stx_btime.tv_nsec;
    }
    uint64_t h = SC_FNV_SEED;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t f[6] = {ph->p_type, ph->p_flags, ph->p_offset, ph->p_vaddr, ph->p_filesz, ph->p_memsz};
        h = sc_fnv1a(f, sizeof f, h);
    }
    k->layout = h;
    return 1;
}

/* ---- the directory ------------------------------------------------------ */

/* The cache directory, opened (and made, if make) once per scan: its fd,
 * or -1. */
static int cache_dir(struct sc_scancache *c, int make)
{
    if (c->dirfd >= 0 || c->off)
        return c->dirfd;
    char path[4096];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n, base;
    if (xdg && xdg[0] == '/') {
        n = snprintf(path, sizeof path, "%s/syscluster/" SC_SCANCACHE_DIR, xdg);
        base = (int)strlen(xdg);
    } else if (home && home[0] == '/') {
        n = snprintf(path, sizeof path, "%s/.cache/syscluster/" SC_SCANCACHE_DIR, home);
        base = (int)strlen(home);
    } else {
        c->off = 1;
        return -1;
    }
    if (n <= 0 || n >= (int)sizeof path) {
        c->off = 1;
        return -1;
    }
    long fd = sc_sys4(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW, 0);
    if (fd < 0 && make) {
        /* Each missing directory from the base down, for this user only. */
        for (int i = base; i <= n; i++) {
            if (path[i] != '/' && path[i] != 0)
                continue;
            char was = path[i];
            path[i] = 0;
            sc_sys3(SYS_mkdirat, AT_FDCWD, (long)path, 0700);
            path[i] = was;
        }
        fd = sc_sys4(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW, 0);
    }
    if (fd < 0) {
        if (make)
            c->off = 1; /* unwritable: no cache, quietly */
        return -1;
    }
    /* Only this user may have put entries there. */
    struct stat st;
    if (sc_sys2(SYS_fstat, fd, (long)&st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != (uid_t)sc_sys0(SYS_geteuid) ||
        (st.st_mode & 022)) {
        sc_sys1(SYS_close, fd);
        c->off = 1;
        return -1;
    }
    c->dirfd = (int)fd;
    return c->dirfd;
}

static void slot_name(const struct sc_scan_key *k, char name[8])
{
    unsigned s = (unsigned)(sc_fnv1a(k, sizeof *k, SC_FNV_SEED) % SC_SCANCACHE_SLOTS);
    static const char hex[] = "0123456789abcdef";
    name[0] = hex[(s >> 8) & 15];
    name[1] = hex[(s >> 4) & 15];
    name[2] = hex[s & 15];
    name[3] = 0;
}

int sc_scancache_get(struct sc_scancache *c, const struct sc_scan_key *k)
{
    int dir = cache_dir(c, 0);
    if (dir < 0)
        return -1;
    char name[8];
    slot_name(k, name);
    long fd = sc_sys4(SYS_openat, dir, (long)name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    struct sc_scan_entry e;
    char extra;
    struct iovec iov[2] = {{&e, sizeof e}, {&extra, 1}};
    long n = sc_sys3(SYS_readv, fd, (long)iov, 2);
    sc_sys1(SYS_close, fd);
    if (n != (long)sizeof e || memcmp(e.magic, SC_SCANCACHE_MAGIC, 8) != 0 || e.pad != 0 || e.verdict > 1 ||
        e.check != sc_fnv1a(&e, offsetof(struct sc_scan_entry, check), SC_FNV_SEED) ||
        memcmp(&e.key, k, sizeof *k) != 0)
        return -1; /* none, another key's, cut, corrupt or foreign: scan */
    return (int)e.verdict;
}

void sc_scancache_put(struct sc_scancache *c, const struct sc_scan_key *k, int verdict)
{
    /* Changed too recently: another change in the same clock tick could
     * leave every time in the key as it is (and an inode number reused by
     * a file made in that tick, with its birth time).  Two seconds later
     * any change has a later change time.  Nor a change time ahead of the
     * clock. */
    struct sc_timespec now;
    if (sc_sys2(SYS_clock_gettime, 0 /* CLOCK_REALTIME */, (long)&now) != 0 ||
        (now.tv_sec - k->ctime_s) * 1000000000L + (now.tv_nsec - (long)k->ctime_ns) < c->settle_ns ||
        (now.tv_sec - k->mtime_s) * 1000000000L + (now.tv_nsec - (long)k->mtime_ns) < c->settle_ns)
        return;
    int dir = cache_dir(c, 1);
    if (dir < 0)
        return;
    struct sc_scan_entry e;
    memset(&e, 0, sizeof e);
    memcpy(e.magic, SC_SCANCACHE_MAGIC, 8);
    e.key = *k;
    e.verdict = verdict != 0;
    e.check = sc_fnv1a(&e, offsetof(struct sc_scan_entry, check), SC_FNV_SEED);
    char name[8], tmp[32];
    slot_name(k, name);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", name, sc_getpid());
    long fd = sc_sys4(SYS_openat, dir, (long)tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    long n = sc_sys3(SYS_write, fd, (long)&e, sizeof e);
    sc_sys1(SYS_close, fd);
    if (n != (long)sizeof e || sc_sys4(SYS_renameat, dir, (long)tmp, dir, (long)name) != 0)
        sc_sys3(SYS_unlinkat, dir, (long)tmp, 0);
}

void sc_scancache_end(struct sc_scancache *c)
{
    if (c->dirfd >= 0)
        sc_sys1(SYS_close, c->dirfd);
    if (c->maps_fd >= 0)
        sc_sys1(SYS_close, c->maps_fd);
    c->dirfd = c->maps_fd = -1;
}
