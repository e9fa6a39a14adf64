/* ackwriter: nothing acknowledged is lost when the program dies abruptly.
 *   ackwriter FILE ACK [append]   writes 8-byte records "%07d\n" until
 *                                 killed; after each write returns, stores
 *                                 how many were acknowledged in ACK (a
 *                                 mapped file, so the count survives us)
 *   ackwriter --check FILE ACK [LOST]
 *                                 0 if FILE is exactly records 0..N-1 with
 *                                 N >= the acknowledged count (less LOST
 *                                 at most: a bounded loss), else 1
 *   ackwriter --deferring FILE ACK
 *                                 0 once FILE is shorter than the records
 *                                 acknowledged (the runtime holds them:
 *                                 plain, each is in FILE before its count),
 *                                 1 if never within 200 ms */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile long *ack_map(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0 || ftruncate(fd, 4096) != 0)
        exit(2);
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        exit(2);
    return m;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--deferring") == 0) {
        volatile long *ack = ack_map(argv[3]);
        for (int i = 0; i < 2000; i++) {
            long acked = *ack; /* first: what is acknowledged is written by now */
            struct stat st;
            if (stat(argv[2], &st) == 0 && st.st_size < acked * 8) {
                printf("deferring: %ld records acknowledged, %lld on disk\n", acked, (long long)st.st_size / 8);
                return 0;
            }
            nanosleep(&(struct timespec){0, 100000}, NULL);
        }
        printf("not deferring: every acknowledged record on disk for 200 ms\n");
        return 1;
    }
    if (argc >= 4 && strcmp(argv[1], "--check") == 0) {
        volatile long *ack = ack_map(argv[3]);
        FILE *f = fopen(argv[2], "r");
        if (!f)
            return 1;
        char rec[9], want[32];
        long n = 0;
        size_t got;
        while ((got = fread(rec, 1, 8, f)) == 8) {
            snprintf(want, sizeof want, "%07ld\n", n % 10000000); /* as written: the count wraps */
            if (memcmp(rec, want, 8) != 0) {
                fprintf(stderr, "ackwriter: record %ld is wrong\n", n);
                return 1;
            }
            n++;
        }
        if (got != 0) {
            fprintf(stderr, "ackwriter: a torn record after %ld\n", n);
            return 1;
        }
        long lost = argc > 4 ? atol(argv[4]) : 0;
        if (n + lost < *ack || n > *ack + 1) {
            fprintf(stderr, "ackwriter: %ld records on disk, %ld acknowledged\n", n, *ack);
            return 1;
        }
        printf("%ld %ld\n", n, *ack);
        return 0;
    }
    if (argc < 3)
        return 2;
    volatile long *ack = ack_map(argv[2]);
    *ack = 0;
    int flags = O_WRONLY | O_CREAT | O_TRUNC | (argc > 3 ? O_APPEND : 0);
    int fd = open(argv[1], flags, 0644);
    if (fd < 0)
        return 2;
    char rec[32];
    /* Killed long before this; the bound keeps a run nobody killed from
     * filling the disk (400 MB). */
    for (long i = 0; i < 50000000; i++) {
        snprintf(rec, sizeof rec, "%07ld\n", i % 10000000);
        if (write(fd, rec, 8) != 8)
            return 3;
        *ack = i + 1;
    }
    return 4;
}
