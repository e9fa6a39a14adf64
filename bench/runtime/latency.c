/* latency: how long an isolated short record takes to reach its file, as an
 * independent reader sees it (the runtime's time bound, docs/RUNTIME.md).
 *   latency FILE ROUNDS GAP_MS
 * The writer writes one 16-byte record stamped with CLOCK_MONOTONIC, then
 * sleeps GAP_MS (plus up to 1 ms more, so that records do not fall in step
 * with any timer), ROUNDS times, after 8 warm-up records (so that the
 * runtime defers what follows).  A reader process, forked before the first
 * record and holding the file open read-only, blocks in inotify for
 * IN_MODIFY: the kernel queues that event inside the write call that lands
 * the bytes, so the reader wakes as they arrive, not at its next poll (a
 * reader polling the size every P us adds up to P to every figure and
 * costs a CPU).  On each event it reads every new complete record and
 * notes now - stamp.  What it measures is thus the time from the write
 * call to the reader holding the bytes: the runtime's delay plus the
 * reader's wake-up (run it plain to see that floor).  So that the second
 * term stays small on a loaded machine, the reader takes SCHED_FIFO
 * priority 2 when it may (root; it is asleep in inotify but for
 * microseconds per record), and says on stderr whether it did: a
 * reader of ordinary priority, woken at a moment when every CPU is busy,
 * would wait milliseconds for one and charge them to the runtime.
 * Prints one delay in microseconds per line, in record order; exits 1 if
 * a record was never seen (2 s after the last write). */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WARM 8

struct rec {
    long stamp; /* CLOCK_MONOTONIC, ns */
    long seq;
};

static long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: latency FILE ROUNDS GAP_MS\n");
        return 2;
    }
    long rounds = atol(argv[2]), gap_ms = atol(argv[3]);
    if (rounds < 1 || rounds > 1000000 || gap_ms < 1) {
        fprintf(stderr, "latency: ROUNDS in 1..1000000, GAP_MS >= 1\n");
        return 2;
    }
    /* [0] records seen, [1] reader ready, [2 + i] delay of record i (ns) */
    size_t len = (size_t)(rounds + 2) * sizeof(long);
    long *sh = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || sh == MAP_FAILED) {
        perror("latency");
        return 2;
    }
    struct rec r = {0, -1};
    for (int i = 0; i < WARM; i++)
        if (write(fd, &r, sizeof r) != sizeof r)
            return 2;
    pid_t child = fork();
    if (child == 0) {
        struct sched_param sp = {.sched_priority = 2};
        fprintf(stderr, "latency: reader %s\n",
                sched_setscheduler(0, SCHED_FIFO, &sp) == 0 ? "at SCHED_FIFO 2" : "at ordinary priority");
        int in = inotify_init1(0), rd = open(argv[1], O_RDONLY);
        if (in < 0 || rd < 0 || inotify_add_watch(in, argv[1], IN_MODIFY) < 0)
            _exit(2);
        __atomic_store_n(&sh[1], 1, __ATOMIC_RELEASE);
        off_t seen = 0;
        char ev[4096];
        for (;;) {
            /* Look before blocking: bytes may have landed before the watch. */
            struct rec got;
            while (pread(rd, &got, sizeof got, seen) == sizeof got) {
                long t = now_ns();
                if (got.seq >= 0 && got.seq < rounds)
                    sh[2 + got.seq] = t - got.stamp;
                seen += sizeof got;
                if (got.seq >= 0)
                    __atomic_add_fetch(&sh[0], 1, __ATOMIC_RELEASE);
            }
            if (read(in, ev, sizeof ev) <= 0)
                _exit(2);
        }
    }
    while (!__atomic_load_n(&sh[1], __ATOMIC_ACQUIRE))
        usleep(100);
    unsigned seed = 12345;
    for (long i = 0; i < rounds; i++) {
        r.seq = i;
        r.stamp = now_ns();
        if (write(fd, &r, sizeof r) != sizeof r)
            return 2;
        seed = seed * 1103515245u + 12345u;
        long ns = gap_ms * 1000000L + (long)(seed >> 8) % 1000000L;
        struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
        while (nanosleep(&ts, &ts) != 0)
            ;
    }
    for (int k = 0; k < 200 && __atomic_load_n(&sh[0], __ATOMIC_ACQUIRE) < rounds; k++)
        usleep(10000);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    long seen = __atomic_load_n(&sh[0], __ATOMIC_ACQUIRE);
    for (long i = 0; i < rounds; i++)
        printf("%ld\n", sh[2 + i] / 1000);
    if (seen < rounds) {
        fprintf(stderr, "latency: %ld of %ld records never seen\n", rounds - seen, rounds);
        return 1;
    }
    return 0;
}
