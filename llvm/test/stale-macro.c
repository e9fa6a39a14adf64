// Staleness by the macros a function uses: beside each location's
// function_hash, the plan holds the macro_hash of the macros of the file
// that its function names, defined outside it (docs/PLAN_FORMAT.md).  The
// plan is made from this source, then copies of it are compiled as other
// checkouts would be: unchanged (applied), with BUFSIZE -- defined above
// main, used in it through BLOCK -- changed (stale: not one line of main
// changed), and with a macro main does not use changed (applied).  A plan
// written before macro_hash takes the changed BUFSIZE: the remark says
// the macros were not checked.
// RUN: rm -rf %t && mkdir -p %t/same/llvm/test %t/macro/llvm/test %t/unused/llvm/test
// RUN: %make-plan %s --hash --count 100000 > %t/plan
// RUN: %make-plan %s --hash --no-macro-hash --count 100000 > %t/plan-old
// RUN: grep -c '"macro_hash"' %t/plan | grep -qx 2
// RUN: not grep -q '"macro_hash"' %t/plan-old
// RUN: cp %s %t/same/llvm/test/stale-macro.c
// RUN: sed 's/^#define BUFSIZE 4096$/#define BUFSIZE 65536/' %s > %t/macro/llvm/test/stale-macro.c
// RUN: sed 's/^#define UNUSED 1$/#define UNUSED 2/' %s > %t/unused/llvm/test/stale-macro.c
// RUN: not cmp -s %s %t/macro/llvm/test/stale-macro.c
// RUN: not cmp -s %s %t/unused/llvm/test/stale-macro.c
// RUN: cd %t/same && %clang-sc -mllvm -syscluster-plan=%t/plan %remarks -S -emit-llvm llvm/test/stale-macro.c -o %t/same.ll 2>&1 | FileCheck %s --check-prefix=SAME
// RUN: FileCheck %s --check-prefix=APPLIED < %t/same.ll
// RUN: cd %t/macro && %clang-sc -mllvm -syscluster-plan=%t/plan %remarks -S -emit-llvm llvm/test/stale-macro.c -o %t/macro.ll 2>&1 | FileCheck %s --check-prefix=MACRO
// RUN: FileCheck %s --check-prefix=LEFT < %t/macro.ll
// RUN: cd %t/unused && %clang-sc -mllvm -syscluster-plan=%t/plan %remarks -S -emit-llvm llvm/test/stale-macro.c -o %t/unused.ll 2>&1 | FileCheck %s --check-prefix=SAME
// RUN: FileCheck %s --check-prefix=APPLIED < %t/unused.ll
// RUN: cd %t/macro && %clang-sc -mllvm -syscluster-plan=%t/plan-old %remarks -S -emit-llvm llvm/test/stale-macro.c -o %t/old.ll 2>&1 | FileCheck %s --check-prefix=OLD
// RUN: FileCheck %s --check-prefix=APPLIED < %t/old.ll
#include <unistd.h>

#define BUFSIZE 4096
#define BLOCK (BUFSIZE * 1)
#define UNUSED 1

int main(void)
{
    char buf[BLOCK];
    long n;
    while ((n = read(0, buf, sizeof buf)) > 0)  // sc: read
        write(1, buf, n);                       // sc: write
    return 0;
}

int other(void)
{
    return UNUSED;
}
// SAME-NOT: stale plan
// SAME-NOT: no macro_hash
// SAME: remark: plan cluster #1 (copy-offload): read at stale-macro.c:[[#]] matched
// SAME: became one looped multi-call
// APPLIED: call i64 @__syscluster_write_read_loop(
// MACRO-NOT: the function main holding read at stale-macro.c:{{[0-9]+}} changed
// MACRO: remark: plan cluster #1 (copy-offload): stale plan: the macros of stale-macro.c that the function main holding read at stale-macro.c:38 uses changed since the recording (macro_hash {{[0-9a-f]+}}, now {{[0-9a-f]+}}); left as it is [-Rpass-missed=syscluster]
// MACRO: remark: plan cluster #1 (copy-offload): stale plan: the macros of stale-macro.c that the function main holding write at stale-macro.c:39 uses changed
// MACRO-NOT: became one looped multi-call
// LEFT-NOT: __syscluster_write_read_loop
// LEFT: call i64 @read(
// LEFT: call i64 @write(
// OLD-NOT: stale plan
// OLD: remark: plan cluster #1 (copy-offload): the plan has no macro_hash for read at stale-macro.c:[[#]] (a plan written before it): the macros the function uses, defined outside it, are not checked [-Rpass-analysis=syscluster]
// OLD: became one looped multi-call
