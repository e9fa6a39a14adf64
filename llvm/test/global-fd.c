// Two loads of one global descriptor are one descriptor: clang loads
// `out_fd` again after each call to libc (write might, for all it knows,
// change it), so the two writes' first arguments are different values.  A
// system call writes no memory of the program but its buffer, so when
// nothing else between the loads may write the variable (MemorySSA's
// definitions between them, alias analysis), they give the same value and
// the writes fuse into one writev.  A store that may alias the variable,
// or a call to unknown code, between the loads: the descriptor may differ,
// no fusion rule applies, and the remark says why.
// RUN: %make-plan %s --calls write,write --shape sequence --count 1000 > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
#include <err.h>
#include <unistd.h>

int out_fd;
char head[16], body[64];
void other(void);

void twice(void)
{
    if (write(out_fd, head, sizeof head) != sizeof head) // sc: write twice
        err(1, "head");
    if (write(out_fd, body, sizeof body) != sizeof body) // sc: write twice
        err(1, "body");
}
// CHECK: remark: plan cluster #1 (copy-offload): the region write at global-fd.c:22 -> write at global-fd.c:24 became one multi-call of 2 calls

// The descriptor read before a store through a pointer that may point to
// out_fd; the second write loads it again after the store.
void stored(int *p)
{
    int fd = out_fd;
    *p = 7;
    if (write(fd, head, sizeof head) != sizeof head)     // sc: write stored
        err(1, "head");
    if (write(out_fd, body, sizeof body) != sizeof body) // sc: write stored
        err(1, "body");
}
// CHECK: remark: plan cluster #2 (copy-offload): the region write at global-fd.c:35 -> write at global-fd.c:37 is left as it is: no gain: no fusion rule merges write, write (the descriptor is loaded again from one variable, which something between the loads may write (load at global-fd.c:33 and later))

// The same with a call to unknown code between the loads.
void called(void)
{
    int fd = out_fd;
    other();
    if (write(fd, head, sizeof head) != sizeof head)     // sc: write called
        err(1, "head");
    if (write(out_fd, body, sizeof body) != sizeof body) // sc: write called
        err(1, "body");
}
// CHECK: remark: plan cluster #3 (copy-offload): the region write at global-fd.c:47 -> write at global-fd.c:49 is left as it is: no gain: no fusion rule merges write, write (the descriptor is loaded again

// IR-LABEL: define {{.*}} @twice(
// IR: call i64 @__syscluster_run(
// IR-NOT: call i64 @write(
// IR: ret void
// IR-LABEL: define {{.*}} @stored(
// IR: call i64 @write(
// IR-LABEL: define {{.*}} @called(
// IR: call i64 @write(
