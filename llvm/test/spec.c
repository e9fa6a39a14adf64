// Value specialization (§3.4, seed 004 §4.2): a copy loop whose block size
// is a variable cannot be the looped multi-call (the write's count is
// proved to be the read's result only for a known count).  Where the
// plan's value profile gives the read's count (`args`, docs/PLAN_FORMAT.md:
// one value in most calls), a guard sends that count to the multi-call and
// every other to the loop as written, which stays.
// RUN: %make-plan %s --function copy --arg read.count=4096 > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
// For this host (the lit calibration), the gain is priced for the profiled
// count: 4096 B blocks pay, 65536 B ones (a larger block saves only its two
// crossings) do not, with the profile's 100 blocks.
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=GAIN
// RUN: %make-plan %s --function copy --arg read.count=65536 > %t.big.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.big.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=BIG
// GAIN: became one looped multi-call {{.*}} specialized (§3.4) for the read's count 4096, {{.*}} saved per block of 4096 B
// BIG: is left as it is: no gain: {{.*}} saved per block of 65536 B
// The same loop without a value profile: refused, and the IR unchanged.
// RUN: %make-plan %s --function copy > %t.noval.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.noval.plan -mllvm -syscluster-assume-gain %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOVAL
// RUN: %clang-sc -mllvm -syscluster-plan=%t.noval.plan -mllvm -syscluster-assume-gain -S -emit-llvm %s -o - | FileCheck %s --check-prefix=NOVAL-IR
#include <stddef.h>
#include <unistd.h>

long copy(int in, int out, char *buf, size_t bs)
{
    long n;

    while ((n = read(in, buf, bs)) > 0) // sc: read
        write(out, buf, n);             // sc: write
    return n;
}
// CHECK: remark: plan cluster #1 (copy-offload): the loop of write at spec.c:30 -> read at spec.c:29 became one looped multi-call (libmulticall mc_run_loop, auto backend: copy_file_range between regular files, the calls as they are elsewhere); specialized (§3.4) for the read's count 4096, the plan's value profile: a guard runs the loop as written for any other count;

// The guard read, then the guard on the count: 4096 goes to the multi-call
// (with the constant), anything else to the original loop, which stays.
// IR-LABEL: define {{.*}} @copy(
// IR: [[FIRST:%[0-9]+]] = tail call i64 @read(i32 noundef [[IN:%[0-9]+]], ptr noundef [[BUF:%[0-9]+]], i64 noundef [[BS:%[0-9]+]])
// IR: [[EQ:%[0-9]+]] = icmp eq i64 [[BS]], 4096
// IR-NEXT: br i1 [[EQ]], label %[[FAST:[0-9]+]], label %[[LOOP:[0-9]+]]
// IR: [[FAST]]:
// IR: [[LAST:%[0-9]+]] = call i64 @__syscluster_write_read_loop(i32 {{%[0-9]+}}, ptr [[BUF]], i32 [[IN]], ptr [[BUF]], i64 4096, i64 [[FIRST]], i64 0)
// IR: [[LOOP]]:
// IR: call i64 @write(
// IR: call i64 @read(i32 noundef [[IN]], ptr noundef [[BUF]], i64 noundef [[BS]])
// IR: phi i64 {{.*}}[ [[LAST]], %[[FAST]] ]

// NOVAL: remark: plan cluster #1 (copy-offload): the loop of write at spec.c:30 -> read at spec.c:29 is left as it is: argument safety: the read's count is not a constant between 1 and 2^31-1 (nor one the plan's value profile gives, computed before the loop): a count computed before the loop is replaced only for the value the profile gives (§3.4, behind a guard), since the pass proves the write's count and prices the multi-call (its saving per block) for one known count; the runtime itself takes any count
// NOVAL-IR-NOT: syscluster
