/* Why nothing was deferred (-v).  With SYSCLUSTER_VERBOSE, the write
 * wrappers (wrap_fd.c) count each write/writev the library saw and, for
 * those that went straight to the kernel, why as far as the library can
 * tell: no size to defer below (coalescing off, or not a planned write
 * site), the write as large as that size or larger, or what the
 * descriptor is (pipe, terminal or device, socket, a regular file that
 * cannot be deferred).  At exit a process that deferred nothing says why
 * in one "stats" line, before the counters of sc_fini (process.c). */
#include "rt.h"
#include "sys.h"

#include <stdio.h>
#include <sys/stat.h>

enum { W_SEEN, W_NO_SIZE, W_LARGE, W_PIPE, W_DEVICE, W_SOCKET, W_FILE, W_OTHER, W_N };
static _Atomic uint64_t why[W_N];
static _Atomic size_t largest_threshold;

void sc_why_write(int fd, size_t n, size_t threshold, long r)
{
    atomic_fetch_add_explicit(&why[W_SEEN], 1, memory_order_relaxed);
    if (r != SC_DIRECT)
        return;
    int w = W_OTHER;
    if (threshold == 0) {
        w = W_NO_SIZE;
    } else if (n >= threshold) {
        w = W_LARGE;
        if (threshold > atomic_load_explicit(&largest_threshold, memory_order_relaxed))
            atomic_store_explicit(&largest_threshold, threshold, memory_order_relaxed);
    } else {
        struct stat st;
        if (sc_sys2(SYS_fstat, fd, (long)&st) == 0)
            w = S_ISFIFO(st.st_mode)   ? W_PIPE
                : S_ISCHR(st.st_mode)  ? W_DEVICE
                : S_ISSOCK(st.st_mode) ? W_SOCKET
                : S_ISREG(st.st_mode)  ? W_FILE
                                       : W_OTHER;
    }
    atomic_fetch_add_explicit(&why[w], 1, memory_order_relaxed);
}

/* Before sc_fini (destructor 101), which writes out what is pending. */
__attribute__((destructor(102))) static void sc_why_report(void)
{
    if (!G.verbose || sc_mode() == SC_PASS)
        return; /* SC_PASS: the library already reported why it runs unchanged */
    uint64_t deferred = 0;
    for (unsigned i = 0; G.slots && i < SC_NSLOTS; i++)
        deferred += G.slots[i].n_writes;
    if (deferred)
        return;
    uint64_t c[W_N];
    for (int i = 0; i < W_N; i++)
        c[i] = atomic_load(&why[i]);
    if (G.threshold == 0 && !sc_planned(SC_PK_WRITE)) {
        sc_report("stats", "nothing deferred: coalescing is off (no --coalesce-writes) and the plan, if any, has no "
                           "write site it could resolve");
        return;
    }
    if (c[W_SEEN] == 0) {
        sc_report("stats", "nothing deferred: no write or writev went through libc (none made, or made as raw "
                           "system calls, by a static binary or a language runtime of its own such as Go's)");
        return;
    }
    char msg[512];
    int len = snprintf(msg, sizeof msg, "nothing deferred: of %llu write/writev calls", (unsigned long long)c[W_SEEN]);
    static const char *what[W_N] = {
        [W_NO_SIZE] = "not at a planned write site",
        [W_LARGE] = "as large as the size to defer below or larger",
        [W_PIPE] = "to pipes",
        [W_DEVICE] = "to terminals or devices",
        [W_SOCKET] = "to sockets",
        [W_FILE] = "short, to regular files the runtime does not defer (each file's first short writes go "
                   "straight through; opened O_SYNC, O_DIRECT or read-only, memory-mapped, or on a file system "
                   "not known safe)",
        [W_OTHER] = "to other descriptors",
    };
    const char *sep = ", ";
    for (int i = W_NO_SIZE; i < W_N && len > 0 && (size_t)len < sizeof msg; i++) {
        if (!c[i])
            continue;
        if (i == W_LARGE)
            len += snprintf(msg + len, sizeof msg - (size_t)len, "%s%llu %s (%zu B)", sep, (unsigned long long)c[i],
                            what[i], atomic_load(&largest_threshold));
        else
            len += snprintf(msg + len, sizeof msg - (size_t)len, "%s%llu %s", sep, (unsigned long long)c[i], what[i]);
    }
    sc_report("stats", "%s", msg);
}
