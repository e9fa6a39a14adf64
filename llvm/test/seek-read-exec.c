// lseek + read on the translation unit's own descriptor, as in
// seek-read.c, in a module that may start another program: the new
// program would inherit the open file (without close-on-exec) with the
// position the pair leaves not yet set, so the pair stays two calls and
// the remark names the call.  seek-read.c is the same without the exec.
// RUN: %make-plan %s --calls lseek,read --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static int fd;

void open_it(const char *path)
{
    fd = open(path, O_RDONLY | O_CLOEXEC);
}

long get(char *buf, long pos)
{
    if (lseek(fd, pos, SEEK_SET) != pos) // sc: lseek get
        exit(1);
    return read(fd, buf, 100);           // sc: read get
}

int show(void)
{
    return system("cat /proc/self/fdinfo/3");
}
// CHECK: remark: plan cluster #{{[0-9]+}} (copy-offload): the region lseek at seek-read-exec.c:22 -> read at seek-read-exec.c:24 is not one pread: position: call to system at seek-read-exec.c:29 may start another program, which would inherit the open file in fd with its position not yet set
// IR-LABEL: define {{.*}} @get(
// IR: call i64 @lseek(
// IR: call i64 @read(
