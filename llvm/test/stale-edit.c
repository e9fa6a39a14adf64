// Staleness by an edit: the plan is made from this source (each line's
// source_hash), then a copy of it is edited and compiled.  Editing a line
// the plan names (the read's count) makes the plan stale there: nothing
// changes, a remark says why.  Editing a line it does not name, without
// moving any line, leaves the plan valid: the loop is still replaced.
// The copies are two other checkouts (the plan was made in
// /elsewhere/checkout), built from their top with a relative path.  The
// plan has line hashes only (a plan_version 1 plan): with the function's
// hash, the edit of `return 0;` would make it stale too (stale-function.c).
// RUN: rm -rf %t && mkdir -p %t/named/llvm/test %t/other/llvm/test
// RUN: %make-plan %s --hash --no-function-hash > %t/plan
// RUN: sed 's/read(0, buf, sizeof buf)/read(0, buf, 4096)/' %s > %t/named/llvm/test/stale-edit.c
// RUN: sed 's/return 0;/return 1;/' %s > %t/other/llvm/test/stale-edit.c
// RUN: not cmp -s %s %t/named/llvm/test/stale-edit.c
// RUN: not cmp -s %s %t/other/llvm/test/stale-edit.c
// RUN: cd %t/named && %clang-sc -mllvm -syscluster-plan=%t/plan %remarks -S -emit-llvm llvm/test/stale-edit.c -o %t/named.ll 2>&1 | FileCheck %s --check-prefix=NAMED
// RUN: FileCheck %s --check-prefix=NAMED-IR < %t/named.ll
// RUN: cd %t/other && %clang-sc -mllvm -syscluster-plan=%t/plan %remarks -S -emit-llvm llvm/test/stale-edit.c -o %t/other.ll 2>&1 | FileCheck %s --check-prefix=OTHER
// RUN: FileCheck %s --check-prefix=OTHER-IR < %t/other.ll
#include <unistd.h>

int main(void)
{
    char buf[4096];
    long n;
    while ((n = read(0, buf, sizeof buf)) > 0)  // sc: read
        write(1, buf, n);                       // sc: write
    return 0;
}
// NAMED: remark: plan cluster #1 (copy-offload): stale plan: read at stale-edit.c:26 is not the source line the plan was made from (source_hash {{[0-9a-f]+}}, now {{[0-9a-f]+}}); left as it is [-Rpass-missed=syscluster]
// NAMED-NOT: became one looped multi-call
// NAMED-IR-NOT: __syscluster_write_read_loop
// NAMED-IR: call i64 @read(
// OTHER-NOT: stale plan
// OTHER: remark: plan cluster #1 (copy-offload): the loop of write at stale-edit.c:27 -> read at stale-edit.c:26 became one looped multi-call
// OTHER-IR: call i64 @__syscluster_write_read_loop(
