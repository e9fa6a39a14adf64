// Condition 1, dominance: the region's first call must dominate the rest.
// RUN: %make-plan %s --calls write,read --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
#include <unistd.h>

long ok(int in, int out, char *buf, long n)
{
    write(out, buf, n);          // sc: write ok
    return read(in, buf, 4096);  // sc: read ok
}
// CHECK: remark: plan cluster #1 (copy-offload): write at dominance.c:8 -> read at dominance.c:9 is a clusterable region (dominance, safety, convexity, argument safety, linearity hold)

long bad(int in, int out, char *buf, long n, int flag)
{
    if (flag)
        write(out, buf, n);      // sc: write bad
    return read(in, buf, 4096);  // sc: read bad
}
// CHECK: remark: plan cluster #2 (copy-offload): write at dominance.c:16 -> read at dominance.c:17 is not a clusterable region: dominance: write at dominance.c:16 does not dominate read at dominance.c:17 [-Rpass-missed=syscluster]

// The accepted region is replaced by one mc_run (fig. 7); the refused one is not.
// RUN: %clang-sc -mllvm -syscluster-assume-gain -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=MC
// MC: remark: plan cluster #1 (copy-offload): the region write at dominance.c:8 -> read at dominance.c:9 became one multi-call of 2 calls
// MC-NOT: plan cluster #2 (copy-offload): the region
