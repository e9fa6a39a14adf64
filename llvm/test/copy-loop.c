// The copy loop of seed 000 fig. 5: after clang's loop rotation (§3.3.3) the
// write and the next read share one block, and the whole loop becomes one
// looped multi-call (§3.4).  Every step is explained by a remark.
// RUN: %make-plan %s > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
// Distributions build with _FORTIFY_SOURCE: glibc's read wrapper for a
// constant count that fits the buffer is still read, and is clustered.
// RUN: %clang-sc -D_FORTIFY_SOURCE=2 -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=FORTIFY
// FORTIFY: became one looped multi-call
// Without a plan the plugin changes nothing:
// RUN: %clang-sc -S -emit-llvm %s -o - | FileCheck %s --check-prefix=NOPLAN
#include <fcntl.h>
#include <unistd.h>

#define N 4096

int main(int argc, char *argv[])
{
    int inp, out, n;
    char buff[N];

    inp = open(argv[1], O_RDONLY);
    out = creat(argv[2], 0666);
    while ((n = read(inp, &buff, N)) > 0) { // sc: read
        write(out, &buff, n);               // sc: write
    }
    return 0;
}
// REMARK: copy-loop.c:25:17: remark: plan cluster #1 (copy-offload): read at copy-loop.c:25 matched (100 calls recorded there) [-Rpass-analysis=syscluster]
// REMARK: copy-loop.c:26:9: remark: plan cluster #1 (copy-offload): write at copy-loop.c:26 matched
// The guard read (before the rotated loop) and the write: a branch between.
// REMARK: remark: plan cluster #1 (copy-offload): read at copy-loop.c:25 -> write at copy-loop.c:26 is not a clusterable region: linearity: a branch
// The loop's read comes after the write in the rotated body.
// REMARK: remark: plan cluster #1 (copy-offload): read at copy-loop.c:25 -> write at copy-loop.c:26 is not a clusterable region: dominance: read at copy-loop.c:25 does not dominate write at copy-loop.c:26 (it comes after it in the block)
// REMARK: copy-loop.c:26:9: remark: plan cluster #1 (copy-offload): write at copy-loop.c:26 -> read at copy-loop.c:25 is a clusterable region (dominance, safety, convexity, argument safety, linearity hold) [-Rpass-analysis=syscluster]
// REMARK: copy-loop.c:26:9: remark: plan cluster #1 (copy-offload): the loop of write at copy-loop.c:26 -> read at copy-loop.c:25 became one looped multi-call {{.*}} [-Rpass=syscluster]

// IR-LABEL: define {{.*}} @main(
// IR: [[FIRST:%.*]] = call i64 @read(i32 noundef [[IN:%.*]], ptr noundef nonnull [[BUF:%.*]], i64 noundef 4096)
// IR: [[LAST:%.*]] = call i64 @__syscluster_write_read_loop(i32 [[OUT:%.*]], ptr [[BUF]], i32 [[IN]], ptr [[BUF]], i64 4096, i64 [[FIRST]], i64 42)
// IR-NEXT: br label
// IR-NOT: call i64 @write(
// IR-NOT: call i64 @read(
// IR: ret i32

// NOPLAN-NOT: __syscluster
// NOPLAN: call i64 @write(
