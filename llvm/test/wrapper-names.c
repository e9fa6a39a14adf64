// A call is named by the system call glibc's function issues, as the
// recorder names it in the plan (data/syscall_properties.tsv, libc
// column): pread is pread64.  Two preads on one descriptor could be merged
// by preadv, which the lit calibration does not measure; compiled for a
// host with the kernel module they become one multi-call.
// RUN: %make-plan %s --calls pread64,pread64 --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=MC
#include <unistd.h>

long two(int fd, char *a, char *b)
{
    long x = pread(fd, a, 512, 0);     // sc: pread64 two
    long y = pread(fd, b, 512, 512);   // sc: pread64 two
    return x + y;
}
// CHECK: remark: plan cluster #1 (copy-offload): pread64 at wrapper-names.c:13 matched
// CHECK: the region pread64 at wrapper-names.c:13 -> pread64 at wrapper-names.c:14 is left as it is: no gain: the fusion rule for pread64, pread64 (preadv) pays on no descriptor on this host
// MC: the region pread64 at wrapper-names.c:13 -> pread64 at wrapper-names.c:14 became one multi-call of 2 calls
