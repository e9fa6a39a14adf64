/* tailer: a reader polling a file sees each write within the time bound.
 *   tailer FILE ROUNDS GAP_MS
 * A child polls FILE's size every 200 us; the parent writes one record
 * stamped with CLOCK_MONOTONIC, then sleeps GAP_MS, ROUNDS times, after a
 * few warm-up writes (so that the runtime defers).  Prints the worst delay
 * in microseconds between a write and the reader seeing it; exits 1 if a
 * record was never seen before the next was written. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

struct rec {
    long stamp;
    long pad;
};

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    int rounds = atoi(argv[2]), gap = atoi(argv[3]);
    long *worst = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || worst == MAP_FAILED)
        return 2;
    struct rec r = {0, 0};
    for (int i = 0; i < 8; i++) /* warm up: these may go out directly */
        if (write(fd, &r, sizeof r) != sizeof r)
            return 2;
    pid_t child = fork();
    if (child == 0) {
        int rd = open(argv[1], O_RDONLY);
        off_t seen = 8 * (off_t)sizeof r;
        for (;;) {
            struct stat st;
            if (fstat(rd, &st) == 0 && st.st_size > seen) {
                struct rec got;
                while (pread(rd, &got, sizeof got, seen) == sizeof got) {
                    long d = now_us() - got.stamp;
                    if (d > worst[0])
                        worst[0] = d;
                    seen += sizeof got;
                    worst[1]++;
                }
            }
            usleep(200);
        }
    }
    struct timespec ts = {gap / 1000, (gap % 1000) * 1000000L};
    int missed = 0;
    for (int i = 0; i < rounds; i++) {
        long before = worst[1];
        r.stamp = now_us();
        if (write(fd, &r, sizeof r) != sizeof r)
            return 2;
        nanosleep(&ts, NULL);
        if (worst[1] == before)
            missed++;
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    printf("%ld\n", worst[0]);
    if (missed)
        fprintf(stderr, "tailer: %d of %d records not seen within %d ms\n", missed, rounds, gap);
    return missed ? 1 : 0;
}
