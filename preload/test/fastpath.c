/* fastpath: a stress test of the deferred write's lock-free fast path and
 * of how others take a slot from it (docs/RUNTIME.md, "The fast path"):
 * records appended without the lock while the guardian's timed flushes,
 * other threads' writes and observations, and a signal handler writing at
 * 20 kHz take the slot.  Every record is numbered; afterwards the file must
 * hold each writer's records exactly once, whole, in its order.  A taker
 * that did not wait for the appending thread would lose, repeat or tear
 * records.
 *
 *   fastpath FILE paced N      one thread, N records, slowly enough that the
 *                              guardian's timed flush takes most buffers
 *                              from it (run with SYSCLUSTER_FLUSH_MS=1)
 *   fastpath FILE threads N    4 writer threads (N records each) on one fd,
 *                              a thread observing the file (fstat, lseek),
 *                              the main thread writing too, with a SIGALRM
 *                              handler that writes every 50 us
 *
 * Prints "ok ..." and exits 0, or names the first bad record and exits 1. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define REC 16 /* "W4 0000012345 .\n": writer, sequence */
#define WRITERS 4
#define MAXW 8 /* writer ids: 0-3 threads, 4 main, 5 signal handler */

static int fd;
static long per_writer;
static atomic_int stop;
static long sig_seq;

static void record(char *r, int who, long seq)
{
    char tmp[48];
    snprintf(tmp, sizeof tmp, "W%d %010ld .\n", who, seq % 10000000000L);
    memcpy(r, tmp, REC);
}

static int put(int who, long seq)
{
    char r[REC];
    record(r, who, seq);
    return write(fd, r, REC) == REC ? 0 : -1;
}

static void on_alarm(int sig)
{
    (void)sig;
    int saved = errno;
    if (put(5, sig_seq) == 0)
        sig_seq++;
    errno = saved;
}

static void *writer(void *arg)
{
    int who = (int)(long)arg;
    for (long i = 0; i < per_writer; i++)
        if (put(who, i) != 0) {
            perror("write");
            exit(1);
        }
    return NULL;
}

static void *observer(void *arg)
{
    (void)arg;
    long n = 0;
    while (!atomic_load(&stop)) {
        struct stat st;
        if (n++ % 2)
            fstat(fd, &st); /* writes the file's pending bytes out */
        else
            lseek(fd, 0, SEEK_CUR);
        struct timespec ts = {0, 20 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* Some work between records, so that a buffer lives longer than the
 * guardian's due time and is taken by its timed flush, not filled. */
static void pace(int n)
{
    for (volatile int k = 0; k < n; k++)
        ;
}

/* The main thread's n records, with the SIGALRM handler writing its own
 * every 50 us meanwhile. */
static void main_writes(long n)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 50}, {0, 50}};
    setitimer(ITIMER_REAL, &it, NULL);
    for (long i = 0; i < n; i++)
        if (put(4, i) != 0) {
            perror("write");
            exit(1);
        }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
}

/* Checks FILE: every writer's records once each, whole, in order. */
static int check(const char *path, const long *want)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 1;
    }
    long next[MAXW] = {0}, at = 0;
    char r[REC + 1], e[REC];
    size_t got;
    while ((got = fread(r, 1, REC, f)) == REC) {
        r[REC] = 0;
        int who = r[1] - '0';
        long seq = who >= 0 && who < MAXW ? next[who] : -1;
        if (seq >= 0)
            record(e, who, seq);
        if (seq < 0 || memcmp(r, e, REC) != 0) {
            printf("bad record %ld at byte %ld: '%.15s' (writer %d expected sequence %ld)\n", at, at * REC, r, who, seq);
            fclose(f);
            return 1;
        }
        next[who]++;
        at++;
    }
    fclose(f);
    if (got != 0) {
        printf("a torn record at the end (%zu bytes)\n", got);
        return 1;
    }
    for (int w = 0; w < MAXW; w++)
        if (next[w] != want[w]) {
            printf("writer %d: %ld records in the file, %ld written\n", w, next[w], want[w]);
            return 1;
        }
    printf("ok %ld records, each once and in order\n", at);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: fastpath FILE paced|threads N\n");
        return 2;
    }
    long n = atol(argv[3]);
    long want[MAXW] = {0};
    fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    if (strcmp(argv[2], "paced") == 0) {
        for (long i = 0; i < n; i++) {
            if (put(4, i) != 0) {
                perror("write");
                return 1;
            }
            pace(400);
        }
        want[4] = n;
    } else if (strcmp(argv[2], "signals") == 0) {
        main_writes(n);
        want[4] = n;
        want[5] = sig_seq;
    } else if (strcmp(argv[2], "threads") == 0) {
        per_writer = n;
        pthread_t t[WRITERS], obs;
        /* The handler runs in the main thread only: it interrupts the main
         * thread's own writes (and its records stay in one order). */
        sigset_t alrm;
        sigemptyset(&alrm);
        sigaddset(&alrm, SIGALRM);
        pthread_sigmask(SIG_BLOCK, &alrm, NULL);
        for (int w = 0; w < WRITERS; w++)
            pthread_create(&t[w], NULL, writer, (void *)(long)w);
        pthread_create(&obs, NULL, observer, NULL);
        pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
        main_writes(n);
        for (int w = 0; w < WRITERS; w++)
            pthread_join(t[w], NULL);
        pthread_sigmask(SIG_BLOCK, &alrm, NULL);
        atomic_store(&stop, 1);
        pthread_join(obs, NULL);
        for (int w = 0; w < WRITERS; w++)
            want[w] = n;
        want[4] = n;
        want[5] = sig_seq;
    } else {
        fprintf(stderr, "fastpath: unknown mode %s\n", argv[2]);
        return 2;
    }
    if (close(fd) != 0) {
        perror("close");
        return 1;
    }
    return check(argv[1], want);
}
