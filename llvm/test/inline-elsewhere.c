// Seed 000 §3.3 across translation units: the plan's edge runs from a
// write here into put_util, which this file only declares (it is defined
// in Inputs/inline-util.c, as gzip's write_buf is in util.c and called from
// zip.c).  The pass sees one translation unit at a time: it says so at the
// call and leaves the code as clang made it.
// RUN: %make-plan %s %S/Inputs/inline-util.c --calls write,write --shape sequence --count 1000 > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
#include <stdlib.h>
#include <unistd.h>

long put_util(int fd, const char *buf, long n);

long tagged(int fd, const char *buf, long n)
{
    if (write(fd, "record: ", 8) < 0)   // sc: write tagged @tu
        exit(5);
    return put_util(fd, buf, n);
}

// A wrapper of the other file that ends in its call (`return read(...)`):
// the recorder names the line here that calls it.
long get_util(int fd, char *buf);
void copy_util(int in, int out)
{
    char buf[4096];
    long n;
    while ((n = get_util(in, buf)) > 0)     // sc: read copy_util @loop
        put_util(out, buf, n);
}

// CHECK: inline-elsewhere.c:18:{{.*}} remark: plan cluster #1 (copy-offload): write at inline-util.c:7 is in put_util, called here (tagged at inline-elsewhere.c:18), which is defined in another translation unit: it cannot be inlined here (the pass sees one translation unit at a time; inlining across them, as under -flto, is not done)
// IR-LABEL: define {{.*}} @tagged(
// IR: call i64 @write(
// IR: call i64 @put_util(
// IR-NOT: __syscluster_run
// CHECK: inline-elsewhere.c:28:{{.*}} remark: plan cluster #2 (copy-offload): read at inline-elsewhere.c:28 is issued by get_util, which copy_util calls there and which is defined in another translation unit (a wrapper ending in read: the recorder names its caller): it cannot be inlined here
// CHECK-NOT: stale plan
