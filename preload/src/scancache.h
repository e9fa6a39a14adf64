/* The scan cache's entry: one file per slot under
 * $XDG_CACHE_HOME/syscluster/scan-1/ (scancache.c; docs/RUNTIME.md,
 * "The scan cache").  Shared with test/scancache.c, which corrupts entries
 * on purpose.  Fixed layout, no implicit padding: every byte of an entry
 * is written (and checked). */
#ifndef SC_SCANCACHE_H
#define SC_SCANCACHE_H

#include <stddef.h>
#include <stdint.h>

#define SC_SCANCACHE_DIR "scan-1"
#define SC_SCANCACHE_SLOTS 4096 /* files at most: a direct-mapped cache */
#define SC_SCANCACHE_MAGIC "scscan1\n"

/* What identifies the bytes that were scanned. */
struct sc_scan_key {
    uint8_t scanner[32];  /* this library's build-id: another scanner, another verdict */
    uint8_t build_id[32]; /* the object's NT_GNU_BUILD_ID, zero-padded (none: all zero) */
    uint32_t scanner_len, build_id_len;
    uint32_t dev_major, dev_minor;
    uint64_t ino, size;
    int64_t mtime_s, ctime_s, btime_s;
    uint32_t mtime_ns, ctime_ns, btime_ns, has_btime;
    uint64_t layout; /* a hash of the object's program headers (segments as loaded) */
};

struct sc_scan_entry {
    char magic[8];
    struct sc_scan_key key;
    uint32_t verdict; /* 0: no raw system call; 1: raw system calls */
    uint32_t pad;     /* zero */
    uint64_t check;   /* FNV-1a of every byte before it */
};

_Static_assert(sizeof(struct sc_scan_key) == 32 + 32 + 8 + 8 + 16 + 24 + 16 + 8, "no padding in the key");
_Static_assert(sizeof(struct sc_scan_entry) == 8 + sizeof(struct sc_scan_key) + 16, "no padding in an entry");

static inline uint64_t sc_fnv1a(const void *p, unsigned long n, uint64_t h)
{
    const uint8_t *b = p;
    for (unsigned long i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}
#define SC_FNV_SEED 0xcbf29ce484222325ULL

/* A verdict is kept only for a file whose change time is this much in the
 * past: a change within the same tick of a coarse clock (kernels before
 * 6.13 stamp files with one) could leave the change time as it was. */
#define SC_SCANCACHE_SETTLE_NS 2000000000L

/* Objects with less code than this are scanned, not looked up: scanning
 * them costs less than a lookup (~0.5 us per KiB scanned against ~10 us). */
#define SC_SCANCACHE_MIN_TEXT (32 * 1024)

/* One scan's use of the cache (scan.c): the directory, opened at the
 * first entry read or written, and /proc/self/maps, opened at the first
 * key (asked with PROCMAP_QUERY, or read). */
struct sc_scancache {
    int dirfd;     /* -1: not open */
    int off;       /* no cache for this scan */
    int tried;     /* the switches were read */
    int all;       /* SYSCLUSTER_TEST_SCAN_CACHE_ALL: small objects too (the tests' programs) */
    long settle_ns; /* a file changed more recently than this is not kept */
    int maps_fd;   /* -1: not open */
    long maps_len; /* the text read of it; -1: not read */
    /* The device of the last object whose file system was asked (fstatfs),
     * and whether it is local: the next objects on that device (most
     * libraries share one) need only a statx of their path. */
    int fs_known;
    uint32_t fs_major, fs_minor;
    int fs_local;
};
#define SC_SCANCACHE_INIT {-1, 0, 0, 0, 0, -1, -1, 0, 0, 0, 0}

struct dl_phdr_info;
/* Before the scan's dl_iterate_phdr, with this library's load address
 * (sc_self_base). */
void sc_scancache_begin(struct sc_scancache *c, const void *self_base) __attribute__((visibility("hidden")));
/* 1 and the key in k if the object's bytes can be keyed. */
int sc_scancache_key(struct sc_scancache *c, const struct dl_phdr_info *info, struct sc_scan_key *k)
    __attribute__((visibility("hidden")));
/* The verdict kept for k (0 or 1), or -1. */
int sc_scancache_get(struct sc_scancache *c, const struct sc_scan_key *k) __attribute__((visibility("hidden")));
void sc_scancache_put(struct sc_scancache *c, const struct sc_scan_key *k, int verdict)
    __attribute__((visibility("hidden")));
void sc_scancache_end(struct sc_scancache *c) __attribute__((visibility("hidden")));

#endif
