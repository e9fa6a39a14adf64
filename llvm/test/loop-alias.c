// Argument safety decided with alias analysis: a descriptor loaded from
// memory inside the loop is the same in every iteration when the loop's
// read cannot write it; the load then moves in front of the loop (§3.3.1).
// RUN: %make-plan %s > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
#include <unistd.h>

struct copier {
    char buf[4096];
    int out;
};
struct copier c;

// The read fills buf[0..4096): it cannot write c.out.
void apart(int in)
{
    long n;
    while ((n = read(in, c.buf, 4096)) > 0)   // sc: read apart
        write(c.out, c.buf, n);               // sc: write apart
}
// CHECK: remark: plan cluster #1 (copy-offload): the loop of write at loop-alias.c:20 -> read at loop-alias.c:19 became one looped multi-call
// IR-LABEL: define {{.*}} @apart(
// IR: [[OUT:%.*]] = load i32, ptr getelementptr inbounds {{.*}}@c
// IR-NEXT: call i64 @__syscluster_write_read_loop(i32 [[OUT]], ptr {{.*}}@c, i32 %{{.*}}, ptr {{.*}}@c, i64 4096,

// The read asks for 4100 bytes: it may write c.out.
void overlapping(int in)
{
    long n;
    while ((n = read(in, c.buf, 4100)) > 0)   // sc: read overlapping
        write(c.out, c.buf, n);               // sc: write overlapping
}
// CHECK: remark: plan cluster #2 (copy-offload): the loop of write at loop-alias.c:32 -> read at loop-alias.c:31 is left as it is: argument safety: load at loop-alias.c:32 reads memory the loop's read may write
// IR-LABEL: define {{.*}} @overlapping(
// IR-NOT: __syscluster_write_read_loop
// IR: ret void
