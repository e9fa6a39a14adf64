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
