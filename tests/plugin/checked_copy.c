/* checked_copy: the copy loop of seed 000 with its writes checked, as real
 * programs write it, for the plugin's execution test of checked copy loops
 * (tests/plugin/run.sh: check_checked).  Built with one of
 *   -DCHECK=1   if (write(out, buf, n) != n) err(1, "write")
 *   -DCHECK=2   if (write(out, buf, n) < 0) { perror; exit(4); }
 *   -DCHECK=3   if ((w = write(out, buf, n)) < n) fail(w, n)  (the program's
 *               own noreturn function: prints w, n, errno and a checksum of
 *               the buffer, then exits 5)
 *   -DCHECK=4   if (write(out, buf, n) < n) goto short_write;  (a handler
 *               after the function's return: prints n, errno and the
 *               buffer's checksum and returns 6 from main)
 *   -DCHECK=5   if ((w = write(out, buf, n)) != n) break;  (after the loop:
 *               when n > 0 the copy broke off, and it prints w, n, errno
 *               and the buffer's checksum and returns 6)
 * and in every form `if (n < 0) err(2, "read")` after the loop.  In 4 and
 * 5 the handler leaves the loop without ending the program.  With
 * -DVARBS the block size is a variable, BS in the environment (default
 * 6000, at most 6000), as a program that takes it from its options.
 *   checked_copy IN OUT
 * NONBLOCK=1 in the environment makes OUT non-blocking (short writes into
 * a full pipe); ALARM=MS interrupts the copy with SIGALRM (no SA_RESTART)
 * after MS milliseconds.  At the end prints the last read's result and a
 * checksum of the buffer. */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define MAXBS 6000

static char buf[MAXBS];

static unsigned long sum(void)
{
    unsigned long s = 0;
    for (size_t i = 0; i < sizeof buf; i++)
        s = s * 31 + (unsigned char)buf[i];
    return s;
}

#if CHECK == 3
__attribute__((noreturn, noinline)) static void fail(long w, long n)
{
    int e = errno;
    printf("short write: %ld of %ld, errno %d, buffer %lx\n", w, n, w < 0 ? e : 0, sum());
    exit(5);
}
#endif

static void on_alarm(int sig)
{
    (void)sig;
}

int main(int argc, char *argv[])
{
    if (argc != 3) {
        fprintf(stderr, "usage: checked_copy IN OUT\n");
        return 2;
    }
    int in = open(argv[1], O_RDONLY);
    int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0)
        err(3, "open");
    if (getenv("NONBLOCK"))
        fcntl(out, F_SETFL, fcntl(out, F_GETFL) | O_NONBLOCK);
    if (getenv("ALARM")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm; /* no SA_RESTART: a blocked write returns */
        sigaction(SIGALRM, &sa, NULL);
        long ms = atol(getenv("ALARM"));
        struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
        setitimer(ITIMER_REAL, &it, NULL);
    }
#ifdef VARBS
    size_t BS = getenv("BS") ? strtoul(getenv("BS"), NULL, 10) : MAXBS;
    if (BS == 0 || BS > MAXBS)
        errx(3, "BS: 1 to %d", MAXBS);
#else
    enum { BS = MAXBS };
#endif
    ssize_t n;
#if CHECK == 1
    while ((n = read(in, buf, BS)) > 0)
        if (write(out, buf, n) != n)
            err(1, "write");
#elif CHECK == 2
    while ((n = read(in, buf, BS)) > 0)
        if (write(out, buf, n) < 0) {
            perror("write");
            exit(4);
        }
#elif CHECK == 3
    ssize_t w;
    while ((n = read(in, buf, BS)) > 0)
        if ((w = write(out, buf, n)) < n)
            fail(w, n);
#elif CHECK == 4
    while ((n = read(in, buf, BS)) > 0)
        if (write(out, buf, n) < n)
            goto short_write;
#elif CHECK == 5
    ssize_t w = 0;
    while ((n = read(in, buf, BS)) > 0)
        if ((w = write(out, buf, n)) != n)
            break;
    if (n > 0) {
        int e = errno;
        printf("broke off: %zd of %zd, errno %d, buffer %lx\n", w, n, w < 0 ? e : 0, sum());
        return 6;
    }
#else
#error "build with -DCHECK=1 to 5"
#endif
    if (n < 0)
        err(2, "read");
    printf("last read %zd, buffer %lx\n", n, sum());
    return 0;
#if CHECK == 4
short_write:
    fprintf(stderr, "short write of %zd, errno %d, buffer %lx\n", n, errno, sum());
    return 6;
#endif
}
