// Matching: a plan names source lines; their source_hash tells whether the
// line is still the one the plan was made from.  A stale plan changes
// nothing; a plan without debug line information cannot drive the pass,
// nor can a translation unit compiled without -g.
// RUN: %make-plan %s --hash > %t.good
// RUN: %make-plan %s --bad-hash > %t.stale
// RUN: %make-plan %s --no-lines > %t.nolines
// RUN: %clang-sc -mllvm -syscluster-plan=%t.good %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=GOOD
// RUN: %clang-sc -mllvm -syscluster-plan=%t.stale %remarks -S -emit-llvm %s -o %t.ll 2>&1 | FileCheck %s --check-prefix=STALE
// RUN: FileCheck %s --check-prefix=UNCHANGED < %t.ll
// RUN: %clang-sc -mllvm -syscluster-plan=%t.nolines %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOLINES
// RUN: %clang-sc -g0 -mllvm -syscluster-plan=%t.good %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=NODEBUG
// RUN: not %clang-sc -mllvm -syscluster-plan=%t.missing -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOPLAN
#include <unistd.h>

int main(void)
{
    char buf[4096];
    long n;
    while ((n = read(0, buf, sizeof buf)) > 0)  // sc: read
        write(1, buf, n);                       // sc: write
    return 0;
}
// GOOD-NOT: stale plan:
// GOOD: remark: plan cluster #1 (copy-offload): read at stale-plan.c:20 matched
// GOOD: became one looped multi-call
// STALE: remark: plan cluster #1 (copy-offload): stale plan: read at stale-plan.c:20 is not the source line the plan was made from (source_hash 0123456789abcdef, now {{[0-9a-f]+}}); left as it is [-Rpass-missed=syscluster]
// STALE-NOT: became one looped multi-call
// UNCHANGED-NOT: __syscluster_write_read_loop
// UNCHANGED: call i64 @write(
// NOLINES: remark: plan cluster #1 (copy-offload): the recorded binary had no debug info (read in main has no file:line in the plan): such a profile cannot drive the compiler
// NODEBUG: remark: syscluster: this translation unit has no debug info: the plan's 1 clusters name file:line locations and cannot be matched; compile with -g [-Rpass-missed=syscluster]
// NOPLAN: error: syscluster: plan {{.*}}.missing: cannot read: No such file or directory
