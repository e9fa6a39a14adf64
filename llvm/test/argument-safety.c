// Condition 4, argument safety: an argument is a constant, a value from
// before the region or an earlier call's result — not an expression
// computed between the calls.
// RUN: %make-plan %s --calls write,read --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
#include <unistd.h>

long ok(int in, int out, char *buf, long n)
{
    long w = write(out, buf, n);     // sc: write ok
    return read(in, buf, w);         // sc: read ok
}
// CHECK: remark: plan cluster #1 (copy-offload): write at argument-safety.c:10 -> read at argument-safety.c:11 is a clusterable region

long bad(int in, int out, char *buf, long n)
{
    long w = write(out, buf, n);     // sc: write bad
    return read(in, buf, w * 2);     // sc: read bad
}
// CHECK: remark: plan cluster #2 (copy-offload): write at argument-safety.c:17 -> read at argument-safety.c:18 is not a clusterable region: argument safety: argument 3 of read at argument-safety.c:18 is an expression computed between the calls

// The pair is clusterable, but the multi-call would pass the unchecked
// write's -errno where libc passes -1: the replacement refuses it
// (region-refs.c has the checked form, replaced).
// RUN: %clang-sc -mllvm -syscluster-assume-gain -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=MC
// MC: remark: plan cluster #1 (copy-offload): the region write at argument-safety.c:10 -> read at argument-safety.c:11 is left as it is: argument safety: argument 3 of call to read at argument-safety.c:11 is the result of call to write at argument-safety.c:10, which is not checked
// MC-NOT: plan cluster #2 (copy-offload): the region
