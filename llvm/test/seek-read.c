// lseek(fd, pos, SEEK_SET) checked → read(fd, buf, n) on a descriptor
// global of this translation unit (fsck.fat's fs_read): one pread
// (__syscluster_seek_read), no multi-call, whatever the calibration; the
// position the pair would have left is set (__syscluster_position_sync)
// before every other call given the descriptor and before every store
// into the global.  The same pair on a global other translation units can
// name, or one whose address is taken, stays as it was.
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

long next(char *buf)
{
    return read(fd, buf, 10); // reads where get left the position
}

void done(void)
{
    close(fd);
}
// CHECK: remark: plan cluster #{{[0-9]+}} (copy-offload): the region lseek at seek-read.c:24 -> read at seek-read.c:26 became one pread (the plan's mechanism; __syscluster_seek_read): one crossing instead of two on a close-on-exec regular file or block device, the position the pair leaves kept pending for fd's other uses, the two calls as written elsewhere
// IR-LABEL: define {{.*}} @open_it(
// IR: call void @__syscluster_position_sync(i32 {{.*}}, i32 1, ptr @syscluster.fdkind.fd, ptr @syscluster.pending.fd)
// IR-NEXT: store i32 {{.*}}, ptr @fd
// IR-LABEL: define {{.*}} @get(
// IR-NOT: call i64 @lseek(
// IR: call i64 @__syscluster_seek_read(i32 {{.*}}, i64 %{{[0-9]+}}, ptr %{{[0-9]+}}, i64 100, i32 1, ptr {{.*}}, ptr @syscluster.fdkind.fd, ptr @syscluster.pending.fd)
// IR-NOT: call i64 @read(
// IR-LABEL: define {{.*}} @next(
// IR: call void @__syscluster_position_sync(i32 {{.*}}, i32 0, ptr @syscluster.fdkind.fd, ptr @syscluster.pending.fd)
// IR-NEXT: call i64 @read(
// IR-LABEL: define {{.*}} @done(
// IR: call void @__syscluster_position_sync(i32 {{.*}}, i32 2, ptr @syscluster.fdkind.fd, ptr @syscluster.pending.fd)
// IR-NEXT: call i32 @close(

int shared_fd; // other translation units can name it

long get_shared(char *buf, long pos)
{
    if (lseek(shared_fd, pos, SEEK_SET) != pos) // sc: lseek get_shared
        exit(1);
    return read(shared_fd, buf, 100);           // sc: read get_shared
}
// CHECK: remark: plan cluster #{{[0-9]+}} (copy-offload): the region lseek at seek-read.c:57 -> read at seek-read.c:59 is left as it is: no gain: the fusion rule for lseek, read (seek_pread) pays from
// IR-LABEL: define {{.*}} @get_shared(
// IR: call i64 @lseek(
// IR: call i64 @read(

static int taken_fd;
int *where(void) { return &taken_fd; } // its address escapes

long get_taken(char *buf, long pos)
{
    if (lseek(taken_fd, pos, SEEK_SET) != pos) // sc: lseek get_taken
        exit(1);
    return read(taken_fd, buf, 100);           // sc: read get_taken
}
// CHECK: remark: plan cluster #{{[0-9]+}} (copy-offload): the region lseek at seek-read.c:71 -> read at seek-read.c:73 is not one pread: position: the address of taken_fd is taken (ret at seek-read.c:67)
// IR-LABEL: define {{.*}} @get_taken(
// IR: call i64 @lseek(
// IR: call i64 @read(

static int dup_fd;
void set_dup(const char *p) { dup_fd = open(p, O_RDONLY); }
void to_stdout(void) { dup2(dup_fd, 1); } // stdout now shares its position

long get_dup(char *buf, long pos)
{
    if (lseek(dup_fd, pos, SEEK_SET) != pos) // sc: lseek get_dup
        exit(1);
    return read(dup_fd, buf, 100);           // sc: read get_dup
}
// CHECK: remark: plan cluster #{{[0-9]+}} (copy-offload): the region lseek at seek-read.c:{{[0-9]+}} -> read at seek-read.c:{{[0-9]+}} is not one pread: position: call to dup2 at seek-read.c:{{[0-9]+}} may make another descriptor of the open file in dup_fd, whose uses would share its position
// IR-LABEL: define {{.*}} @get_dup(
// IR: call i64 @lseek(
// IR: call i64 @read(

// The descriptor stored must be one this process opened: a parameter's
// (an inherited 0, 1, 2, a dup, a number from argv) may share its open
// file with another process.  The same code as get's, but the store.
static int param_fd;
void set_param(int f) { param_fd = f; }

long get_param(char *buf, long pos)
{
    if (lseek(param_fd, pos, SEEK_SET) != pos) // sc: lseek get_param
        exit(1);
    return read(param_fd, buf, 100);           // sc: read get_param
}
// CHECK: remark: plan cluster #{{[0-9]+}} (copy-offload): the region lseek at seek-read.c:{{[0-9]+}} -> read at seek-read.c:{{[0-9]+}} is not one pread: position: store at seek-read.c:{{[0-9]+}} stores into param_fd a descriptor this process may not have opened (not the result of open, openat or creat, nor a negative constant): its open file may be shared
// IR-LABEL: define {{.*}} @get_param(
// IR: call i64 @lseek(
// IR: call i64 @read(

// A descriptor loaded from the global and given to other code (here a
// copy in a local, then a function of this unit that is not inlined): the
// pass would not see that code's uses of the position.
static int copied_fd;
void open_copied(const char *p) { copied_fd = open(p, O_RDONLY); }
__attribute__((noinline)) long elsewhere(int f) { return read(f, 0, 0); }
long use_copy(void) { int f2 = copied_fd; return elsewhere(f2); }

long get_copied(char *buf, long pos)
{
    if (lseek(copied_fd, pos, SEEK_SET) != pos) // sc: lseek get_copied
        exit(1);
    return read(copied_fd, buf, 100);           // sc: read get_copied
}
// CHECK: remark: plan cluster #{{[0-9]+}} (copy-offload): the region lseek at seek-read.c:{{[0-9]+}} -> read at seek-read.c:{{[0-9]+}} is not one pread: position: the descriptor in copied_fd goes to call to elsewhere at seek-read.c:{{[0-9]+}}, which the pass does not follow
// IR-LABEL: define {{.*}} @get_copied(
// IR: call i64 @lseek(
// IR: call i64 @read(

// Near-identical, refused: the descriptor is opened without O_CLOEXEC
// (flags known without it), so the runtime would only ever check it and run the
// pair as written.
static int plain_fd;
void open_plain(const char *p, int rw) { plain_fd = open(p, rw ? O_RDWR : O_RDONLY); } // as fsck.fat's io.c

long get_plain(char *buf, long pos)
{
    if (lseek(plain_fd, pos, SEEK_SET) != pos) // sc: lseek get_plain
        exit(1);
    return read(plain_fd, buf, 100);           // sc: read get_plain
}
// CHECK: remark: plan cluster #{{[0-9]+}} (copy-offload): the region lseek at seek-read.c:{{[0-9]+}} -> read at seek-read.c:{{[0-9]+}} is not one pread: no gain: every descriptor stored into plain_fd is opened without O_CLOEXEC (call to open at seek-read.c:{{[0-9]+}})
// IR-LABEL: define {{.*}} @get_plain(
// IR: call i64 @lseek(
// IR: call i64 @read(

// Every system call but the position-free ones (pread, pwrite, fsync,
// fdatasync, fstat, ftruncate) given fd gets the pending position first:
// sendfile from fd reads at its position, preadv2 with offset -1 too.
#include <sys/sendfile.h>
#include <sys/uio.h>
long send_it(int out) { return sendfile(out, fd, 0, 10); }
ssize_t preadv2(int, const struct iovec *, int, off_t, int); // _GNU_SOURCE
long preadv2_it(struct iovec *v) { return preadv2(fd, v, 1, -1, 0); }
long pread_it(char *buf) { return pread(fd, buf, 10, 0); }
// IR-LABEL: define {{.*}} @send_it(
// IR: call void @__syscluster_position_sync(i32 {{.*}}, i32 0, ptr @syscluster.fdkind.fd, ptr @syscluster.pending.fd)
// IR-NEXT: call i64 @sendfile
// IR-LABEL: define {{.*}} @preadv2_it(
// IR: call void @__syscluster_position_sync(i32 {{.*}}, i32 0, ptr @syscluster.fdkind.fd, ptr @syscluster.pending.fd)
// IR-NEXT: call i64 @preadv2
// IR-LABEL: define {{.*}} @pread_it(
// IR-NOT: @__syscluster_position_sync
// IR: call i64 @pread
