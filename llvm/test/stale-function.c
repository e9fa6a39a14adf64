// Staleness by the function: the plan holds, beside each location's
// source_hash (its line), the function_hash of the whole function holding
// it (docs/PLAN_FORMAT.md).  The plan is made from this source, then copies
// of it are compiled as other checkouts would be: unchanged (applied), with
// the buffer's size changed on a line the plan does not name -- the read's
// line, `sizeof buf`, hashes the same -- (stale: the function changed), and
// with an edit in another function (applied).  A plan_version 1 plan, line
// hashes only, takes the resized buffer: the remark says the function was
// not fingerprinted.
// RUN: rm -rf %t && mkdir -p %t/same/llvm/test %t/body/llvm/test %t/outside/llvm/test
// RUN: %make-plan %s --hash --count 100000 > %t/plan
// RUN: %make-plan %s --hash --no-function-hash --count 100000 > %t/plan-v1
// RUN: grep -c '"function_hash"' %t/plan | grep -qx 2
// RUN: not grep -q '"function_hash"' %t/plan-v1
// RUN: cp %s %t/same/llvm/test/stale-function.c
// RUN: sed 's/char buf\[4096\];/char buf[65536];/' %s > %t/body/llvm/test/stale-function.c
// RUN: sed 's/return close(fd);/return close(fd + 1);/' %s > %t/outside/llvm/test/stale-function.c
// RUN: not cmp -s %s %t/body/llvm/test/stale-function.c
// RUN: not cmp -s %s %t/outside/llvm/test/stale-function.c
// RUN: cd %t/same && %clang-sc -mllvm -syscluster-plan=%t/plan %remarks -S -emit-llvm llvm/test/stale-function.c -o %t/same.ll 2>&1 | FileCheck %s --check-prefix=SAME
// RUN: FileCheck %s --check-prefix=APPLIED < %t/same.ll
// RUN: cd %t/body && %clang-sc -mllvm -syscluster-plan=%t/plan %remarks -S -emit-llvm llvm/test/stale-function.c -o %t/body.ll 2>&1 | FileCheck %s --check-prefix=BODY
// RUN: FileCheck %s --check-prefix=LEFT < %t/body.ll
// RUN: cd %t/outside && %clang-sc -mllvm -syscluster-plan=%t/plan %remarks -S -emit-llvm llvm/test/stale-function.c -o %t/outside.ll 2>&1 | FileCheck %s --check-prefix=SAME
// RUN: FileCheck %s --check-prefix=APPLIED < %t/outside.ll
// RUN: cd %t/body && %clang-sc -mllvm -syscluster-plan=%t/plan-v1 %remarks -S -emit-llvm llvm/test/stale-function.c -o %t/v1.ll 2>&1 | FileCheck %s --check-prefix=V1
// RUN: FileCheck %s --check-prefix=APPLIED < %t/v1.ll
#include <unistd.h>

int finish(int fd)
{
    return close(fd);
}

int main(void)
{
    char buf[4096];
    long n;
    while ((n = read(0, buf, sizeof buf)) > 0)  // sc: read
        write(1, buf, n);                       // sc: write
    return 0;
}
// SAME-NOT: stale plan
// SAME-NOT: not fingerprinted
// SAME: remark: plan cluster #1 (copy-offload): read at stale-function.c:[[#]] matched
// SAME: became one looped multi-call
// APPLIED: call i64 @__syscluster_write_read_loop(
// BODY: remark: plan cluster #1 (copy-offload): stale plan: the function main holding read at stale-function.c:39 changed since the recording: its source (stale-function.c:35-42) is not the one the plan was made from (function_hash {{[0-9a-f]+}}, now {{[0-9a-f]+}}); left as it is [-Rpass-missed=syscluster]
// BODY: remark: plan cluster #1 (copy-offload): stale plan: the function main holding write at stale-function.c:40 changed since the recording
// BODY-NOT: became one looped multi-call
// BODY-NOT: is not the source line the plan was made from
// LEFT-NOT: __syscluster_write_read_loop
// LEFT: call i64 @read(
// LEFT: call i64 @write(
// V1-NOT: stale plan
// V1: remark: plan cluster #1 (copy-offload): the plan has no function_hash for read at stale-function.c:[[#]] (a plan_version 1 plan): the function was not fingerprinted, only its line is checked [-Rpass-analysis=syscluster]
// V1: became one looped multi-call
