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
#include <err.h>
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
// CHECK: remark: plan cluster #1 (copy-offload): the loop of read at checked-loop.c:25 -> write at checked-loop.c:26 (its write checked) became one looped multi-call {{.*}} the write's check (a short write or a failure: MC_CHECK_FULL) and the loop's are mutually exclusive (§3.3.2)

// `< 0` to exit.
void failed(int in, int out, char *buf)
{
    ssize_t n;
    while ((n = read(in, buf, 4096)) > 0)       // sc: read failed
        if (write(out, buf, n) < 0)             // sc: write failed
            exit(3);
}
// CHECK: remark: plan cluster #2 (copy-offload): the loop of read at checked-loop.c:37 -> write at checked-loop.c:38 (its write checked) became one looped multi-call {{.*}} (a failure: MC_CHECK)

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
// CHECK: remark: plan cluster #3 (copy-offload): the loop of read at checked-loop.c:49 -> write at checked-loop.c:50 (its write checked) became one looped multi-call {{.*}} MC_CHECK_FULL

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
// CHECK: remark: plan cluster #4 (copy-offload): the loop of read at checked-loop.c:62 -> write at checked-loop.c:63 (its write checked) is left as it is: linearity: the write's check leads to code that returns (call to report at checked-loop.c:64)

// Refused: a check that is neither "failed" nor "short".
void other(int in, int out, char *buf)
{
    ssize_t n;
    while ((n = read(in, buf, 4096)) > 0)       // sc: read other
        if (write(out, buf, n) != n - 1)        // sc: write other
            exit(2);
}
// CHECK: remark: plan cluster #5 (copy-offload): the loop of read at checked-loop.c:74 -> write at checked-loop.c:75 (its write checked) is left as it is: linearity: the write's check (br at checked-loop.c:75) is neither

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
// CHECK: remark: plan cluster #6 (copy-offload): write at checked-loop.c:86 -> read at checked-loop.c:85 is not a clusterable region: convexity: store at checked-loop.c:88 has side effects
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
