// Seed 000 §3.3: a plan edge whose calls lie in two functions.  Programs
// wrap their calls (write_buf, xwrite): here each caller writes a tag
// itself and the record through an extern helper whose error report makes
// it too large for clang's inliner at -O2, so the plan's write -> write
// edge crosses from the caller into the helper.  The pass inlines the
// helper into a trial copy of the caller and keeps it only when the
// region is replaced there; the helper keeps its body for other callers.
// Each @GROUP is one cluster of the plan (make-plan.py).
// RUN: %make-plan %s --calls write,write --shape sequence --count 1000 > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -S -emit-llvm %s -o %t.ll
// RUN: FileCheck %s --check-prefix=IR < %t.ll
// RUN: opt -passes=verify -disable-output %t.ll 2>&1 | FileCheck %s --allow-empty --check-prefix=VERIFY
// Clang alone leaves every helper out of line (else this test tests nothing).
// RUN: %clang -O2 -g -S -emit-llvm %s -o - | FileCheck %s --check-prefix=CLANG
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *prog = "inline";
long records;

// What makes a helper too large for clang's inliner: its error report.
#define REPORT(what, code)                                                                              \
    do {                                                                                                \
        int e = errno;                                                                                  \
        fprintf(stderr, "%s: cannot write %s (%ld bytes) to descriptor %d: %s\n", prog, what, (long)n, fd, \
                strerror(e));                                                                           \
        fprintf(stderr, "%s: %ld records were written before it\n", prog, records);                    \
        fflush(stderr);                                                                                 \
        exit(code);                                                                                     \
    } while (0)

// Accepted: the helper is inlined and the two writes become one multi-call.
long put_record(int fd, const char *buf, long n)
{
    long w = write(fd, buf, n);     // sc: write put_record @ok
    if (w < 0)
        REPORT("a record", 6);
    return w;
}
long tagged(int fd, const char *buf, long n)
{
    if (write(fd, "record: ", 8) < 0)   // sc: write tagged @ok
        exit(5);
    return put_record(fd, buf, n);
}

// Refused after inlining: a store between the calls (convexity).  The trial
// copy is dropped: the caller still calls the helper.
long put_counted(int fd, const char *buf, long n)
{
    long w = write(fd, buf, n);     // sc: write put_counted @store
    if (w < 0)
        REPORT("a counted record", 6);
    return w;
}
long counted(int fd, const char *buf, long n)
{
    if (write(fd, "record: ", 8) < 0)   // sc: write counted @store
        exit(5);
    records++;
    return put_counted(fd, buf, n);
}

// Refused: the helper is marked noinline.
__attribute__((noinline)) long put_pinned(int fd, const char *buf, long n)
{
    return write(fd, buf, n);       // sc: write put_pinned @noinline
}
long pinned(int fd, const char *buf, long n)
{
    if (write(fd, "record: ", 8) < 0)   // sc: write pinned @noinline
        exit(5);
    return put_pinned(fd, buf, n);
}

// Refused: the helper is recursive.
long put_chain(int fd, const char *buf, long n)
{
    if (n > 65536)  // a large record: written in two halves
        return put_chain(fd, buf, n / 2) + put_chain(fd, buf + n / 2, n - n / 2);
    long w = write(fd, buf, n);     // sc: write put_chain @recursive
    if (w < 0)
        REPORT("a chained record", 6);
    return w;
}
long chained(int fd, const char *buf, long n)
{
    if (write(fd, "record: ", 8) < 0)   // sc: write chained @recursive
        exit(5);
    return put_chain(fd, buf, n);
}

// Accepted, and the helper keeps its body: its address is taken (a table
// of writers another part of the program calls through).
static long put_hooked(int fd, const char *buf, long n)
{
    long w = write(fd, buf, n);     // sc: write put_hooked @hooked
    if (w < 0)
        REPORT("a hooked record", 6);
    return w;
}
long (*writers[])(int, const char *, long) = {put_hooked};
long hooked(int fd, const char *buf, long n)
{
    if (write(fd, "record: ", 8) < 0)   // sc: write hooked @hooked
        exit(5);
    return put_hooked(fd, buf, n);
}

// Refused: nothing here calls the helper (its caller is in another
// translation unit).
long put_orphan(int fd, const char *buf, long n)
{
    long w = write(fd, buf, n);     // sc: write put_orphan @orphan
    if (w < 0)
        REPORT("an orphan record", 6);
    return w;
}
void orphan_tag(int fd)
{
    if (write(fd, "record: ", 8) < 0)   // sc: write orphan_tag @orphan
        exit(5);
}

// Accepted, and a static helper that nothing calls any more goes.
static long put_twice(int fd, const char *buf, long n)
{
    long w = write(fd, buf, n);     // sc: write put_twice @static
    if (w < 0)
        REPORT("half a record", 6);
    return w;
}
long twice(int fd, const char *buf, long n)
{
    if (write(fd, "record: ", 8) < 0)   // sc: write twice @static
        exit(5);
    if (put_twice(fd, buf, n / 2) < 0)
        exit(6);
    return put_twice(fd, buf + n / 2, n - n / 2);
}

// The remarks, the IR, and clang alone (the checks are here, after the code,
// so that the lines they name stay put).
// CHECK: inline.c:46:{{.*}} remark: plan cluster #1 (copy-offload): the region write at inline.c:46 -> write at inline.c:39 became one multi-call of 2 calls (libmulticall mc_run, auto backend; checked, its error handler kept (§3.3.2): write at inline.c:46)
// CHECK: inline.c:48:{{.*}} remark: plan cluster #1 (copy-offload): write at inline.c:39 is reached through put_record, called from tagged at inline.c:48: inlined (§3.3) for the multi-call it is now part of
// IR-LABEL: define {{.*}} @put_record(
// IR: call i64 @write(
// IR-LABEL: define {{.*}} @tagged(
// IR-NOT: call {{.*}} @put_record(
// IR-NOT: call {{.*}} @write(
// IR: call i64 @__syscluster_run(ptr {{.*}}, i32 2,
// IR-NOT: call {{.*}} @write(
// IR: ret i64
// CLANG-LABEL: define {{.*}} @tagged(
// CLANG: call i64 @put_record(
// CHECK: inline.c:62:{{.*}} remark: plan cluster #2 (copy-offload): write at inline.c:62 -> write at inline.c:55 is not a clusterable region: convexity: store at inline.c:64
// CHECK: inline.c:65:{{.*}} remark: plan cluster #2 (copy-offload): write at inline.c:55 is reached through put_counted, called from counted at inline.c:65: inlined into a trial copy of counted, but no region of the cluster was replaced there (the remarks above say why): counted is left as it was
// IR-LABEL: define {{.*}} @counted(
// IR: call i64 @write(
// IR: call i64 @put_counted(
// CLANG-LABEL: define {{.*}} @counted(
// CLANG: call i64 @put_counted(
// CHECK: inline.c:77:{{.*}} remark: plan cluster #3 (copy-offload): write at inline.c:71 is reached through put_pinned, called from pinned at inline.c:77: it cannot be inlined: put_pinned is marked noinline
// IR-LABEL: define {{.*}} @pinned(
// IR: call i64 @put_pinned(
// CHECK: inline.c:94:{{.*}} remark: plan cluster #4 (copy-offload): write at inline.c:85 is reached through put_chain, called from chained at inline.c:94: it cannot be inlined: put_chain: recursive call
// IR-LABEL: define {{.*}} @chained(
// IR: call i64 @put_chain(
// CLANG-LABEL: define {{.*}} @chained(
// CLANG: call i64 @put_chain(
// CHECK: inline.c:111:{{.*}} remark: plan cluster #5 (copy-offload): write at inline.c:101 is reached through put_hooked, called from hooked at inline.c:111: inlined (§3.3) for the multi-call it is now part of
// IR-LABEL: define {{.*}} @put_hooked(
// IR: call i64 @write(
// IR-LABEL: define {{.*}} @hooked(
// IR-NOT: call {{.*}} @put_hooked(
// IR: call i64 @__syscluster_run(
// CLANG-LABEL: define {{.*}} @hooked(
// CLANG: call i64 @put_hooked(
// CHECK: inline.c:118:{{.*}} remark: plan cluster #6 (copy-offload): write at inline.c:118 (in put_orphan) and write at inline.c:125 (in orphan_tag) are in different functions and no function of this translation unit calls both (within 2 calls): put_orphan is not called in this translation unit; orphan_tag is not called in this translation unit; a common caller, if there is one, is in another translation unit
// CHECK: remark: plan cluster #7 (copy-offload): the region write at inline.c:139 -> write at inline.c:132 (3 calls of the plan) became one multi-call of 3 calls
// CHECK: inline.c:141:{{.*}} remark: plan cluster #7 (copy-offload): write at inline.c:132 is reached through put_twice, called from twice at inline.c:141: inlined (§3.3)
// CHECK: inline.c:143:{{.*}} remark: plan cluster #7 (copy-offload): write at inline.c:132 is reached through put_twice, called from twice at inline.c:143: inlined (§3.3)
// RUN: FileCheck %s --check-prefix=GONE < %t.ll
// GONE-NOT: define {{.*}} @put_twice(
// GONE: define {{.*}} @twice(
// GONE-NOT: define {{.*}} @put_twice(
// IR-LABEL: define {{.*}} @twice(
// IR: call i64 @__syscluster_run(ptr {{.*}}, i32 3,
// CLANG-LABEL: define {{.*}} @twice(
// CLANG: call {{.*}} @put_twice(
// CLANG: define internal {{.*}} @put_twice(
// The output is valid IR, its debug info too (one DISubprogram per function).
// VERIFY-NOT: {{.}}
