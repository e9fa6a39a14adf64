// The replacement's own proofs (fig. 7), beyond the five conditions, with
// -syscluster-assume-gain so that only they decide:
//  - a result reference: the write's count is the read's result, which is
//    checked (a failed read leaves for err); unchecked, a multi-call would
//    pass -errno where libc passes -1: refused;
//  - only libc wrappers that issue the call itself with the same arguments
//    are run as system calls (glibc's fstat issues newfstatat): refused;
//  - a load between the calls that the first call may write cannot move
//    before the region: refused (convexity, by the pair's check).
// RUN: %make-plan %s --calls read,write --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
// RUN: %make-plan %s --calls newfstatat,read --shape sequence > %t.fstat
// RUN: %clang-sc -mllvm -syscluster-plan=%t.fstat -mllvm -syscluster-assume-gain %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=FSTAT
#include <err.h>
#include <sys/stat.h>
#include <unistd.h>

long ref(int in, int out, char *buf)
{
    long n = read(in, buf, 4096);   // sc: read ref
    if (n < 0)
        err(1, "read");
    return write(out, buf, n);      // sc: write ref
}
// CHECK: remark: plan cluster #1 (copy-offload): the region read at region-refs.c:21 -> write at region-refs.c:24 became one multi-call of 2 calls (libmulticall mc_run, auto backend; checked, its error handler kept (§3.3.2): read at region-refs.c:21)
// IR-LABEL: define {{.*}} @ref(
// The read is checked (flags 1), the write's third argument refers to call 0 (ref byte 1).
// IR: store i32 1, ptr
// IR: [[REF:%.*]] = getelementptr inbounds [2 x { i64, [6 x i64], i64, i32, [6 x i8] }], ptr %{{.*}}, i32 0, i32 1, i32 4, i32 2
// IR-NEXT: store i8 1, ptr [[REF]]
// IR: call i64 @__syscluster_run(ptr {{.*}}, i32 2, i64 0,
// IR-NOT: call {{.*}} @read(
// IR-NOT: call {{.*}} @write(
// IR: call void (i32, ptr, ...) @err(

long unchecked(int in, int out, char *buf)
{
    long n = read(in, buf, 4096);   // sc: read unchecked
    return write(out, buf, n);      // sc: write unchecked
}
// CHECK: remark: plan cluster #2 (copy-offload): the region read at region-refs.c:39 -> write at region-refs.c:40 is left as it is: argument safety: argument 3 of call to write at region-refs.c:40 is the result of call to read at region-refs.c:39, which is not checked

long stat_read(int fd, struct stat *st, char *buf)
{
    if (fstat(fd, st) < 0)          // sc: newfstatat stat_read
        err(1, "fstat");
    return read(fd, buf, 512);      // sc: read stat_read
}
// FSTAT: remark: plan cluster #3 (copy-offload): the region newfstatat at region-refs.c:46 -> read at region-refs.c:48 is left as it is: IR not understood: call to fstat at region-refs.c:46 is not a libc wrapper that issues newfstatat with the same arguments

long seek_read(int fd, char *buf)
{
    if (lseek(fd, 4096, SEEK_SET) < 0) // sc: lseek seek_read
        err(1, "lseek");
    return read(fd, buf, 512);         // sc: read seek_read
}
