/* rawclock: the clock read through the system call instead of the vDSO
 * (as raw syscall(2) users and some static binaries do).
 *   rawclock COUNT
 * Known sequence: clock_gettime(CLOCK_MONOTONIC) x COUNT as system calls:
 * clock_gettime->clock_gettime weighs COUNT-1. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 2) {
        fprintf(stderr, "usage: rawclock COUNT\n");
        return 2;
    }
    long count = atol(argv[1]);
    struct timespec ts;
    long long sum = 0;
    for (long i = 0; i < count; i++) {
        if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) != 0)
            return 1;
        sum += ts.tv_nsec & 1;
    }
    return sum < 0;
}
