// Value specialization of a straight-line region (§3.4, seed 004 §4.2):
// two writes on descriptors the code does not prove one (two parameters)
// have no fusion rule, so without the kernel module the multi-call would
// only add bookkeeping (NoGain).  Where the plan's value profile shows the
// writes on one descriptor (`args.fd`), the region is replaced behind a
// guard: __syscluster_run_one_fd runs the multi-call (writev) when the
// descriptors are equal at run time and the calls as written otherwise.
// RUN: %make-plan %s --calls write,write --shape sequence --count 1000 --arg write.fd=4 > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
// Without a value profile: no rule, no gain, the code unchanged.
// RUN: %make-plan %s --calls write,write --shape sequence --count 1000 > %t.noval
// RUN: %clang-sc -mllvm -syscluster-plan=%t.noval %remarks -c %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOVAL
// RUN: %clang-sc -mllvm -syscluster-plan=%t.noval -S -emit-llvm %s -o - | FileCheck %s --check-prefix=NOVAL-IR
#include <err.h>
#include <unistd.h>

void record(int log, int out, const char *head, const char *body)
{
    if (write(log, head, 16) != 16)   // sc: write record
        err(1, "head");
    if (write(out, body, 64) != 64)   // sc: write record
        err(1, "body");
}
// CHECK: remark: plan cluster #1 (copy-offload): the region write at spec-fd.c:20 -> write at spec-fd.c:22 became one multi-call of 2 calls {{.*}}; specialized (§3.4) for one descriptor, the plan's value profile (fd 4 in most calls): a guard runs the calls as written when their descriptors differ; estimated saving
// NOVAL: remark: plan cluster #1 (copy-offload): the region write at spec-fd.c:20 -> write at spec-fd.c:22 is left as it is: no gain: no fusion rule merges write, write:

// IR-LABEL: define {{.*}} @record(
// IR: call i64 @__syscluster_run_one_fd(
// IR-NOT: call i64 @write(
// IR: ret void
// NOVAL-IR-NOT: __syscluster_run
