// Condition 5, linearity: no branch between the calls.  When the other side
// of the branch does not return (exit), the remark names the §3.3.2
// restructuring that would make the region linear.
// RUN: %make-plan %s --calls write,read --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
#include <stdlib.h>
#include <unistd.h>

long ok(int in, int out, char *buf, long n)
{
    write(out, buf, n);          // sc: write ok
    return read(in, buf, 4096);  // sc: read ok
}
// CHECK: remark: plan cluster #1 (copy-offload): write at linearity.c:11 -> read at linearity.c:12 is a clusterable region

long bad(int in, int out, char *buf, long n)
{
    if (write(out, buf, n) < 0)  // sc: write bad
        exit(1);
    return read(in, buf, 4096);  // sc: read bad
}
// CHECK: remark: plan cluster #2 (copy-offload): write at linearity.c:18 -> read at linearity.c:20 is not a clusterable region: linearity: a branch (br at linearity.c:18) lies between the calls (its other side does not return: the mutually exclusive restructuring of §3.3.2 would make it linear; not implemented yet)
