// syscall(2) with a constant number is the system call of that number
// (matched under its kernel name, and a region's call like any other);
// with a number only known at run time it is no system call to the pass,
// so a plan location naming it finds nothing there.  glibc's syscall()
// returns -1 and sets errno as the wrappers do, but it is not one of them:
// a region holding it is proved and left as it is.
// RUN: %make-plan %s --calls write,read --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain %remarks -S -emit-llvm %s -o %t.ll 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=IR < %t.ll
#include <sys/syscall.h>
#include <unistd.h>

long constant(int in, int out, char *buf, long n)
{
    syscall(SYS_write, out, buf, n);            // sc: write constant
    return syscall(SYS_read, in, buf, 4096);    // sc: read constant
}
// CHECK: remark: plan cluster #1 (copy-offload): write at syscall-number.c:15 matched
// CHECK: remark: plan cluster #1 (copy-offload): read at syscall-number.c:16 matched
// CHECK: remark: plan cluster #1 (copy-offload): write at syscall-number.c:15 -> read at syscall-number.c:16 is a clusterable region
// CHECK: remark: plan cluster #1 (copy-offload): the region write at syscall-number.c:15 -> read at syscall-number.c:16 is left as it is: IR not understood: call to syscall at syscall-number.c:15 is not a libc wrapper

long variable(int in, int out, char *buf, long n, long nr)
{
    syscall(nr, out, buf, n);                   // sc: write variable
    return syscall(SYS_read, in, buf, 4096);    // sc: read variable
}
// CHECK: remark: plan cluster #2 (copy-offload): stale plan: no call to write at syscall-number.c:25 in variable in this source; left as it is
// CHECK-NOT: plan cluster #2 (copy-offload): {{.*}} is a clusterable region
// IR-LABEL: define {{.*}} @constant(
// IR-NOT: __syscluster_run
// IR-LABEL: define {{.*}} @variable(
// IR-NOT: __syscluster_run
