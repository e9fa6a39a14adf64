// Loads between the calls of a region move in front of the multi-call
// (§3.3.1) only when no earlier call of the region may write what they
// read and the address is known to be loadable there (a load that a failed
// checked call would have skipped must not fault before it); errno, which
// the wrappers set, never moves.
// RUN: %make-plan %s --calls write,write --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
#include <errno.h>
#include <unistd.h>

struct rec { const char *p; long n; };
struct rec G;

long global(int fd, const char *a)
{
    write(fd, a, 1);               // sc: write global
    return write(fd, G.p, G.n);    // sc: write global
}
// CHECK: remark: plan cluster #1 (copy-offload): the region write at region-loads.c:16 -> write at region-loads.c:17 became one multi-call of 2 calls

long pointer(int fd, const char *a, struct rec *r)
{
    write(fd, a, 1);               // sc: write pointer
    return write(fd, r->p, r->n);  // sc: write pointer
}
// CHECK: remark: plan cluster #2 (copy-offload): the region write at region-loads.c:23 -> write at region-loads.c:24 is left as it is: safety: load at region-loads.c:24 cannot be proved safe to load before the region

long error_number(int fd, const char *a, const char *b)
{
    write(fd, a, 1);               // sc: write error_number
    return write(fd, b, errno);    // sc: write error_number
}
// CHECK: remark: plan cluster #3 (copy-offload): write at region-loads.c:30 -> write at region-loads.c:31 is not a clusterable region: safety: call to __errno_location at region-loads.c:31 lies between the calls
// CHECK-NOT: region write at region-loads.c:30 -> write at region-loads.c:31 became
