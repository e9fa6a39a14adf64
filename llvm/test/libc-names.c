// The plugin knows system calls by the libc functions that issue them
// (scl_libc_functions[], generated from data/): pread is pread64's wrapper,
// so a write -> pread pair is found under the kernel's name.  (Before, the
// plugin matched kernel names only and pread was never a system call.)
// RUN: %make-plan %s --calls write,pread64 --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
#include <unistd.h>

long wp(int in, int out, char *buf, long n, long off)
{
    write(out, buf, n);                 // sc: write wp
    return pread(in, buf, 4096, off);   // sc: pread64 wp
}
// CHECK: remark: plan cluster #1 (copy-offload): write at libc-names.c:11 -> pread64 at libc-names.c:12 is a clusterable region
