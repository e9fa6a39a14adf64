// Descriptors registered once (mc_fd_register): a region's descriptor that
// its function opened and gives to nothing but system calls is registered
// at its first multi-call (__syscluster_run_own, the mask of the calls
// whose descriptor is), so that libmulticall does not classify it again
// in each run; before every call of the function that may change what a
// number names (close, dup2 — both numbers —, fcntl; every number before
// close_range: __syscluster_fd_release_all) the runtime forgets it
// (__syscluster_fd_release); an open changes no number that was open.  The same
// region on a descriptor given to another function, stored, or a
// parameter: not registered, the multi-call as before.
// RUN: %make-plan %s --calls write,write --shape sequence --count 1000 > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
#define _GNU_SOURCE
#include <err.h>
#include <fcntl.h>
#include <unistd.h>

void note(int fd);
extern int saved;

int own(const char *path, const char *other, long n)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -1;
    for (long i = 0; i < n; i++) {
        if (write(fd, "ab", 2) != 2)   // sc: write own
            err(1, "ab");
        if (write(fd, "cd", 2) != 2)   // sc: write own
            err(1, "cd");
    }
    int o = open(other, O_WRONLY);
    if (o < 0 || dup2(o, fd) != fd || fcntl(fd, F_SETFL, O_APPEND) != 0)
        return -1;
    close(o);
    close_range(3, ~0u, 0);
    return close(fd);
}
// CHECK: remark: plan cluster #1 (copy-offload): the region write at own-fd.c:28 -> write at own-fd.c:30 became one multi-call of 2 calls {{.*}}; its descriptors registered once per thread (mc_fd_register: classified once, not in each run): opened here (call to open at own-fd.c:24) and given to nothing but system calls, the runtime told before each call of the function that may change a descriptor;

// IR-LABEL: define {{.*}} @own(
// IR: call i64 @__syscluster_run_own(ptr {{.*}}, i32 2, i64 {{[0-9]+}}, ptr @syscluster.region.runs{{.*}}, i64 3)
// IR: call void @__syscluster_fd_release(i64 [[O:%.*]])
// IR-NEXT: [[FD:%.*]] = sext i32
// IR-NEXT: call void @__syscluster_fd_release(i64 [[FD]])
// IR-NEXT: call i32 @dup2(
// IR: call void @__syscluster_fd_release(
// IR-NEXT: call i32 (i32, i32, ...) @fcntl(
// IR: call void @__syscluster_fd_release(
// IR-NEXT: call i32 @close(
// IR-NEXT: call void @__syscluster_fd_release_all()
// IR-NEXT: call i32 @close_range(
// IR: call void @__syscluster_fd_release(
// IR-NEXT: call i32 @close(

// Given to another function: not registered.
int given(const char *path, long n)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -1;
    note(fd);
    for (long i = 0; i < n; i++) {
        if (write(fd, "ab", 2) != 2)   // sc: write given
            err(1, "ab");
        if (write(fd, "cd", 2) != 2)   // sc: write given
            err(1, "cd");
    }
    return close(fd);
}
// CHECK: remark: plan cluster #2 (copy-offload): the region write at own-fd.c:65 -> write at own-fd.c:67 became one multi-call of 2 calls (libmulticall mc_run, auto backend; checked, its error handler kept (§3.3.2): write at own-fd.c:65 (short transfer)); estimated
// IR-LABEL: define {{.*}} @given(
// IR-NOT: __syscluster_fd_release
// IR: call i64 @__syscluster_run(
// IR-NOT: __syscluster_fd_release
// IR: ret i32

// Stored where other code may read it: not registered.
int stored(const char *path, long n)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -1;
    saved = fd;
    for (long i = 0; i < n; i++) {
        if (write(fd, "ab", 2) != 2)   // sc: write stored
            err(1, "ab");
        if (write(fd, "cd", 2) != 2)   // sc: write stored
            err(1, "cd");
    }
    return 0;
}
// CHECK: remark: plan cluster #3 (copy-offload): the region write at own-fd.c:87 -> write at own-fd.c:89 became one multi-call of 2 calls (libmulticall mc_run, auto backend; checked, its error handler kept (§3.3.2): write at own-fd.c:87 (short transfer)); estimated
// IR-LABEL: define {{.*}} @stored(
// IR: call i64 @__syscluster_run(

// A parameter (the caller's number): not registered.
void param(int fd, long n)
{
    for (long i = 0; i < n; i++) {
        if (write(fd, "ab", 2) != 2)   // sc: write param
            err(1, "ab");
        if (write(fd, "cd", 2) != 2)   // sc: write param
            err(1, "cd");
    }
}
// CHECK: remark: plan cluster #4 (copy-offload): the region write at own-fd.c:102 -> write at own-fd.c:104 became one multi-call of 2 calls (libmulticall mc_run, auto backend; checked, its error handler kept (§3.3.2): write at own-fd.c:102 (short transfer)); estimated
// IR-LABEL: define {{.*}} @param(
// IR: call i64 @__syscluster_run(
