// A straight-line region (seed 000 fig. 6, 7): two writes to one descriptor
// become one mc_run, their results in the same variables.  Whether it gains
// comes from the calibration (llvm/test/calibration.json: writev.file fuses
// from 2 calls; a crossing is 200 ns, a first context 100 us, so the region
// pays from 500 runs).  A region no fusion rule merges never gains without
// the kernel module; -syscluster-assume-gain compiles it anyway.
// RUN: %make-plan %s --calls write,write --shape sequence --count 1000 > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
// RUN: %make-plan %s --calls write,write --shape sequence --count 100 > %t.few
// RUN: %clang-sc -mllvm -syscluster-plan=%t.few %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=FEW
// RUN: %clang-sc -mllvm -syscluster-plan=%t.few -mllvm -syscluster-assume-gain %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=ASSUME
#include <unistd.h>

long two(int fd, const char *head, const char *body, long n)
{
    long a = write(fd, head, 16);   // sc: write two
    long b = write(fd, body, n);    // sc: write two
    return a + b;
}
// CHECK: remark: plan cluster #1 (copy-offload): the region write at region.c:17 -> write at region.c:18 became one multi-call of 2 calls (libmulticall mc_run, auto backend); estimated saving at most 100.0 us per run like the recorded one: 1000 runs in the profile x at most 0.2 us saved (1 crossings merged by writev on file descriptors) - 100.0 us first context ({{.*}}calibration.json); the first 500 runs of the region run the calls as written
// FEW: the region write at region.c:17 -> write at region.c:18 is left as it is: no gain: estimated -80.0 us per run: 100 runs in the profile x at most 0.2 us saved (1 crossings merged by writev on file descriptors) - 100.0 us first context ({{.*}}); it pays from 500 runs
// ASSUME: the region write at region.c:17 -> write at region.c:18 became one multi-call of 2 calls (libmulticall mc_run, auto backend); compiled without a gain estimate

// IR-LABEL: define {{.*}} @two(
// IR-NOT: call {{.*}} @write(
// IR: call i64 @__syscluster_run(ptr {{.*}}, i32 2, i64 500, ptr @syscluster.region.runs)
// IR-NOT: call {{.*}} @write(
// IR: ret i64

// Different descriptors: no rule merges the writes.
long other(int fd, int fd2, const char *head, const char *body, long n)
{
    long a = write(fd, head, 16);   // sc: write other
    long b = write(fd2, body, n);   // sc: write other
    return a + b;
}
// CHECK: remark: plan cluster #2 (copy-offload): the region write at region.c:34 -> write at region.c:35 is left as it is: no gain: no fusion rule merges write, write: without the kernel module each call still crosses once
// ASSUME: the region write at region.c:34 -> write at region.c:35 became one multi-call of 2 calls

// Fig. 6: three consecutive calls grow one region.
void three(int fd, const char *a, const char *b, const char *c)
{
    write(fd, a, 1);    // sc: write three
    write(fd, b, 2);    // sc: write three
    write(fd, c, 3);    // sc: write three
}
// CHECK: remark: plan cluster #3 (copy-offload): the region write at region.c:44 -> write at region.c:46 (3 calls of the plan) became one multi-call of 3 calls
