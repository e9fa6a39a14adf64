/* fuzz: the differential fuzzer's program.  From a seed, a random sequence
 * of open/dup/dup2/write (short and long)/writev/pwrite/lseek/read/fstat/
 * fork/close over a few files shared by several descriptors; it prints
 * every call and what it returned (results, offsets, sizes, bytes read).
 * Run plain and under the runtime, the output and every file must be the
 * same byte for byte (preload/test/fuzz.sh compares them).
 *   fuzz DIR SEED [OPS]      OPS calls (default 400) on DIR/f0..f2 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define NFILES 3
#define NDESC 8

static uint64_t rng;
static char dir[4000];
static int desc[NDESC]; /* fds the program holds, -1 for none */
static long opno;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static unsigned pick(unsigned n) { return (unsigned)(next() % n); }

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The log is kept in memory shared with fork children and printed at the
 * end: printing as it goes would be a write to another file (or a pipe),
 * which makes the runtime write everything out and hides what it defers. */
#define LOGCAP (16 << 20)
static struct {
    size_t len;
    char text[LOGCAP];
} *logbuf;

static void say(const char *fmt, ...)
{
    char line[256];
    va_list ap;
    int n = snprintf(line, sizeof line, "%ld ", opno);
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    if (logbuf->len + (size_t)n <= LOGCAP) {
        memcpy(logbuf->text + logbuf->len, line, (size_t)n);
        logbuf->len += (size_t)n;
    }
}

static void result(const char *what, long r)
{
    if (r < 0)
        say("%s = -1 %s", what, strerror(errno));
    else
        say("%s = %ld", what, r);
}

/* Bytes that say which operation wrote them, so that a reordering shows. */
static void fill(char *b, size_t n)
{
    char tag[32];
    int t = snprintf(tag, sizeof tag, "<%ld>", opno);
    for (size_t i = 0; i < n; i++)
        b[i] = i + 1 == n ? '\n' : tag[i % (size_t)t];
}

/* A held descriptor; now and then -1 (the call fails with EBADF). */
static int some_fd(void)
{
    int held[NDESC], n = 0;
    for (int i = 0; i < NDESC; i++)
        if (desc[i] >= 0)
            held[n++] = desc[i];
    return n == 0 || pick(50) == 0 ? -1 : held[pick((unsigned)n)];
}

static int free_desc(void)
{
    for (int i = 0; i < NDESC; i++)
        if (desc[i] < 0)
            return i;
    return -1;
}

static void one_op(int in_child);

static void do_fork(void)
{
    pid_t p = fork();
    if (p == 0) {
        int n = 1 + (int)pick(6);
        for (int i = 0; i < n; i++) {
            opno++;
            one_op(1);
        }
        _exit(0);
    }
    int st = 0;
    waitpid(p, &st, 0);
    /* The child's operations used the generator's numbers: so does the
     * parent, to stay in step whatever the child did. */
    for (int i = 0; i < 64; i++)
        next();
    say("fork: child %s", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "exited 0" : "failed");
}

static void one_op(int in_child)
{
    static char buf[20000];
    int fd = some_fd();
    unsigned op = pick(100);
    if (op < 8) { /* open */
        int k = free_desc();
        if (k < 0)
            return;
        char path[4100];
        unsigned f = pick(NFILES);
        snprintf(path, sizeof path, "%s/f%u", dir, f);
        static const int modes[] = {O_WRONLY, O_RDWR, O_WRONLY | O_APPEND, O_RDWR | O_APPEND, O_RDONLY};
        int m = modes[pick(5)];
        desc[k] = open(path, m | (m == O_RDONLY ? 0 : O_CREAT), 0644);
        char what[64];
        snprintf(what, sizeof what, "open f%u %x", f, m);
        result(what, desc[k]);
    } else if (op < 13) { /* dup */
        int k = free_desc();
        if (k < 0)
            return;
        desc[k] = dup(fd);
        result("dup", desc[k]);
    } else if (op < 18) { /* dup2 onto another held descriptor */
        int k = (int)pick(NDESC);
        if (desc[k] < 0)
            return;
        result("dup2", dup2(fd, desc[k]));
    } else if (op < 23) { /* close */
        int k = (int)pick(NDESC);
        if (desc[k] < 0)
            return;
        result("close", close(desc[k]));
        desc[k] = -1;
    } else if (op < 70) { /* a burst of short writes */
        for (int i = 1 + (int)pick(12); i > 0; i--) {
            size_t n = 1 + pick(40);
            fill(buf, n);
            result("write", write(fd, buf, n));
        }
    } else if (op < 76) { /* long write */
        size_t n = 4096 + pick(8000);
        fill(buf, n);
        result("write long", write(fd, buf, n));
    } else if (op < 80) { /* writev, short or long */
        size_t n = 2 + (pick(3) == 0 ? 5000 + pick(5000) : pick(60));
        fill(buf, n);
        struct iovec v[2] = {{buf, n / 2}, {buf + n / 2, n - n / 2}};
        result("writev", writev(fd, v, 2));
    } else if (op < 84) { /* pwrite */
        size_t n = 1 + pick(pick(4) == 0 ? 6000 : 30);
        fill(buf, n);
        off_t o = (off_t)pick(20000);
        result("pwrite", pwrite(fd, buf, n, o));
    } else if (op < 89) { /* lseek */
        static const int wh[] = {SEEK_SET, SEEK_CUR, SEEK_END};
        int w = wh[pick(3)];
        off_t o = w == SEEK_SET ? (off_t)pick(20000) : (off_t)pick(200) - 100;
        result("lseek", lseek(fd, o, w));
    } else if (op < 93) { /* read: what the file holds there */
        size_t n = 1 + pick(pick(2) ? 64 : 10000);
        ssize_t r = read(fd, buf, n);
        if (r < 0) {
            result("read", r);
        } else {
            uint64_t h = 1469598103934665603ULL;
            for (ssize_t i = 0; i < r; i++)
                h = (h ^ (unsigned char)buf[i]) * 1099511628211ULL;
            say("read %zu = %zd %016llx", n, r, (unsigned long long)h);
        }
    } else if (op < 96) { /* fstat: the size */
        struct stat st;
        if (fstat(fd, &st) < 0)
            result("fstat", -1);
        else
            say("fstat size %lld", (long long)st.st_size);
    } else if (!in_child) {
        do_fork();
    }
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: fuzz DIR SEED [OPS]\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    rng = strtoull(argv[2], NULL, 10) * 2654435761ULL + 88172645463325252ULL;
    long ops = argc == 4 ? atol(argv[3]) : 400;
    logbuf = mmap(NULL, sizeof *logbuf, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (logbuf == MAP_FAILED)
        return 2;
    for (int i = 0; i < NDESC; i++)
        desc[i] = -1;
    for (int f = 0; f < NFILES; f++) {
        char path[4100];
        snprintf(path, sizeof path, "%s/f%d", dir, f);
        desc[f] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (desc[f] < 0) {
            perror(path);
            return 2;
        }
    }
    /* Two descriptors of one description from the start (2>&1), and a
     * second open of the same file. */
    desc[NFILES] = dup(desc[0]);
    char p0[4100];
    snprintf(p0, sizeof p0, "%s/f0", dir);
    desc[NFILES + 1] = open(p0, O_RDWR);
    for (opno = 1; opno <= ops; opno++)
        one_op(0);
    fwrite(logbuf->text, 1, logbuf->len, stdout);
    return 0;
}
