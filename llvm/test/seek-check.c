// Linearity with §3.3.2 for lseek: lseek(fd, pos, SEEK_SET) returns the
// offset asked for or -1, so `!= pos` into a handler that does not return
// (fsck.fat's fs_read) is exactly "the call did not do what was asked":
// the lseek becomes a call checked full (MC_CHECK_FULL, its result
// compared with the offset).  With SEEK_CUR the result is another offset
// and the same test is not that: refused.
// RUN: %make-plan %s --calls lseek,read --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
#include <stdlib.h>
#include <unistd.h>

long seek_set(int fd, char *buf, long pos)
{
    if (lseek(fd, pos, SEEK_SET) != pos) // sc: lseek seek_set
        exit(1);
    return read(fd, buf, 100);           // sc: read seek_set
}
// CHECK: remark: plan cluster #1 (copy-offload): the region lseek at seek-check.c:15 -> read at seek-check.c:17 became one multi-call of 2 calls (libmulticall mc_run, auto backend; checked, its error handler kept (§3.3.2): lseek at seek-check.c:15 (result != offset))
// IR-LABEL: define {{.*}} @seek_set(
// IR: store i32 4, ptr
// IR: call i64 @__syscluster_run(

long seek_cur(int fd, char *buf, long pos)
{
    if (lseek(fd, pos, SEEK_CUR) != pos) // sc: lseek seek_cur
        exit(1);
    return read(fd, buf, 100);           // sc: read seek_cur
}
// CHECK: remark: plan cluster #2 (copy-offload): lseek at seek-check.c:26 -> read at seek-check.c:28 is not a clusterable region: linearity: a branch (br at seek-check.c:26) lies between the calls (its other side does not return, but it is not taken exactly when lseek at seek-check.c:26 fails (result < 0) or falls short (result != its count, or lseek's SEEK_SET offset)
// IR-LABEL: define {{.*}} @seek_cur(
// IR-NOT: __syscluster_run
// IR: ret i64
