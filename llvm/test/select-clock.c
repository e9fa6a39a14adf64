// mpeg_play's select -> gettimeofday (seed 000 §4.3) and its kin.  The
// clock through glibc is the vDSO, no crossing: running gettimeofday as a
// system call inside a multi-call would add one, so the pass never does,
// even for a host with the kernel module (-syscluster-assume-gain).  glibc's
// select issues pselect6 with a sixth argument of its own: not run as that
// call either.  A near-identical pair whose second call does cross (poll
// -> getpid) is replaced with -syscluster-assume-gain.
// RUN: %make-plan %s --calls pselect6,gettimeofday,poll,gettimeofday,poll,getpid --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain %remarks -S -emit-llvm %s -o %t.ll 2>&1 | FileCheck %s --check-prefix=MC
// RUN: FileCheck %s --check-prefix=IR < %t.ll
#include <poll.h>
#include <stdlib.h>
#include <sys/select.h>
#include <sys/time.h>
#include <unistd.h>

void wait_select(int fd, struct timeval *now)
{
    fd_set r;
    struct timeval tv = {0, 0};
    FD_ZERO(&r);
    FD_SET(fd, &r);
    if (select(fd + 1, &r, NULL, NULL, &tv) < 0) // sc: pselect6 wait_select
        exit(1);
    gettimeofday(now, NULL);                     // sc: gettimeofday wait_select
}
// CHECK: remark: plan cluster #1 (copy-offload): pselect6 at select-clock.c:24 -> gettimeofday at select-clock.c:26 is a clusterable region
// MC: remark: plan cluster #1 (copy-offload): the region pselect6 at select-clock.c:24 -> gettimeofday at select-clock.c:26 is left as it is: IR not understood: call to select at select-clock.c:24 is not a libc wrapper that issues pselect6 with the same arguments

void wait_poll(struct pollfd *p, struct timeval *now)
{
    if (poll(p, 1, 0) < 0)       // sc: poll wait_poll
        exit(1);
    gettimeofday(now, NULL);     // sc: gettimeofday wait_poll
}
// CHECK: remark: plan cluster #2 (copy-offload): poll at select-clock.c:33 -> gettimeofday at select-clock.c:35 is a clusterable region
// MC: remark: plan cluster #2 (copy-offload): the region poll at select-clock.c:33 -> gettimeofday at select-clock.c:35 is left as it is: IR not understood: call to gettimeofday at select-clock.c:35 is not a libc wrapper that issues gettimeofday with the same arguments

pid_t wait_pid(struct pollfd *p)
{
    if (poll(p, 1, 0) < 0)       // sc: poll wait_pid
        exit(1);
    return getpid();             // sc: getpid wait_pid
}
// MC: remark: plan cluster #3 (copy-offload): the region poll at select-clock.c:42 -> getpid at select-clock.c:44 became one multi-call of 2 calls

// IR-LABEL: define {{.*}} @wait_select(
// IR-NOT: __syscluster_run
// IR: call i32 @gettimeofday(
// IR-LABEL: define {{.*}} @wait_poll(
// IR-NOT: __syscluster_run
// IR: call i32 @gettimeofday(
// IR-LABEL: define {{.*}} @wait_pid(
// IR: call i64 @__syscluster_run(
