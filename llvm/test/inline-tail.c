// Seed 000 §3.3 with wrappers that end in their system call
// (`return read(fd, buf, n);`): at -O2 such a call is a jump, so the
// recorder sees read return into the wrapper's caller and the plan names
// the caller's line (main's loop here), where the IR has a call to the
// wrapper.  The pass matches the location to the wrapper's call of read
// (the wrapper called at that line, read its last act), inlines the
// wrappers into a trial copy of the caller, and the rotated copy loop
// becomes one looped multi-call (§3.3.3, §3.4).  clang is told not to
// inline (-inline-threshold), as its inliner leaves such wrappers out of
// line when they are large or called from many places.
// RUN: %make-plan %s --calls read,write --shape loop > %t.plan
// RUN: %clang-sc -mllvm -inline-threshold=-1000 -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -inline-threshold=-1000 -mllvm -syscluster-plan=%t.plan -S -emit-llvm %s -o %t.ll
// RUN: FileCheck %s --check-prefix=IR < %t.ll
// RUN: opt -passes=verify -disable-output %t.ll 2>&1 | FileCheck %s --allow-empty --check-prefix=VERIFY
#include <fcntl.h>
#include <unistd.h>

long get_block(int fd, char *buf)
{
    return read(fd, buf, 4096);
}
void put_block(int fd, const char *buf, long n)
{
    write(fd, buf, n);
}

int main(int argc, char *argv[])
{
    char buf[4096];
    long n;
    int in = open(argv[1], O_RDONLY), out = creat(argv[2], 0644);
    while ((n = get_block(in, buf)) > 0)    // sc: read main @copy
        put_block(out, buf, n);             // sc: write main @copy
    return 0;
}

// The same loop, but it counts its blocks: a store in the loop.  The
// wrappers are inlined into a trial copy, the loop is refused there, and
// the copy is dropped.
long blocks;
int counting(int in, int out)
{
    char buf[4096];
    long n;
    while ((n = get_block(in, buf)) > 0) {  // sc: read counting @count
        put_block(out, buf, n);             // sc: write counting @count
        blocks++;
    }
    return 0;
}

// CHECK: inline-tail.c:21:{{.*}} remark: plan cluster #1 (copy-offload): read at inline-tail.c:21 matched (100 calls recorded there, at inline-tail.c:33, the call that reaches it)
// CHECK: inline-tail.c:25:{{.*}} remark: plan cluster #1 (copy-offload): the loop of write at inline-tail.c:25 -> read at inline-tail.c:21 became one looped multi-call
// CHECK: inline-tail.c:33:{{.*}} remark: plan cluster #1 (copy-offload): read at inline-tail.c:21 is reached through get_block, called from main at inline-tail.c:33: inlined (§3.3) for the multi-call it is now part of
// CHECK: inline-tail.c:34:{{.*}} remark: plan cluster #1 (copy-offload): write at inline-tail.c:25 is reached through put_block, called from main at inline-tail.c:34: inlined (§3.3) for the multi-call it is now part of
// CHECK: remark: plan cluster #2 (copy-offload): write at inline-tail.c:25 -> read at inline-tail.c:21 is not a clusterable region: convexity: store at inline-tail.c:48
// CHECK: inline-tail.c:46:{{.*}} remark: plan cluster #2 (copy-offload): read at inline-tail.c:21 is reached through get_block, called from counting at inline-tail.c:46: inlined into a trial copy of counting, but no region of the cluster was replaced there

// IR-LABEL: define {{.*}} @get_block(
// IR: call i64 @read(
// IR-LABEL: define {{.*}} @put_block(
// IR: call i64 @write(
// IR-LABEL: define {{.*}} @main(
// IR-NOT: @get_block(
// IR-NOT: @put_block(
// IR: call i64 @__syscluster_write_read_loop(
// IR-LABEL: define {{.*}} @counting(
// IR: call {{.*}} @get_block(
// IR: call void @put_block(
// VERIFY-NOT: {{.}}
