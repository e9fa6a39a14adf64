// §3.3.1, seed 000's own example: `read_bytes += n; block_sent++;` between
// write and sendto move after the region's last call when no later call
// can read or write the counters (static globals whose address never
// escapes: a system call reaches the program's memory only through its
// arguments).  They stay before the later calls' error checks, so a
// handler that prints them (err) sees what it saw.  Refused, each
// near-identical: the counter's address passed to a later call, a store
// through a pointer that may be the buffer, a volatile store, a global
// other translation units see, a local whose address escapes.
// RUN: %make-plan %s --calls read,write,sendto --shape sequence > %t.plan
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain %remarks -c %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %clang-sc -mllvm -syscluster-plan=%t.plan -mllvm -syscluster-assume-gain -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
#include <err.h>
#include <sys/socket.h>
#include <unistd.h>

static long read_bytes, block_sent;

long seed(int in, int out, int sock, char *buf, const struct sockaddr *to, socklen_t len)
{
    long n = read(in, buf, 4096);                  // sc: read seed
    if (n < 0)
        err(1, "read after %ld bytes", read_bytes);
    if (write(out, buf, n) < 0)                    // sc: write seed
        err(1, "write after %ld blocks", block_sent);
    read_bytes += n;
    block_sent++;
    if (sendto(sock, buf, n, 0, to, len) < 0)      // sc: sendto seed
        err(1, "sendto after %ld bytes, %ld blocks", read_bytes, block_sent);
    return n;
}
// CHECK: remark: plan cluster #1 (copy-offload): read at interchange.c:21 -> write at interchange.c:24 is a clusterable region
// CHECK: remark: plan cluster #1 (copy-offload): write at interchange.c:24 -> sendto at interchange.c:28 is a clusterable region
// CHECK: remark: plan cluster #1 (copy-offload): the region read at interchange.c:21 -> sendto at interchange.c:28 (3 calls of the plan) became one multi-call of 3 calls (libmulticall mc_run, auto backend; checked, its error handler kept (§3.3.2): read at interchange.c:21, write at interchange.c:24; moved the stores to read_bytes at interchange.c:26, block_sent at interchange.c:27 after the region's calls (§3.3.1): independent of the calls after them, still before those calls' error checks)
// The three calls run first; the counters are stored after the write's
// check and before the sendto's, whose handler reads them.
// IR-LABEL: define {{.*}} @seed(
// IR-NOT: call {{.*}} @sendto(
// IR: call i64 @__syscluster_run(ptr {{.*}}, i32 3,
// IR: call void (i32, ptr, ...) @err(i32 noundef 1, ptr noundef nonnull @.str.1
// IR: store i64 {{.*}}, ptr @read_bytes
// IR: store i64 {{.*}}, ptr @block_sent
// IR: call void (i32, ptr, ...) @err(i32 noundef 1, ptr noundef nonnull @.str.2

static long counter;

long address(int out, int sock, char *buf, long n, const struct sockaddr *to, socklen_t len)
{
    if (write(out, buf, n) < 0)                    // sc: write address
        err(1, "write");
    counter++;
    return sendto(sock, &counter, 8, 0, to, len);  // sc: sendto address
}
// CHECK: remark: plan cluster #2 (copy-offload): write at interchange.c:[[#@LINE-5]] -> sendto at interchange.c:[[#@LINE-2]] is not a clusterable region: convexity: store at interchange.c:[[#@LINE-3]] writes memory that argument 2 of call to sendto at interchange.c:[[#@LINE-2]] may point to: it cannot move past that call (§3.3.1)

long through(int in, int out, char *buf, long *total)
{
    long n = read(in, buf, 4096);                  // sc: read through
    if (n < 0)
        err(1, "read");
    *total = n;
    return write(out, buf, n);                     // sc: write through
}
// CHECK: remark: plan cluster #3 (copy-offload): read at interchange.c:[[#@LINE-6]] -> write at interchange.c:[[#@LINE-2]] is not a clusterable region: convexity: store at interchange.c:[[#@LINE-3]] writes memory that argument 2 of call to write at interchange.c:[[#@LINE-2]] may point to: it cannot move past that call (§3.3.1)

static volatile long ticks;

long vol(int in, int out, char *buf)
{
    long n = read(in, buf, 4096);                  // sc: read vol
    if (n < 0)
        err(1, "read");
    ticks = n;
    return write(out, buf, n);                     // sc: write vol
}
// CHECK: remark: plan cluster #4 (copy-offload): read at interchange.c:[[#@LINE-6]] -> write at interchange.c:[[#@LINE-2]] is not a clusterable region: convexity: store at interchange.c:[[#@LINE-3]] is a volatile or atomic store between the calls

long shared_bytes;

long shared(int in, int out, char *buf)
{
    long n = read(in, buf, 4096);                  // sc: read shared
    if (n < 0)
        err(1, "read");
    shared_bytes += n;
    return write(out, buf, n);                     // sc: write shared
}
// CHECK: remark: plan cluster #5 (copy-offload): read at interchange.c:[[#@LINE-6]] -> write at interchange.c:[[#@LINE-2]] is not a clusterable region: convexity: store at interchange.c:[[#@LINE-3]] writes shared_bytes, a global other translation units see

void note(long *counter);

long escaped(int in, int out, char *buf)
{
    long count = 0;
    note(&count);
    long n = read(in, buf, 4096);                  // sc: read escaped
    if (n < 0)
        err(1, "read");
    count = n;
    write(out, buf, n);                            // sc: write escaped
    return count;
}
// CHECK: remark: plan cluster #6 (copy-offload): read at interchange.c:[[#@LINE-7]] -> write at interchange.c:[[#@LINE-3]] is not a clusterable region: convexity: store at interchange.c:[[#@LINE-4]] writes the local count, whose address escapes: a later call may reach it through memory it is given
