/* clean_cpu: a clean program for the advisor (no recommendation is
 * expected): a CPU-bound loop that makes no system call until it prints
 * its result with one write(1).
 *   clean_cpu ITERATIONS */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 2) {
        fprintf(stderr, "usage: clean_cpu ITERATIONS\n");
        return 2;
    }
    long n = atol(argv[1]);
    unsigned long x = 88172645463325252UL;
    for (long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    char line[64];
    int len = snprintf(line, sizeof line, "%lu\n", x);
    return write(1, line, (size_t)len) == len ? 0 : 1;
}
