// Never a wrong program (issue 12, Must 8): a plan for another program
// (here copy-loop.c's) names no file of this translation unit; nothing
// changes and one remark says so.  The same loop with its own plan
// becomes a looped multi-call.
// RUN: %make-plan %S/copy-loop.c > %t.other
// RUN: %make-plan %s > %t.own
// RUN: %clang-sc -mllvm -syscluster-plan=%t.other %remarks -S -emit-llvm %s -o %t.ll 2>&1 | FileCheck %s --check-prefix=OTHER
// RUN: FileCheck %s --check-prefix=UNCHANGED < %t.ll
// RUN: %clang-sc -mllvm -syscluster-plan=%t.own %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=OWN
#include <unistd.h>

int main(void)
{
    char buf[4096];
    long n;
    while ((n = read(0, buf, sizeof buf)) > 0)  // sc: read
        write(1, buf, n);                       // sc: write
    return 0;
}
// OTHER: remark: syscluster: none of the plan's 2 locations is a system call of a file of this translation unit ({{.*}}other-program.c): a plan for another program, or for other files of this one; nothing here is changed [-Rpass-missed=syscluster]
// OTHER-NOT: plan cluster
// UNCHANGED-NOT: __syscluster
// UNCHANGED: call i64 @read(
// UNCHANGED: call i64 @write(
// OWN-NOT: none of the plan's
// OWN: remark: plan cluster #1 (copy-offload): the loop of write at other-program.c:17 -> read at other-program.c:16 became one looped multi-call
