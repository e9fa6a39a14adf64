/* cputime: reads the process's CPU time through clock_gettime, which the
 * vDSO cannot serve for CPU-time clocks: the vDSO function makes the system
 * call itself, so the call is issued from the vDSO, not from libc.
 *   cputime COUNT
 * Known sequence: clock_gettime(CLOCK_PROCESS_CPUTIME_ID) x COUNT, so
 * clock_gettime->clock_gettime weighs COUNT-1. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char *argv[])
{
    if (argc != 2) {
        fprintf(stderr, "usage: cputime COUNT\n");
        return 2;
    }
    long count = atol(argv[1]);
    struct timespec t;
    for (long i = 0; i < count; i++) {
        if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) {
            perror("clock_gettime");
            return 1;
        }
    }
    return 0;
}
