// Condition 2, safety: user code (here a call to the program's own
// function) between the calls cannot run inside a multi-call.
// RUN: %make-plan %s --calls write,read --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
#include <unistd.h>

void progress(long n);

long ok(int in, int out, char *buf, long n)
{
    write(out, buf, n);          // sc: write ok
    return read(in, buf, 4096);  // sc: read ok
}
// CHECK: remark: plan cluster #1 (copy-offload): write at safety.c:11 -> read at safety.c:12 is a clusterable region

long bad(int in, int out, char *buf, long n)
{
    write(out, buf, n);          // sc: write bad
    progress(n);
    return read(in, buf, 4096);  // sc: read bad
}
// CHECK: remark: plan cluster #2 (copy-offload): write at safety.c:18 -> read at safety.c:20 is not a clusterable region: safety: call to progress at safety.c:19 lies between the calls

// The accepted region is replaced by one mc_run (fig. 7); the refused one is not.
// RUN: %clang-sc -mllvm -syscluster-assume-gain -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=MC
// MC: remark: plan cluster #1 (copy-offload): the region write at safety.c:11 -> read at safety.c:12 became one multi-call of 2 calls
// MC-NOT: plan cluster #2 (copy-offload): the region
