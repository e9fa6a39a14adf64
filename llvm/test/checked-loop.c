// The copy loop that checks its writes (§3.3.2 inside §3.4): clang does
// not rotate it (two exits), the read heads the loop and the write's check
// leaves it for a handler.  When the handler never resumes the loop (it
// exits, returns, breaks or jumps out), the check and the loop are exclusive:
// the loop becomes the looped multi-call with its write checked (MC_CHECK
// for `< 0`, MC_CHECK_FULL for `!= n`, `< n`), which stops where the program
// would call its handler, which runs with the write's count, result, errno.
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
void report(const char *what); int retry(void);
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

// A handler that returns: the loop ends there for good, as it does at
// an err(), so the multi-call stops at that write and is never resumed.
void returns(int in, int out, char *buf)
{
    ssize_t n;
    while ((n = read(in, buf, 4096)) > 0)       // sc: read returns
        if (write(out, buf, n) != n) {          // sc: write returns
            report("write");
            return;
        }
}
// CHECK: remark: plan cluster #4 (copy-offload): the loop of read at checked-loop.c:71 -> write at checked-loop.c:72 (its write checked) became one looped multi-call {{.*}} MC_CHECK_FULL

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
// SPEC-IR: phi i64 [ [[K]], {{%[0-9]+}} ], [ {{%[0-9]+}}, {{%[0-9]+}} ]
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
// IR: [[K4:%.*]] = call i64 @__syscluster_write_read_loop_checked({{.*}}, i32 1, ptr
// IR: br i1 {{%.*}}, label %[[REJ4:.*]], label %[[END4:.*]],
// IR: [[REJ4]]:
// IR: call void @report(
// IR-NOT: call i64 @write(
// IR: ret void
// IR-LABEL: define {{.*}} @other(
// IR: call i64 @write(
// IR-LABEL: define {{.*}} @counting(
// IR: call i64 @write(
// IR-LABEL: define {{.*}} @globals(
// IR: [[OUT:%.*]] = load i32, ptr @out_fd
// IR: call i64 @__syscluster_write_read_loop_checked(i32 [[OUT]], ptr @gbuf,

// A break to the code after the loop, which returns n: the rejected
// write's count when the loop broke off, the last read's result otherwise
// (a phi of the exit fed by the first read, the multi-call's end and its
// rejected write alike).
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=LEAVE-R
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -S -emit-llvm %s -o %t.leave
// RUN: opt-19 -passes=verify -disable-output %t.leave
// RUN: FileCheck %s --check-prefix=LEAVE < %t.leave
long breaks(int in, int out, char *buf)
{
    ssize_t n;
    while ((n = read(in, buf, 4096)) > 0)       // sc: read breaks
        if (write(out, buf, n) != n)            // sc: write breaks
            break;
    return n;
}
// LEAVE-R: remark: plan cluster #9 (copy-offload): the loop of read at checked-loop.c:{{[0-9]+}} -> write at checked-loop.c:{{[0-9]+}} (its write checked) became one looped multi-call
// LEAVE-LABEL: define {{.*}} @breaks(
// LEAVE: [[FIRST:%[0-9]+]] = tail call i64 @read(
// LEAVE: [[K:%[0-9]+]] = call i64 @__syscluster_write_read_loop_checked({{.*}}, i64 4096, i64 [[FIRST]], i64 {{[0-9]+}}, i32 1, ptr
// LEAVE: phi i64 {{.*}}[ [[K]], {{.*}}[ [[K]],
// LEAVE-NOT: call i64 @write(
// LEAVE: ret i64

// A goto out of the loop to a handler that prints n and the write's
// result and returns 1.
int gotos(int in, int out, char *buf)
{
    ssize_t n, w;
    while ((n = read(in, buf, 4096)) > 0)       // sc: read gotos
        if ((w = write(out, buf, n)) < 0)       // sc: write gotos
            goto fail;
    return 0;
fail:
    fprintf(stderr, "write of %zd: %zd\n", n, w);
    return 1;
}
// LEAVE-R: remark: plan cluster #10 (copy-offload): the loop of read at checked-loop.c:{{[0-9]+}} -> write at checked-loop.c:{{[0-9]+}} (its write checked) became one looped multi-call {{.*}} (a failure: MC_CHECK)
// LEAVE-LABEL: define {{.*}} @gotos(
// LEAVE: [[K:%[0-9]+]] = call i64 @__syscluster_write_read_loop_checked({{.*}}, i32 0, ptr [[W:%[0-9]+]])
// LEAVE: [[WV:%[0-9]+]] = load i64, ptr [[W]]
// LEAVE: call {{.*}}@fprintf(ptr {{.*}}, ptr {{.*}}, i64 noundef [[K]], i64 noundef [[WV]])
// LEAVE-NOT: call i64 @write(
// LEAVE: {{^}}}

// An outer loop over descriptors: the handler breaks to it, and it
// enters the copy loop again only through the loop's entry, where the
// copy starts afresh (its first read as written).
int files(int out, int first, int last, char *buf)
{
    int bad = 0;
    for (int in = first; in < last; in++) {
        ssize_t n;
        while ((n = read(in, buf, 4096)) > 0)   // sc: read files
            if (write(out, buf, n) != n) {      // sc: write files
                bad++;
                break;
            }
    }
    return bad;
}
// LEAVE-R: remark: plan cluster #11 (copy-offload): the loop of read at checked-loop.c:{{[0-9]+}} -> write at checked-loop.c:{{[0-9]+}} (its write checked) became one looped multi-call
// LEAVE-LABEL: define {{.*}} @files(
// LEAVE: call i64 @__syscluster_write_read_loop_checked(
// LEAVE-NOT: call i64 @write(
// LEAVE: {{^}}}

// Refused, near-identical: a handler that goes on with the loop (the next
// read) when the program wants to retry and returns otherwise: the
// multi-call has stopped at the write and cannot resume.  clang rotates
// these loops (their handler's way back joins the loop's latch), so the
// handler lies between the write and the next read: refused as a branch
// between the calls; CheckedLoop.cpp's own test of a handler's way back
// into the loop guards the shape clang leaves unrotated.
int resumes(int in, int out, char *buf)
{
    ssize_t n;
    while ((n = read(in, buf, 4096)) > 0)       // sc: read resumes
        if (write(out, buf, n) != n) {          // sc: write resumes
            if (retry())
                continue;
            return 1;
        }
    return 0;
}
// LEAVE-R: remark: plan cluster #12 (copy-offload): write at checked-loop.c:{{[0-9]+}} -> read at checked-loop.c:{{[0-9]+}} is not a clusterable region: linearity: a branch (br at checked-loop.c:{{[0-9]+}}) lies between the calls
// LEAVE-R-NOT: plan cluster #12 (copy-offload): {{.*}} became
// LEAVE-LABEL: define {{.*}} @resumes(
// LEAVE: call i64 @write(
// LEAVE-NOT: __syscluster_write_read_loop
// LEAVE: {{^}}}

// Refused: a handler that rewrites the buffer and resumes the loop when
// the disk is full, returns otherwise.
int rewrites(int in, int out, char *buf)
{
    ssize_t n;
    while ((n = read(in, buf, 4096)) > 0)       // sc: read rewrites
        if (write(out, buf, n) != n) {          // sc: write rewrites
            if (!retry())
                return 1;
            buf[0] = '!';
            report(buf);
        }
    return 0;
}
// LEAVE-R: remark: plan cluster #13 (copy-offload): write at checked-loop.c:{{[0-9]+}} -> read at checked-loop.c:{{[0-9]+}} is not a clusterable region: linearity: a branch (br at checked-loop.c:{{[0-9]+}}) lies between the calls
// LEAVE-R-NOT: plan cluster #13 (copy-offload): {{.*}} became
// LEAVE-LABEL: define {{.*}} @rewrites(
// LEAVE: call i64 @write(
// LEAVE-NOT: __syscluster_write_read_loop
// LEAVE: {{^}}}

// Refused: a handler that always goes on with the loop (clang rotates this
// one: one exit; the handler then lies between the write and the next read).
void continues(int in, int out, char *buf)
{
    ssize_t n;
    while ((n = read(in, buf, 4096)) > 0)       // sc: read continues
        if (write(out, buf, n) != n)            // sc: write continues
            report("write");
}
// LEAVE-R: remark: plan cluster #14 (copy-offload): write at checked-loop.c:{{[0-9]+}} -> read at checked-loop.c:{{[0-9]+}} is not a clusterable region: linearity: a branch (br at checked-loop.c:{{[0-9]+}}) lies between the calls
// LEAVE-R-NOT: plan cluster #14 (copy-offload): {{.*}} became
// LEAVE-LABEL: define {{.*}} @continues(
// LEAVE: call i64 @write(
// LEAVE-NOT: __syscluster_write_read_loop
// LEAVE: {{^}}}

// Refused: user code between the read and the write (a report when a flag
// is set): the loop is not rotated (two exits) and the read heads it, but
// the write is reached along two paths; the remark says the shape differs.
int flagged(int in, int out, char *buf, int verbose)
{
    ssize_t n;
    while ((n = read(in, buf, 4096)) > 0) {     // sc: read flagged
        if (verbose)
            report("block");
        if (write(out, buf, n) != n)            // sc: write flagged
            return 1;
    }
    return 0;
}
// LEAVE-R: remark: plan cluster #15 (copy-offload): the loop of read at checked-loop.c:{{[0-9]+}} -> write at checked-loop.c:{{[0-9]+}} (its write checked) is left as it is: loop: the write's block is not entered straight from the read's test (call to write at checked-loop.c:{{[0-9]+}}: the write is reached along more than one path)
// LEAVE-R-NOT: plan cluster #15 (copy-offload): {{.*}} became
// LEAVE-LABEL: define {{.*}} @flagged(
// LEAVE: call i64 @write(
// LEAVE-NOT: __syscluster_write_read_loop
// LEAVE: {{^}}}
