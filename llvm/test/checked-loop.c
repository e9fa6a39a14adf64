// The copy loop that checks its writes (§3.3.2 inside §3.4): clang does
// not rotate it (two exits), the read heads the loop and the write's check
// leaves it for a handler.  When the handler does not return, the check
// and the loop are mutually exclusive: the loop becomes the looped
// multi-call with its write checked (MC_CHECK for `< 0`, MC_CHECK_FULL for
// `!= n`, `< n`), which stops where the program would call its handler;
// the handler then runs with the write's count, its result and errno.
// RUN: %make-plan %s > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
// A variable block size (variable() below): refused without a value
// profile, specialized (§3.4) with one — a guard on the count, the loop as
// written beside the multi-call, the handler entered from either.
// RUN: %make-plan %s --arg read.count=4096 > %t.spec
// RUN: %clang-sc -mllvm -syscluster-plan=%t.spec %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=SPEC
// RUN: %clang-sc -mllvm -syscluster-plan=%t.spec -S -emit-llvm %s -o %t.ll
// RUN: opt-19 -passes=verify -disable-output %t.ll
// RUN: FileCheck %s --check-prefix=SPEC-IR < %t.ll
#include <err.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void die(const char *what) __attribute__((noreturn));
void report(const char *what);
long total;

// `!= n` to err, and the read's own check after the loop.
void full(int in, int out)
{
    char buf[4096];
    int n;
    while ((n = read(in, buf, sizeof buf)) > 0) // sc: read full
        if (write(out, buf, n) != n)            // sc: write full
            err(1, "write");
    if (n < 0)
        err(1, "read");
}
// CHECK: remark: plan cluster #1 (copy-offload): the loop of read at checked-loop.c:34 -> write at checked-loop.c:35 (its write checked) became one looped multi-call {{.*}} the write's check (a short write or a failure: MC_CHECK_FULL) and the loop's are mutually exclusive (§3.3.2)

// `< 0` to exit.
void failed(int in, int out, char *buf)
{
    ssize_t n;
    while ((n = read(in, buf, 4096)) > 0)       // sc: read failed
        if (write(out, buf, n) < 0)             // sc: write failed
            exit(3);
}
// CHECK: remark: plan cluster #2 (copy-offload): the loop of read at checked-loop.c:46 -> write at checked-loop.c:47 (its write checked) became one looped multi-call {{.*}} (a failure: MC_CHECK)

// `< n` to the program's own noreturn function, the handler reading n,
// the write's result and the buffer (which libmulticall leaves as the
// reads would have).
void shortn(int in, int out, char *buf)
{
    ssize_t n, w;
    while ((n = read(in, buf, 4096)) > 0)       // sc: read shortn
        if ((w = write(out, buf, n)) < n) {     // sc: write shortn
            fprintf(stderr, "short write %zd of %zd: %c\n", w, n, buf[0]);
            die("write");
        }
}
// CHECK: remark: plan cluster #3 (copy-offload): the loop of read at checked-loop.c:58 -> write at checked-loop.c:59 (its write checked) became one looped multi-call {{.*}} MC_CHECK_FULL

// Refused, near-identical: a handler that returns — the loop ends there
// and the program goes on, which a looped multi-call cannot leave and resume.
void returns(int in, int out, char *buf)
{
    ssize_t n;
    while ((n = read(in, buf, 4096)) > 0)       // sc: read returns
        if (write(out, buf, n) != n) {          // sc: write returns
            report("write");
            return;
        }
}
// CHECK: remark: plan cluster #4 (copy-offload): the loop of read at checked-loop.c:71 -> write at checked-loop.c:72 (its write checked) is left as it is: linearity: the write's check leads to code that returns (call to report at checked-loop.c:73)

// Refused: a check that is neither "failed" nor "short".
void other(int in, int out, char *buf)
{
    ssize_t n;
    while ((n = read(in, buf, 4096)) > 0)       // sc: read other
        if (write(out, buf, n) != n - 1)        // sc: write other
            exit(2);
}
// CHECK: remark: plan cluster #5 (copy-offload): the loop of read at checked-loop.c:83 -> write at checked-loop.c:84 (its write checked) is left as it is: linearity: the write's check (br at checked-loop.c:84) is neither

// Refused: the loop body counts what it wrote in a global (a store; clang
// rotates this loop: the write's check then lies between the calls).
void counting(int in, int out, char *buf)
{
    ssize_t n;
    while ((n = read(in, buf, 4096)) > 0) {     // sc: read counting
        if (write(out, buf, n) != n)            // sc: write counting
            exit(2);
        total += n;
    }
}
// CHECK: remark: plan cluster #6 (copy-offload): write at checked-loop.c:95 -> read at checked-loop.c:94 is not a clusterable region: convexity: store at checked-loop.c:97 writes total, a global other translation units see
// CHECK-NOT: plan cluster #6 (copy-offload): {{.*}} became

// Descriptors in globals: clang loads them in the loop (write and read
// might change them, for all it knows); neither may (a system call writes
// only its buffer, which alias analysis separates from them), so the loads
// move in front of the loop.
int in_fd, out_fd;
static char gbuf[4096];
void globals(void)
{
    ssize_t n;
    while ((n = read(in_fd, gbuf, sizeof gbuf)) > 0) // sc: read globals
        if (write(out_fd, gbuf, n) != n)             // sc: write globals
            err(1, "write");
}
// CHECK: remark: plan cluster #7 (copy-offload): the loop of read at checked-loop.c:{{[0-9]+}} -> write at checked-loop.c:{{[0-9]+}} (its write checked) became one looped multi-call

// A block size from the command line, its writes checked `!= n`; the
// handler prints n.
void variable(int in, int out, char *buf, size_t bs)
{
    ssize_t n;
    while ((n = read(in, buf, bs)) > 0)          // sc: read variable
        if (write(out, buf, n) != n) {           // sc: write variable
            fprintf(stderr, "write of %zd\n", n);
            exit(6);
        }
}
// CHECK: remark: plan cluster #8 (copy-offload): the loop of read at checked-loop.c:{{[0-9]+}} -> write at checked-loop.c:{{[0-9]+}} (its write checked) is left as it is: argument safety: the read's count is not a constant between 1 and 2^31-1 (nor one the plan's value profile gives
// SPEC: remark: plan cluster #8 (copy-offload): the loop of read at checked-loop.c:{{[0-9]+}} -> write at checked-loop.c:{{[0-9]+}} (its write checked) became one looped multi-call {{.*}} specialized (§3.4) for the read's count 4096, the plan's value profile: a guard runs the loop as written for any other count
// SPEC-IR-LABEL: define {{.*}} @variable(
// SPEC-IR: [[FIRST:%[0-9]+]] = tail call i64 @read(i32 noundef {{%[0-9]+}}, ptr noundef {{%[0-9]+}}, i64 noundef [[BS:%[0-9]+]])
// SPEC-IR: icmp eq i64 [[BS]], 4096
// SPEC-IR: [[K:%[0-9]+]] = call i64 @__syscluster_write_read_loop_checked({{.*}}, i64 4096, i64 [[FIRST]], i64 {{[0-9]+}}, i32 1, ptr
// SPEC-IR: call i64 @write(
// SPEC-IR: phi i64 [ {{%[0-9]+}}, {{%[0-9]+}} ], [ [[K]], {{%[0-9]+}} ]
// SPEC-IR: call {{.*}}@fprintf(

// IR-LABEL: define {{.*}} @full(
// IR: [[FIRST:%.*]] = {{.*}}call i64 @read(
// IR: [[K:%.*]] = call i64 @__syscluster_write_read_loop_checked(i32 {{.*}}, i64 4096, i64 [[FIRST]], i64 42, i32 1, ptr [[W:%.*]])
// IR-NEXT: [[REJ:%.*]] = icmp sgt i64 [[K]], 0
// IR: br i1 [[REJ]]
// IR: load i64, ptr [[W]]
// IR: call void {{.*}}@err(
// IR-NOT: call i64 @write(
// IR: ret void
// IR-LABEL: define {{.*}} @failed(
// IR: call i64 @__syscluster_write_read_loop_checked({{.*}}, i32 0, ptr
// IR-LABEL: define {{.*}} @shortn(
// IR: [[K3:%.*]] = call i64 @__syscluster_write_read_loop_checked({{.*}}, i32 1, ptr [[W3:%.*]])
// IR: [[W3V:%.*]] = load i64, ptr [[W3]]
// IR: call i32 {{.*}}@fprintf(ptr {{.*}}, ptr {{.*}}, i64 noundef [[W3V]], i64 noundef [[K3]],
// IR-LABEL: define {{.*}} @returns(
// IR: call i64 @write(
// IR-LABEL: define {{.*}} @other(
// IR: call i64 @write(
// IR-LABEL: define {{.*}} @counting(
// IR: call i64 @write(
// IR-LABEL: define {{.*}} @globals(
// IR: [[OUT:%.*]] = load i32, ptr @out_fd
// IR: call i64 @__syscluster_write_read_loop_checked(i32 [[OUT]], ptr @gbuf,
