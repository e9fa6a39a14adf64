// Never a slower program (issue 12, Must 7): a loop of one write is
// batched only where the batches gain, priced as advise's batch-writes
// rule prices it, from the syscall costs `syscluster calibrate` measured
// beside libmulticall's calibration (Inputs/batch-costs/calibration.json):
// a run of n writes saves n - 1 writes' fixed work and pays
// ceil((n - 1) / 1024) + 1 writevs at that fixed work and one fstat.
// A 512-B block is below the write line's 4 KiB (less an eighth): its
// fixed work is the crossing, 0.2 us; a 4 KiB one the line's 1 us; the
// fstat (newfstatat on a descriptor) 0.6 us.  512 B: (n - 1 - 2) x 0.2 -
// 0.6 > 0 from n = 7; 4 KiB: (n - 1 - 2) x 1 - 0.6 > 0 from n = 4.
// RUN: %make-plan %s --rule batch-writes --calls write --shape run --count 6 > %t.6.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.6.plan -mllvm -syscluster-calibration=%S/Inputs/batch-costs/multicall-calibration.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=SIX
// RUN: %make-plan %s --rule batch-writes --calls write --shape run --count 7 > %t.7.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.7.plan -mllvm -syscluster-calibration=%S/Inputs/batch-costs/multicall-calibration.json %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=SEVEN
// -syscluster-assume-gain (syscluster cc --assume-gain): batched anyway.
// RUN: %clang-sc -mllvm -syscluster-plan=%t.6.plan -mllvm -syscluster-calibration=%S/Inputs/batch-costs/multicall-calibration.json -mllvm -syscluster-assume-gain %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=ASSUME
// Not priced: no break-even for the runtime (its own three iterations).
// RUN: %clang-sc -mllvm -syscluster-plan=%t.6.plan -mllvm -syscluster-calibration=%S/Inputs/batch-costs/multicall-calibration.json -mllvm -syscluster-assume-gain -S -emit-llvm %s -o - | FileCheck %s --check-prefix=ASSUME-IR
// ASSUME-IR-LABEL: define {{.*}} @small(
// ASSUME-IR: call i64 @__syscluster_batch_write(i32 %{{[0-9]+}}, ptr %{{[0-9]+}}, i64 512, i64 %{{[0-9.a-z]+}}, i64 0, ptr
// Without the syscall costs beside it (the lit tests' calibration.json):
// libmulticall's crossing for all three, 0.2 us: (n - 3) x 0.2 - 0.2 > 0
// from n = 5.
// RUN: %clang-sc -mllvm -syscluster-plan=%t.6.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=CROSSING
// A loop refused for no gain is left exactly as it was: no batch, and the
// bound clang reads in every iteration stays in the loop.
// RUN: %clang-sc -mllvm -syscluster-plan=%t.6.plan -mllvm -syscluster-calibration=%S/Inputs/batch-costs/multicall-calibration.json -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
#include <stdlib.h>
#include <unistd.h>

void die(const char *msg) __attribute__((noreturn));

void small(int fd, const char *buf, int k)
{
    for (int x = 0; x < k; x++)
        if (write(fd, buf, 512) != 512) // sc: write small
            die("write");
}
// SIX: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at gain-batch-write.c:[[@LINE-3]] is left as it is: no gain: estimated 0.0 us per run of the loop: 6 writes recorded at gain-batch-write.c:[[@LINE-3]] in the profile, as one run: 5 writes x 0.2 us fixed work saved - 2 writevs x 0.2 us - 0.6 us fstat (write: crossing, fstat: newfstatat.fd ({{.*}}Inputs/batch-costs/calibration.json)); it pays from 7 iterations
// SEVEN: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at gain-batch-write.c:[[@LINE-4]] (checked: a short write or a failure calls its handler) is written in batches: {{.*}}; estimated saving 0.2 us per run of the loop like the recorded one: 7 writes recorded at gain-batch-write.c:[[@LINE-4]] in the profile, as one run: 6 writes x 0.2 us fixed work saved - 2 writevs x 0.2 us - 0.6 us fstat (write: crossing, fstat: newfstatat.fd ({{.*}})); it pays from 7 iterations: a run of fewer runs the loop as written
// ASSUME: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at gain-batch-write.c:[[@LINE-5]] ({{.*}}) is written in batches: {{.*}}; compiled without a gain estimate (-syscluster-assume-gain: a host with the kernel module, where the loop is one crossing)
// CROSSING: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at gain-batch-write.c:[[@LINE-6]] ({{.*}}) is written in batches: {{.*}}; estimated saving 0.4 us per run of the loop like the recorded one: 6 writes recorded at {{.*}}: 5 writes x 0.2 us fixed work saved - 2 writevs x 0.2 us - 0.2 us fstat (the crossing of {{.*}}calibration.json for each: no syscall costs beside it); it pays from 5 iterations: a run of fewer runs the loop as written

void big(int fd, const char *buf, int k)
{
    for (int x = 0; x < k; x++)
        if (write(fd, buf, 4096) != 4096) // sc: write big
            die("write");
}
// SIX: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at gain-batch-write.c:[[@LINE-3]] ({{.*}}) is written in batches: {{.*}}; estimated saving 2.4 us per run of the loop like the recorded one: 6 writes recorded at {{.*}}: 5 writes x 1.0 us fixed work saved - 2 writevs x 1.0 us - 0.6 us fstat (write: write.file fixed, fstat: newfstatat.fd ({{.*}})); it pays from 4 iterations: a run of fewer runs the loop as written

// A constant trip count is the iterations of every run, whatever the
// profile recorded (not unrolled, as a loop of more iterations would not be).
void five(int fd, const char *buf)
{
#pragma clang loop unroll(disable)
    for (int x = 0; x < 5; x++)
        if (write(fd, buf, 512) != 512) // sc: write five
            die("write");
}
// SEVEN: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at gain-batch-write.c:[[@LINE-3]] is left as it is: no gain: estimated -0.2 us per run of the loop: 5 iterations (a constant trip count): 4 writes x 0.2 us fixed work saved - 2 writevs x 0.2 us - 0.6 us fstat ({{.*}}); it pays from 7 iterations
// ASSUME: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at gain-batch-write.c:[[@LINE-4]] ({{.*}}) is written in batches

// mkfs.fat's loop, its bound a global read in every iteration.
static int dev, reserved_sectors;
static char *blank;
void setup(int fd, char *b, int n) { dev = fd; blank = b; reserved_sectors = n; }
void reserved(void)
{
    for (int x = 0; x < reserved_sectors; ++x)
        if (write(dev, blank, 512) != 512) // sc: write reserved
            die("reserved sector");
}
// SIX: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at gain-batch-write.c:[[@LINE-3]] is left as it is: no gain
// IR-LABEL: define {{.*}} @small(
// IR-NOT: __syscluster_batch_write
// IR-LABEL: define {{.*}} @big(
// IR: call i64 @__syscluster_batch_write(i32 %{{[0-9]+}}, ptr %{{[0-9]+}}, i64 4096, i64 %{{[0-9.a-z]+}}, i64 4, ptr
// IR-LABEL: define {{.*}} @reserved(
// IR-NOT: __syscluster_batch_write
// The latch reads the bound again, as clang left it.
// IR: add nuw nsw i32
// IR-NOT: br
// IR: load i32, ptr @reserved_sectors
// IR-NOT: br
// IR: icmp slt i32
// IR-NOT: __syscluster_batch_write
// IR: call i64 @write(
// IR-NOT: __syscluster_batch_write
// IR: }
