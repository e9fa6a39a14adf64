// §3.3.1 for pure code: an argument computed between a region's calls from
// values of before the region (clang leaves fs_read's `sext` of an int
// count next to the read) moves in front of the multi-call; one computed
// from a result of the region cannot.
// RUN: %make-plan %s --calls lseek,read --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
#include <stdlib.h>
#include <unistd.h>

int fs_read(int fd, long pos, int size, void *data)
{
    if (lseek(fd, pos, SEEK_SET) != pos) // sc: lseek fs_read
        exit(1);
    int got = read(fd, data, size);      // sc: read fs_read
    if (got < 0)
        exit(2);
    return got;
}
// CHECK: remark: plan cluster #1 (copy-offload): the region lseek at region-moves.c:13 -> read at region-moves.c:15 became one multi-call of 2 calls
// The count's sign extension is in front of the multi-call, stored as
// the read's third argument.
// IR-LABEL: define {{.*}} @fs_read(
// IR: [[SIZE:%[0-9]+]] = sext i32 %2 to i64
// IR-NOT: @lseek(
// IR: store i64 [[SIZE]], ptr
// IR: call i64 @__syscluster_run(

int fs_read_after(int fd, long pos, int size, void *data)
{
    long at = lseek(fd, pos, SEEK_SET);  // sc: lseek fs_read_after
    if (at < 0)
        exit(1);
    return read(fd, data, size + at);    // sc: read fs_read_after
}
// CHECK: remark: plan cluster #2 (copy-offload): lseek at region-moves.c:31 -> read at region-moves.c:34 is not a clusterable region: argument safety: argument 3 of read at region-moves.c:34 is an expression computed between the calls
