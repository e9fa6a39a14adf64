// Condition 3, convexity: everything between the calls is in the region or
// moves out of its way (§3.3.1).  A load the calls cannot write moves; a store
// to an external global does not (a static one does: interchange.c).
// RUN: %make-plan %s --calls write,read --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
#include <unistd.h>

int in_fd;
long blocks;

long ok(int out, char *buf, long n)
{
    write(out, buf, n);              // sc: write ok
    return read(in_fd, buf, 4096);   // sc: read ok
}
// CHECK: remark: plan cluster #1 (copy-offload): write at convexity.c:13 -> read at convexity.c:14 is a clusterable region

long bad(int out, char *buf, long n)
{
    write(out, buf, n);              // sc: write bad
    blocks++;
    return read(in_fd, buf, 4096);   // sc: read bad
}
// CHECK: remark: plan cluster #2 (copy-offload): write at convexity.c:20 -> read at convexity.c:22 is not a clusterable region: convexity: store at convexity.c:21 writes blocks, a global other translation units see

// The accepted region is replaced by one mc_run (fig. 7); the refused one is not.
// RUN: %clang-sc -mllvm -syscluster-assume-gain -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=MC
// MC: remark: plan cluster #1 (copy-offload): the region write at convexity.c:13 -> read at convexity.c:14 became one multi-call of 2 calls
// MC-NOT: plan cluster #2 (copy-offload): the region
