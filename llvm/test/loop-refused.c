// The looped multi-call replaces a copy loop only when it proves the result
// the same; each near-identical loop below fails one proof and stays as it
// was, with a remark that says which.
// RUN: %make-plan %s > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
#include <unistd.h>

void progress(long n);

// The program counts what it wrote: the write's result is used.
long counted(int in, int out, char *buf)
{
    long n, total = 0;
    while ((n = read(in, buf, 4096)) > 0)   // sc: read counted
        total += write(out, buf, n);        // sc: write counted
    return total;
}
// CHECK: remark: plan cluster #1 (copy-offload): the loop of write at loop-refused.c:16 -> read at loop-refused.c:15 is left as it is: safety: a value other than the read's result is carried around the loop

// Two buffers: nothing to fuse, the multi-call would only add bookkeeping.
void two_buffers(int in, int out, char *a, char *b)
{
    long n;
    while ((n = read(in, a, 4096)) > 0)     // sc: read two_buffers
        write(out, b, n);                   // sc: write two_buffers
}
// CHECK: remark: plan cluster #2 (copy-offload): the loop of write at loop-refused.c:26 -> read at loop-refused.c:25 is left as it is: no gain: the write and the read use different buffers

// A block size only known at run time: the write's count is not provably
// the read's result after the int conversion.
void any_size(int in, int out, char *buf, long bs)
{
    int n;
    while ((n = read(in, buf, bs)) > 0)     // sc: read any_size
        write(out, buf, n);                 // sc: write any_size
}
// CHECK: remark: plan cluster #3 (copy-offload): the loop of write at loop-refused.c:36 -> read at loop-refused.c:35 is left as it is: argument safety: the read's count is not a constant

// User code in the loop body.
void reporting(int in, int out, char *buf)
{
    long n;
    while ((n = read(in, buf, 4096)) > 0) { // sc: read reporting
        write(out, buf, n);                 // sc: write reporting
        progress(n);
    }
}
// CHECK: remark: plan cluster #4 (copy-offload): write at loop-refused.c:45 -> read at loop-refused.c:44 is not a clusterable region: safety: call to progress at loop-refused.c:46 lies between the calls

// CHECK-NOT: became one looped multi-call
// IR-NOT: __syscluster_write_read_loop
