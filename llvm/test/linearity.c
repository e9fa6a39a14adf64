// Condition 5, linearity: no branch between the calls — except an error
// check that leaves for a handler that does not return (exit) exactly when
// the call before it failed: the mutually exclusive restructuring of §3.3.2
// makes that call a checked one (MC_CHECK) and keeps the check.  A handler
// that returns, or a check that is not "the call failed", breaks the region.
// RUN: %make-plan %s --calls write,read --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=MC
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

long ok(int in, int out, char *buf, long n)
{
    write(out, buf, n);          // sc: write ok
    return read(in, buf, 4096);  // sc: read ok
}
// CHECK: remark: plan cluster #1 (copy-offload): write at linearity.c:15 -> read at linearity.c:16 is a clusterable region
// MC: remark: plan cluster #1 (copy-offload): the region write at linearity.c:15 -> read at linearity.c:16 became one multi-call of 2 calls (libmulticall mc_run, auto backend); compiled

long checked(int in, int out, char *buf, long n)
{
    if (write(out, buf, n) < 0)  // sc: write checked
        exit(1);
    return read(in, buf, 4096);  // sc: read checked
}
// CHECK: remark: plan cluster #2 (copy-offload): write at linearity.c:23 -> read at linearity.c:25 is a clusterable region
// MC: remark: plan cluster #2 (copy-offload): the region write at linearity.c:23 -> read at linearity.c:25 became one multi-call of 2 calls (libmulticall mc_run, auto backend; checked, its error handler kept (§3.3.2): write at linearity.c:23)

long returns(int in, int out, char *buf, long n)
{
    if (write(out, buf, n) < 0)  // sc: write returns
        perror("write");
    return read(in, buf, 4096);  // sc: read returns
}
// CHECK: remark: plan cluster #3 (copy-offload): write at linearity.c:32 -> read at linearity.c:34 is not a clusterable region: linearity: a branch (br at linearity.c:32) lies between the calls [-Rpass-missed=syscluster]

long short_write(int in, int out, char *buf, long n)
{
    if (write(out, buf, n) != n) // sc: write short_write
        exit(1);
    return read(in, buf, 4096);  // sc: read short_write
}
// CHECK: remark: plan cluster #4 (copy-offload): write at linearity.c:40 -> read at linearity.c:42 is not a clusterable region: linearity: a branch (br at linearity.c:40) lies between the calls (its other side does not return, but it is not taken exactly when write at linearity.c:40 fails (result < 0): the §3.3.2 restructuring would run calls the program does not)
// MC-NOT: the region write at linearity.c:{{32|40}}
