// Loop rotation (§3.3.3): clang's -O2 pipeline rotates the copy loop so
// that the write and the next read share one block, and the loop becomes
// a looped multi-call; at -O0 the loop is not rotated, the read comes first
// on every path, and the remark says why nothing is done.
// RUN: %make-plan %s > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=O2
// RUN: %clang-sc -O0 -mllvm -syscluster-plan=%t.plan %remarks -S -emit-llvm %s -o %t.ll 2>&1 | FileCheck %s --check-prefix=O0
// RUN: FileCheck %s --check-prefix=O0-IR < %t.ll
#include <unistd.h>

void copy(int in, int out)
{
    char buf[4096];
    long n;
    while ((n = read(in, buf, sizeof buf)) > 0)  // sc: read copy
        write(out, buf, n);                      // sc: write copy
}
// O2: remark: plan cluster #1 (copy-offload): the loop of write at rotation.c:16 -> read at rotation.c:15 became one looped multi-call
// O0: remark: plan cluster #1 (copy-offload): write at rotation.c:16 -> read at rotation.c:15 is not a clusterable region: dominance: write at rotation.c:16 does not dominate read at rotation.c:15 (read comes first on every path: in a loop not rotated, the next read is reached through the loop test; loop rotation (§3.3.3, clang -O1 and above) puts it after write)
// O0-NOT: became one looped multi-call
// O0-IR-NOT: __syscluster_write_read_loop

// Near-identical at -O2: the write is checked by a handler that returns,
// an exit from the loop between the write and the next read, so LLVM does
// not rotate the read after the write; the read heads the loop, and the
// checked loop (CheckedLoop.cpp) replaces it: the handler leaves the loop
// for good (`return 1`, joined with the loop's own `return 0` in one phi),
// so the multi-call stops at the rejected write and never resumes.
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -S -emit-llvm %s -o %t.checked.ll 2>&1 | FileCheck %s --check-prefix=CHECKED
// RUN: opt-19 -passes=verify -disable-output %t.checked.ll
// RUN: FileCheck %s --check-prefix=CHECKED-IR < %t.checked.ll
int checked(int in, int out)
{
    char buf[4096];
    long n;
    while ((n = read(in, buf, sizeof buf)) > 0)  // sc: read checked
        if (write(out, buf, n) != n)             // sc: write checked
            return 1;
    return 0;
}
// CHECKED: remark: plan cluster #2 (copy-offload): the loop of read at rotation.c:{{[0-9]+}} -> write at rotation.c:{{[0-9]+}} (its write checked) became one looped multi-call {{.*}} (a short write or a failure: MC_CHECK_FULL)
// CHECKED-IR-LABEL: define {{.*}} @checked(
// CHECKED-IR: [[FIRST:%[0-9]+]] = call i64 @read(
// CHECKED-IR: [[K:%[0-9]+]] = call i64 @__syscluster_write_read_loop_checked(i32 {{%[0-9]+}}, ptr [[BUF:%[0-9]+]], i32 {{%[0-9]+}}, ptr [[BUF]], i64 4096, i64 [[FIRST]], i64 {{[0-9]+}}, i32 1, ptr
// CHECKED-IR: [[REJ:%[0-9]+]] = icmp sgt i64 [[K]], 0
// CHECKED-IR: br i1 [[REJ]], label %[[FAIL:[0-9]+]], label %[[END:[0-9]+]]
// CHECKED-IR: [[FAIL]]:
// CHECKED-IR: br label %[[END]]
// CHECKED-IR: [[END]]:
// CHECKED-IR: phi i32 [ 1, %[[FAIL]] ], [ 0, {{%[0-9]+}} ], [ 0, {{%[0-9]+}} ]
// CHECKED-IR-NOT: call i64 @write(
// CHECKED-IR: {{^}}}
