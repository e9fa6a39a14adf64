// A loop of one write with the same arguments in every iteration (advise's
// batch-writes; dosfstools' mkfs.fat clears sectors so): its iterations are
// written by writev batches (__syscluster_batch_write) in front of the
// loop, which resumes at the first iteration a batch did not do — the
// real write then gives the program its result, errno and handler.  Each
// accepted loop beside near-identical ones refused, with the reason.
// RUN: %make-plan %s --rule batch-writes --calls write --shape run > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -S -emit-llvm %s -o %t.ll
// RUN: opt-19 -passes=verify -disable-output %t.ll
// RUN: FileCheck %s --check-prefix=IR < %t.ll
#include <stdlib.h>
#include <unistd.h>

void die(const char *msg, ...) __attribute__((noreturn));
void progress(int x);
static int dev;
static char *blank;
static int sector_size;
void setup(int fd, char *b, int s) { dev = fd; blank = b; sector_size = s; }

// mkfs.fat's writebuf: globals read in every iteration, `!= size` to die.
void reserved(int n)
{
    for (int x = 0; x < n; ++x) {
        int size = sector_size;
        if (write(dev, blank, size) != size) // sc: write reserved
            die("failed whilst writing %s", "reserved sector");
    }
}
// CHECK: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at batch-write.c:[[@LINE-4]] (checked: a short write or a failure calls its handler) is written in batches: __syscluster_batch_write
// IR-LABEL: define {{.*}} @reserved(
// The runs of fewer iterations than the estimate's break-even (the lit
// calibration's crossing for a write, a writev and the fstat: 5) run as
// written.
// IR: [[R:%[0-9]+]] = call i64 @__syscluster_batch_write(i32 %{{[0-9]+}}, ptr %{{[0-9]+}}, i64 %{{[0-9]+}}, i64 [[TRIP:%[0-9]+]], i64 5, ptr [[DONE:%[0-9]+]])
// IR: [[N:%[0-9]+]] = load i64, ptr [[DONE]]
// IR: icmp eq i64 [[N]], [[TRIP]]
// The write's result in the first iteration the loop resumes at: the
// batch's (a block written in part), or the real write's.
// IR: [[PEND:%[0-9]+]] = phi i64 [ [[R]], %{{[0-9]+}} ], [ -1, %{{[0-9]+}} ]
// IR: icmp slt i64 [[PEND]], 0
// IR: call i64 @write(
// IR: phi i64 [ [[PEND]], %{{[0-9]+}} ], [ %{{[0-9]+}}, %{{[0-9]+}} ]

// mkfs.fat's other loop: the bound a global read in every iteration,
// which the loop does not write: read once in front of it.
static int reserved_sectors;
void set_reserved(int n) { reserved_sectors = n; }
void reserved_global(void)
{
    for (int x = 0; x < reserved_sectors; ++x) {
        int size = sector_size;
        if (write(dev, blank, size) != size) // sc: write reserved_global
            die("failed whilst writing %s", "reserved sector");
    }
}
// CHECK: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at batch-write.c:[[@LINE-4]] (checked: a short write or a failure calls its handler; its bound, load at batch-write.c:[[@LINE-6]], read once in front of it: the loop does not write it) is written in batches
// IR-LABEL: define {{.*}} @reserved_global(
// The guard's load, then the bound's, moved in front of the loop.
// IR: load i32, ptr @reserved_sectors
// IR: [[BOUND:%[0-9]+]] = load i32, ptr @reserved_sectors
// IR-NEXT: br i1
// IR: call i64 @__syscluster_batch_write(
// IR: icmp slt i32 %{{[0-9]+}}, [[BOUND]]

// Unchecked, arguments of the function, the index used after the loop.
int unchecked(int fd, const char *buf, long k)
{
    int x;
    for (x = 0; x < k; x++)
        write(fd, buf, 512); // sc: write unchecked
    return x;
}
// CHECK: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at batch-write.c:[[@LINE-3]] (unchecked) is written in batches
// x after the loop: k when every batch was written (the induction
// variable at the last iteration, plus one).
// IR-LABEL: define {{.*}} @unchecked(
// IR: call i64 @__syscluster_batch_write(

// `< 0` to exit.
void failed(int fd, const char *buf, unsigned k)
{
    for (unsigned x = 0; x < k; x++)
        if (write(fd, buf, 4096) < 0) // sc: write failed
            exit(2);
}
// CHECK: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at batch-write.c:[[@LINE-3]] (checked: a failure calls its handler) is written in batches

// Refused: the buffer is written in the loop.
void written(int fd, char *buf, int k)
{
    for (int x = 0; x < k; x++) {
        buf[0] = (char)x;
        if (write(fd, buf, 512) != 512) // sc: write written
            die("write");
    }
}
// CHECK: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at batch-write.c:[[@LINE-4]] is left as it is: safety: the loop writes memory

// Refused: the descriptor changes.
void fds(const int *fd, const char *buf, int k)
{
    for (int x = 0; x < k; x++)
        if (write(fd[x], buf, 512) != 512) // sc: write fds
            die("write");
}
// CHECK: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at batch-write.c:[[@LINE-3]] is left as it is: argument safety: the write's descriptor is not the same in every iteration

// Refused: the count varies.
void counts(int fd, const char *buf, int k)
{
    for (int x = 1; x < k; x++)
        if (write(fd, buf, x) != x) // sc: write counts
            die("write");
}
// CHECK: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at batch-write.c:[[@LINE-3]] is left as it is: argument safety: the write's count is not the same in every iteration

// Refused: another call in the body.
void called(int fd, const char *buf, int k)
{
    for (int x = 0; x < k; x++) {
        if (write(fd, buf, 512) != 512) // sc: write called
            die("write");
        progress(x);
    }
}
// CHECK: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at batch-write.c:[[@LINE-5]] is left as it is: safety: the loop makes another call (call to progress

// Refused: the handler returns.
int returns(int fd, const char *buf, int k)
{
    for (int x = 0; x < k; x++)
        if (write(fd, buf, 512) != 512) // sc: write returns
            return -1;
    return 0;
}
// CHECK: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at batch-write.c:[[@LINE-4]] is left as it is: safety: the write's check leads to code that returns

// Refused: the write's result is what the loop leaves.
long last(int fd, const char *buf, int k)
{
    long r = 0;
    for (int x = 0; x < k; x++)
        r = write(fd, buf, 512); // sc: write last
    return r;
}
// CHECK: remark: plan cluster #{{[0-9]+}} (batch-writes): the loop of write at batch-write.c:[[@LINE-3]] is left as it is: linearity: the loop leaves a value (call to write at batch-write.c:[[@LINE-3]]) that is not an induction variable to the code after it
