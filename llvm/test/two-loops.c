// Two copy loops in one function, one cluster: both become looped
// multi-calls, the second decided after the first was replaced (the
// function's analyses are invalidated after each replacement).
// RUN: %make-plan %s > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -S -emit-llvm %s -o %t.ll 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=IR < %t.ll
#include <unistd.h>

void twice(int a, int b, int c)
{
    char buf[4096];
    long n;
    while ((n = read(a, buf, sizeof buf)) > 0)  // sc: read twice
        write(b, buf, n);                       // sc: write twice
    while ((n = read(b, buf, sizeof buf)) > 0)  // sc: read twice
        write(c, buf, n);                       // sc: write twice
}
// CHECK-DAG: remark: plan cluster #1 (copy-offload): the loop of write at two-loops.c:14 -> read at two-loops.c:13 became one looped multi-call
// CHECK-DAG: remark: plan cluster #1 (copy-offload): the loop of write at two-loops.c:16 -> read at two-loops.c:15 became one looped multi-call
// IR-LABEL: define {{.*}} @twice(
// IR-COUNT-2: call i64 @__syscluster_write_read_loop(
// IR-NOT: call i64 @write(
