/* semantics: in-process checks that a deferred write is never observable as
 * missing, misplaced or reordered.  Meant to run under the runtime (it also
 * passes without it, which is the point).
 *   semantics DIR            runs every check, prints "ok NAME" or "FAIL"
 *   semantics DIR exit MODE  writes 1000 records to DIR/exit, then ends by
 *                            MODE: return exit _exit quick_exit pthread abort
 *                            exec vfork-exec
 *   semantics DIR interleave N   short lines to fd 1 and fd 2 in turn (with
 *                            large writes among them), for `> log 2>&1`
 *   semantics DIR futex N    shared_futex_publishes N times, numbered records
 *   semantics DIR forks N    N forks (_Forks N: _Fork) while a thread writes */
#include <errno.h>
#include <fcntl.h>
#include <mntent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[4096];
static int failures;

#define CHECK(cond, ...)                                                                                \
    do {                                                                                                \
        if (!(cond)) {                                                                                  \
            printf("FAIL %s: ", __func__);                                                              \
            printf(__VA_ARGS__);                                                                        \
            printf("\n");                                                                               \
            failures++;                                                                                 \
            return;                                                                                     \
        }                                                                                               \
    } while (0)

static char *path(const char *name)
{
    static char p[8][4200];
    static int k;
    char *s = p[k++ % 8];
    snprintf(s, 4200, "%s/%s", dir, name);
    return s;
}

static int wr(int fd, const char *s) { return write(fd, s, strlen(s)) == (ssize_t)strlen(s); }

static int warm(int fd, int n)
{
    for (int i = 0; i < n; i++)
        if (!wr(fd, "warmup.."))
            return 0;
    return 1;
}

static long fsize(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? (long)st.st_size : -1;
}

static void observe_same_process(void)
{
    char *f = path("observe");
    int w = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(w >= 0 && warm(w, 20), "setup");
    int r = open(f, O_RDONLY); /* opened after the writes */
    char buf[1024];
    CHECK(read(r, buf, sizeof buf) == 160, "a new fd reads every byte written before");
    CHECK(wr(w, "12345678"), "write");
    CHECK(read(r, buf, sizeof buf) == 8, "an older fd on the file reads the new bytes");
    CHECK(wr(w, "abcdefgh") && fsize(w) == 176, "fstat sees the size");
    struct stat st;
    CHECK(wr(w, "ABCDEFGH") && stat(f, &st) == 0 && st.st_size == 184, "stat by path sees the size");
    CHECK(wr(w, "........") && lseek(w, 0, SEEK_CUR) == 192, "lseek sees the offset");
    CHECK(wr(w, "xxxxxxxx") && pread(r, buf, 8, 192) == 8 && memcmp(buf, "xxxxxxxx", 8) == 0, "pread at the end");
    CHECK(lseek(w, 0, SEEK_SET) == 0 && wr(w, "OVERWRT!") && lseek(w, 0, SEEK_END) == 200, "seek, overwrite");
    CHECK(pread(r, buf, 8, 0) == 8 && memcmp(buf, "OVERWRT!", 8) == 0, "the overwrite landed at offset 0");
    close(r);
    close(w);
    printf("ok observe_same_process\n");
}

static void children_see_everything(void)
{
    char *f = path("children");
    int w = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(w >= 0 && warm(w, 100), "setup");
    pid_t p = fork();
    if (p == 0) {
        struct stat st;
        _exit(stat(f, &st) == 0 && st.st_size == 800 ? 0 : 1);
    }
    int status;
    CHECK(waitpid(p, &status, 0) == p && WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork child sees 800 bytes");
    CHECK(warm(w, 1), "write");
    int pfd[2];
    CHECK(pipe(pfd) == 0, "pipe");
    p = vfork();
    if (p == 0) {
        dup2(pfd[1], 1);
        execlp("wc", "wc", "-c", f, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    char out[256] = {0};
    ssize_t n = read(pfd[0], out, sizeof out - 1);
    waitpid(p, &status, 0);
    close(pfd[0]);
    CHECK(n > 0 && atol(out) == 808, "vfork+exec'd wc counts 808 bytes, got %s", out);
    CHECK(warm(w, 1), "write");
    setenv("SEMANTICS_FILE", f, 1);
    CHECK(system("test $(wc -c < \"$SEMANTICS_FILE\") = 816") == 0, "system() sees 816 bytes");
    close(w);
    printf("ok children_see_everything\n");
}

static void bad_pointer_is_efault(void)
{
    char *f = path("efault");
    int w = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(w >= 0 && warm(w, 10), "setup");
    errno = 0;
    void *volatile bad = (void *)16;
    ssize_t r = write(w, bad, 8);
    CHECK(r == -1 && errno == EFAULT, "write(bad pointer) = %zd errno %d", r, errno);
    CHECK(warm(w, 1) && fsize(w) == 88, "the bytes around it are all there: %ld", fsize(w));
    close(w);
    printf("ok bad_pointer_is_efault\n");
}

static int hfd;
static long hcount;

static void on_alarm(int sig)
{
    (void)sig;
    char rec[9];
    snprintf(rec, sizeof rec, "H%06ld\n", hcount++);
    if (write(hfd, rec, 8) != 8)
        abort();
}

static void handler_writes_same_fd(void)
{
    char *f = path("handler");
    hfd = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(hfd >= 0, "setup");
    signal(SIGALRM, on_alarm);
    struct itimerval it = {{0, 20}, {0, 20}};
    setitimer(ITIMER_REAL, &it, NULL);
    long m = 0;
    char rec[9];
    for (; m < 300000; m++) {
        snprintf(rec, sizeof rec, "M%06ld\n", m);
        CHECK(write(hfd, rec, 8) == 8, "write");
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    signal(SIGALRM, SIG_DFL);
    close(hfd);
    FILE *in = fopen(f, "r");
    long nm = 0, nh = 0;
    while (fread(rec, 1, 8, in) == 8) {
        long v = atol(rec + 1);
        if (rec[0] == 'M' && v == nm)
            nm++;
        else if (rec[0] == 'H' && v == nh)
            nh++;
        else
            break;
    }
    fclose(in);
    CHECK(nm == m && nh == hcount, "records intact and in order: M %ld/%ld H %ld/%ld", nm, m, nh, hcount);
    printf("ok handler_writes_same_fd (%ld handler writes)\n", hcount);
}

static void fork_does_not_duplicate(void)
{
    char *f = path("forkdup");
    int w = open(f, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    CHECK(w >= 0 && warm(w, 50), "setup");
    pid_t p = fork();
    if (p == 0) {
        wr(w, "child...");
        _exit(0);
    }
    int status;
    waitpid(p, &status, 0);
    CHECK(wr(w, "parent.."), "write");
    close(w);
    CHECK(fsize(open(f, O_RDONLY)) == 52 * 8, "size %ld", fsize(open(f, O_RDONLY)));
    printf("ok fork_does_not_duplicate\n");
}

static void stdio_and_write_stay_in_order(void)
{
    char *f = path("stdio");
    FILE *fp = fopen(f, "w");
    CHECK(fp != NULL, "setup");
    int fd = fileno(fp);
    for (int i = 0; i < 10; i++)
        wr(fd, "a");
    fprintf(fp, "b");
    fflush(fp);
    for (int i = 0; i < 10; i++)
        wr(fd, "c");
    fputs("d", fp);
    fclose(fp);
    char buf[64] = {0};
    int r = open(f, O_RDONLY);
    CHECK(read(r, buf, sizeof buf) == 22 && strcmp(buf, "aaaaaaaaaabccccccccccd") == 0, "got %s", buf);
    close(r);
    printf("ok stdio_and_write_stay_in_order\n");
}

static void mapped_file_is_never_deferred(void)
{
    char *f = path("mapped");
    int w = open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(w >= 0 && warm(w, 10) && ftruncate(w, 4096) == 0 && lseek(w, 80, SEEK_SET) == 80, "setup");
    char *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, w, 0);
    CHECK(m != MAP_FAILED && memcmp(m, "warmup..", 8) == 0, "the mapping sees earlier writes");
    for (int i = 0; i < 10; i++) {
        CHECK(wr(w, "MAPPED!!"), "write");
        CHECK(memcmp(m + 80 + 8 * i, "MAPPED!!", 8) == 0, "the mapping sees write %d at once", i);
    }
    munmap(m, 4096);
    close(w);
    printf("ok mapped_file_is_never_deferred\n");
}

static void dup2_over_pending_fd(void)
{
    char *f = path("dup2");
    int w = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int other = open("/dev/null", O_WRONLY);
    CHECK(w >= 0 && other >= 0 && warm(w, 30), "setup");
    CHECK(dup2(other, w) == w && wr(w, "to null!"), "dup2");
    close(w);
    close(other);
    CHECK(fsize(open(f, O_RDONLY)) == 240, "size");
    printf("ok dup2_over_pending_fd\n");
}

/* endmntent closes its fd inside libc (setmntent's fopen and endmntent's
 * fclose are libc's own calls, which no wrapper sees): the runtime still
 * holds that fd as the first file's, bound to its slot, with nothing
 * pending (fsync wrote it out).  The next open gets the same number for
 * another file: its short writes must count as that file's (stat by path),
 * and the first file keeps what it had.  The open that does the least
 * work (wrap_path.c, opened_at) must not keep the old entry; nor may the
 * write path, which checks the file at each new buffer. */
static void fd_reused_after_unseen_close(void)
{
    char *a = path("unseen-a"), *b = path("unseen-b");
    FILE *m = setmntent(a, "w");
    CHECK(m != NULL, "setmntent");
    int w = fileno(m);
    CHECK(warm(w, 10) && fsync(w) == 0, "setup");
    endmntent(m);
    int v = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(v == w, "the number is reused: %d, %d", v, w);
    CHECK(warm(v, 10), "writes to the second file");
    struct stat sa, sb;
    CHECK(stat(b, &sb) == 0 && sb.st_size == 80, "stat of the second file sees its 80 bytes: %ld", (long)sb.st_size);
    CHECK(stat(a, &sa) == 0 && sa.st_size == 80, "the first file keeps its 80 bytes: %ld", (long)sa.st_size);
    CHECK(warm(v, 1) && fsize(v) == 88 && close(v) == 0, "fstat of the second file, close");
    printf("ok %s\n", __func__);
}

static void two_processes_append(void)
{
    char *f = path("append2");
    int fd0 = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    close(fd0);
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            int w = open(f, O_WRONLY | O_APPEND);
            char rec[9];
            for (long i = 0; i < 50000; i++) {
                snprintf(rec, sizeof rec, "%c%06ld\n", 'A' + k, i);
                if (write(w, rec, 8) != 8)
                    _exit(1);
            }
            _exit(0);
        }
    }
    for (int k = 0; k < 2; k++)
        waitpid(kids[k], NULL, 0);
    FILE *in = fopen(f, "r");
    char rec[9];
    long next[2] = {0, 0}, bad = 0;
    while (fread(rec, 1, 8, in) == 8) {
        int k = rec[0] - 'A';
        if (k < 0 || k > 1 || rec[7] != '\n' || atol(rec + 1) != next[k])
            bad++;
        else
            next[k]++;
    }
    fclose(in);
    CHECK(bad == 0 && next[0] == 50000 && next[1] == 50000, "bad %ld, A %ld, B %ld", bad, next[0], next[1]);
    printf("ok two_processes_append\n");
}

/* `prog > log 2>&1`: two fds of one open file description.  Short lines
 * on both, then a large write on one, then short lines again: the file
 * holds them in the order they were written. */
static void shared_description_in_order(void)
{
    char *f = path("shared");
    int a = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int b = dup(a);
    CHECK(a >= 0 && b >= 0, "setup");
    static char expect[20000], big[5001], got[20000];
    size_t n = 0;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 6; i++) {
            char line[32];
            int k = snprintf(line, sizeof line, "out %d.%d\n", round, i);
            CHECK(write(a, line, (size_t)k) == k, "write a");
            memcpy(expect + n, line, (size_t)k);
            n += (size_t)k;
            k = snprintf(line, sizeof line, "err %d.%d\n", round, i);
            CHECK(write(b, line, (size_t)k) == k, "write b");
            memcpy(expect + n, line, (size_t)k);
            n += (size_t)k;
        }
        memset(big, 'A' + round, 4999);
        big[4999] = '\n';
        CHECK(write(round == 1 ? b : a, big, 5000) == 5000, "large write");
        memcpy(expect + n, big, 5000);
        n += 5000;
    }
    CHECK(write(b, "last\n", 5) == 5, "write");
    memcpy(expect + n, "last\n", 5);
    n += 5;
    int r = open(f, O_RDONLY);
    CHECK(read(r, got, sizeof got) == (ssize_t)n && memcmp(got, expect, n) == 0, "the file is not the writes in order");
    close(r);
    close(a);
    close(b);
    printf("ok shared_description_in_order\n");
}

/* Two open()s of one file, each with its own offset: bytes deferred on the
 * first land at its offset before a later write through the second, and
 * never over it. */
static void two_opens_in_order(void)
{
    char *f = path("twoopens");
    int a = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int b = open(f, O_WRONLY);
    CHECK(a >= 0 && b >= 0 && warm(b, 8) && lseek(b, 0, SEEK_SET) == 0, "setup");
    CHECK(warm(a, 10), "short writes on the first");
    static char big[8192], got[9000];
    memset(big, 'B', sizeof big);
    CHECK(write(b, big, sizeof big) == (ssize_t)sizeof big, "8 KiB through the second");
    CHECK(warm(a, 2), "short writes on the first again");
    int r = open(f, O_RDONLY);
    ssize_t n = read(r, got, sizeof got);
    close(r);
    CHECK(n == 8192 && memcmp(got, big, 80) == 0 && memcmp(got + 80, "warmup..warmup..", 16) == 0 &&
              memcmp(got + 96, big, 8192 - 96) == 0,
          "older deferred bytes moved: read %zd", n);
    close(a);
    close(b);
    printf("ok two_opens_in_order\n");
}

/* semantics DIR interleave N: N short lines to fd 1 and fd 2 in turn, a
 * large write to each every 100 lines; run with `> log 2>&1`. */
static int interleave(long n)
{
    static char big[6000];
    char line[64];
    for (long i = 0; i < n; i++) {
        int k = snprintf(line, sizeof line, "%s line %ld\n", i % 2 ? "err" : "out", i);
        if (write(1 + (int)(i % 2), line, (size_t)k) != k)
            return 1;
        if (i % 100 == 99) {
            memset(big, 'a' + (int)(i / 100 % 26), sizeof big - 1);
            big[sizeof big - 1] = '\n';
            if (write(1 + (int)(i / 100 % 2), big, sizeof big) != (ssize_t)sizeof big)
                return 1;
        }
    }
    return 0;
}

static void *last_thread(void *arg)
{
    (void)arg;
    usleep(20000);
    return NULL;
}

static int end_by(const char *mode)
{
    int w = open(path("exit"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 1000; i++)
        if (!wr(w, "1234567\n"))
            return 1;
    if (!strcmp(mode, "exit"))
        exit(0);
    if (!strcmp(mode, "_exit"))
        _exit(0);
    if (!strcmp(mode, "quick_exit"))
        quick_exit(0);
    if (!strcmp(mode, "abort"))
        abort();
    if (!strcmp(mode, "exec"))
        execlp("true", "true", (char *)NULL);
    if (!strcmp(mode, "pthread")) {
        pthread_t t;
        pthread_create(&t, NULL, last_thread, NULL);
        pthread_exit(NULL);
    }
    return 0;
}

/* A futex wake on shared memory tells another process something: what the
 * program wrote before it must be in the file by then.  The child, forked
 * before the write, waits on the futex and measures the file when woken; the
 * parent wakes until a wake finds it waiting.  21 numbered 8-byte records
 * (the first few direct, the rest deferred): the child must see all 168
 * bytes, and the file hold each record once.  n rounds (a fork child that
 * touched the parent's slots wrote them twice: docs/RUNTIME.md, "Fork children");
 * on a failure it says what the child saw and what the file holds.
 * Returns the number of failed rounds. */
static int futex_rounds(long n)
{
    int bad = 0;
    for (long k = 0; k < n; k++) {
        char *f = path("futex-rounds");
        int w = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int *word = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (w < 0 || word == MAP_FAILED)
            return 1;
        pid_t child = fork();
        if (child == 0) {
            while (syscall(SYS_futex, word, 0 /* FUTEX_WAIT, shared */, 0, NULL, NULL, 0) != 0 && errno == EINTR)
                ;
            _exit((int)fsize(w) / 8);
        }
        if (child < 0)
            return 1;
        char rec[16];
        for (int i = 0; i < 21; i++) {
            snprintf(rec, sizeof rec, "r%06d\n", i);
            if (!wr(w, rec)) {
                kill(child, SIGKILL);
                waitpid(child, NULL, 0);
                return 1;
            }
        }
        long woken = 0;
        for (int i = 0; i < 10000 && woken == 0; i++) {
            woken = syscall(SYS_futex, word, 1 /* FUTEX_WAKE, shared */, 1, NULL, NULL, 0);
            if (woken == 0)
                usleep(1000);
        }
        int st = 0;
        if (woken != 1)
            kill(child, SIGKILL); /* never waited: do not wait for it */
        waitpid(child, &st, 0);
        munmap(word, 4096);
        long size = fsize(w);
        close(w);
        int seen = WIFEXITED(st) ? WEXITSTATUS(st) * 8 : -1;
        if (woken == 1 && seen == 168 && size == 168)
            continue;
        bad++;
        printf("FAIL futex round %ld: woken %ld, the child saw %d bytes, the file has %ld (want 168):", k, woken, seen,
               size);
        char buf[4096];
        int r = open(f, O_RDONLY);
        ssize_t got = r >= 0 ? read(r, buf, sizeof buf) : -1;
        for (ssize_t i = 0; i + 8 <= got; i += 8)
            printf(" %.7s", buf + i);
        printf("\n");
        if (r >= 0)
            close(r);
    }
    return bad;
}

static void shared_futex_publishes(void)
{
    if (futex_rounds(1) != 0) {
        failures++;
        return;
    }
    printf("ok shared_futex_publishes\n");
}

/* A thread appends numbered records while the main thread forks children
 * that end at once (with fork(), or with _Fork() when `raw`): the parent's
 * deferred bytes are its own, so the file holds every record once, in
 * order.  A child that copied a buffer the parent had started since the
 * fork wrote it out again at its exit (docs/RUNTIME.md, "Fork children"). */
static _Atomic int forks_done;
static long forks_written;

static void *fork_writer(void *arg)
{
    int fd = *(int *)arg;
    char rec[16];
    long i = 0;
    while (!forks_done && i < 4000000) /* 32 MB at most */ {
        snprintf(rec, sizeof rec, "%07ld\n", i);
        if (!wr(fd, rec))
            break;
        i++;
    }
    forks_written = i;
    return NULL;
}

static int forks_while_writing(long n, int raw)
{
    char *f = path("forks");
    int fd = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pthread_t t;
    if (fd < 0 || pthread_create(&t, NULL, fork_writer, &fd) != 0)
        return 1;
    for (long k = 0; k < n; k++) {
        pid_t c = raw ? _Fork() : fork();
        if (c == 0)
            _exit(0);
        if (c < 0 || waitpid(c, NULL, 0) != c)
            return 1;
    }
    forks_done = 1;
    pthread_join(t, NULL);
    if (close(fd) != 0)
        return 1;
    FILE *in = fopen(f, "r");
    if (!in)
        return 1;
    char line[64];
    long i = 0, bad = -1;
    while (fgets(line, sizeof line, in)) {
        if (bad < 0 && (strlen(line) != 8 || atol(line) != i))
            bad = i;
        i++;
    }
    fclose(in);
    if (bad >= 0 || i != forks_written) {
        printf("FAIL forks: %ld records written, %ld in the file, the first wrong at %ld\n", forks_written, i, bad);
        return 1;
    }
    printf("ok forks: %ld records, %ld forks\n", i, n);
    return 0;
}

/* Each short write observed at once (lseek(SEEK_CUR) after each): the
 * runtime must stop deferring there (see flush.c, "Futile buffers"), or it pays a
 * flush for every write it saved.  The caller compares the file and the
 * runtime's counts. */
static int observed(long n)
{
    int fd = open(path("observed"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 1;
    char rec[24];
    for (long i = 0; i < n; i++) {
        snprintf(rec, sizeof rec, "%07ld\n", i % 10000000);
        if (write(fd, rec, 8) != 8 || lseek(fd, 0, SEEK_CUR) != 8 * (i + 1))
            return 1;
    }
    return close(fd) != 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    snprintf(dir, sizeof dir, "%s", argv[1]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && !strcmp(argv[2], "exit"))
        return end_by(argv[3]);
    if (argc == 4 && !strcmp(argv[2], "interleave"))
        return interleave(atol(argv[3]));
    if (argc == 4 && !strcmp(argv[2], "futex")) {
        if (futex_rounds(atol(argv[3])) != 0)
            return 1;
        printf("ok futex: %ld rounds\n", atol(argv[3]));
        return 0;
    }
    if (argc == 4 && (!strcmp(argv[2], "forks") || !strcmp(argv[2], "_Forks")))
        return forks_while_writing(atol(argv[3]), argv[2][0] == '_');
    if (argc == 4 && !strcmp(argv[2], "observed"))
        return observed(atol(argv[3]));
    observe_same_process();
    children_see_everything();
    bad_pointer_is_efault();
    handler_writes_same_fd();
    fork_does_not_duplicate();
    stdio_and_write_stay_in_order();
    mapped_file_is_never_deferred();
    dup2_over_pending_fd();
    fd_reused_after_unseen_close();
    two_processes_append();
    shared_description_in_order();
    two_opens_in_order();
    shared_futex_publishes();
    return failures ? 1 : 0;
}
