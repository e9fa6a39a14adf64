// Condition 5, linearity: no branch between the calls — except an error
// check that leaves for a handler that does not return (exit) exactly when
// the call before it failed: the mutually exclusive restructuring of §3.3.2
// makes that call a checked one (MC_CHECK) and keeps the check.  A handler
// that returns, or a check that is not "the call failed", breaks the region.
// RUN: %make-plan %s --calls write,read --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=MC
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

long ok(int in, int out, char *buf, long n)
{
    write(out, buf, n);          // sc: write ok
    return read(in, buf, 4096);  // sc: read ok
}
// CHECK: remark: plan cluster #1 (copy-offload): write at linearity.c:16 -> read at linearity.c:17 is a clusterable region
// MC: remark: plan cluster #1 (copy-offload): the region write at linearity.c:16 -> read at linearity.c:17 became one multi-call of 2 calls (libmulticall mc_run, auto backend); compiled

long checked(int in, int out, char *buf, long n)
{
    if (write(out, buf, n) < 0)  // sc: write checked
        exit(1);
    return read(in, buf, 4096);  // sc: read checked
}
// CHECK: remark: plan cluster #2 (copy-offload): write at linearity.c:24 -> read at linearity.c:26 is a clusterable region
// MC: remark: plan cluster #2 (copy-offload): the region write at linearity.c:24 -> read at linearity.c:26 became one multi-call of 2 calls (libmulticall mc_run, auto backend; checked, its error handler kept (§3.3.2): write at linearity.c:24)

long returns(int in, int out, char *buf, long n)
{
    if (write(out, buf, n) < 0)  // sc: write returns
        perror("write");
    return read(in, buf, 4096);  // sc: read returns
}
// CHECK: remark: plan cluster #3 (copy-offload): write at linearity.c:33 -> read at linearity.c:35 is not a clusterable region: linearity: a branch (br at linearity.c:33) lies between the calls [-Rpass-missed=syscluster]

// A short transfer treated as an error: the write gets MC_CHECK_FULL (4),
// the failure check of `checked` MC_CHECK (1); the program's own test stays.
// IR-LABEL: define {{.*}} @checked(
// IR: store i32 1, ptr
// IR: call i64 @__syscluster_run(
// IR-LABEL: define {{.*}} @short_write(
// IR: store i32 4, ptr
// IR: call i64 @__syscluster_run(
// IR: icmp {{eq|ne}} i64 %{{[0-9]+}}, %{{[0-9a-z]+}}
// IR: call void @exit(i32 noundef 1)
long short_write(int in, int out, char *buf, long n)
{
    if (write(out, buf, n) != n) // sc: write short_write
        exit(1);
    return read(in, buf, 4096);  // sc: read short_write
}
// CHECK: remark: plan cluster #4 (copy-offload): write at linearity.c:51 -> read at linearity.c:53 is a clusterable region
// MC: remark: plan cluster #4 (copy-offload): the region write at linearity.c:51 -> read at linearity.c:53 became one multi-call of 2 calls (libmulticall mc_run, auto backend; checked, its error handler kept (§3.3.2): write at linearity.c:51 (short transfer))

// The same with an int count (the call's count its sign extension, the
// test at 32 bits) and a constant one tested with <.
long short_int(int in, int out, char *buf, int n)
{
    if ((int)write(out, buf, n) != n) // sc: write short_int
        exit(1);
    if (write(out, buf, 100) < 100)   // sc: write short_int
        exit(1);
    return read(in, buf, 4096);       // sc: read short_int
}
// CHECK: remark: plan cluster #5 (copy-offload): write at linearity.c:62 -> read at linearity.c:66 is a clusterable region
// CHECK: remark: plan cluster #5 (copy-offload): write at linearity.c:64 -> read at linearity.c:66 is a clusterable region
// MC: remark: plan cluster #5 (copy-offload): the region write at linearity.c:62 -> read at linearity.c:66 became one multi-call of 3 calls (libmulticall mc_run, auto backend; checked, its error handler kept (§3.3.2): write at linearity.c:62 (short transfer), write at linearity.c:64 (short transfer))

// Near-identical and refused: a count that is not the call's, a `< n`
// where n may be negative (then a failure's -1 is not below it), an
// unsigned `<` (the -1 of a failure is above every count), a handler
// that returns.
long short_other(int in, int out, char *buf, long n)
{
    if (write(out, buf, n) != n - 1) // sc: write short_other
        exit(1);
    return read(in, buf, 4096);      // sc: read short_other
}
// CHECK: remark: plan cluster #6 (copy-offload): write at linearity.c:78 -> read at linearity.c:80 is not a clusterable region: linearity: a branch (br at linearity.c:78) lies between the calls (its other side does not return, but it is not taken exactly when write at linearity.c:78 fails (result < 0) or falls short (result != its count, or lseek's SEEK_SET offset): the §3.3.2 restructuring would run calls the program does not)

long short_signed(int in, int out, char *buf, long n)
{
    if (write(out, buf, n) < n)  // sc: write short_signed
        exit(1);
    return read(in, buf, 4096);  // sc: read short_signed
}
// CHECK: remark: plan cluster #7 (copy-offload): write at linearity.c:86 -> read at linearity.c:88 is not a clusterable region: linearity

long short_unsigned(int in, int out, char *buf, unsigned long n)
{
    if ((unsigned long)write(out, buf, n) < n) // sc: write short_unsigned
        exit(1);
    return read(in, buf, 4096);                // sc: read short_unsigned
}
// CHECK: remark: plan cluster #8 (copy-offload): write at linearity.c:94 -> read at linearity.c:96 is not a clusterable region: linearity

long short_returns(int in, int out, char *buf, long n)
{
    if (write(out, buf, n) != n) // sc: write short_returns
        perror("write");
    return read(in, buf, 4096);  // sc: read short_returns
}
// CHECK: remark: plan cluster #9 (copy-offload): write at linearity.c:102 -> read at linearity.c:104 is not a clusterable region: linearity: a branch (br at linearity.c:102) lies between the calls [-Rpass-missed=syscluster]
// MC-NOT: the region write at linearity.c:{{33|78|86|94|102}}
