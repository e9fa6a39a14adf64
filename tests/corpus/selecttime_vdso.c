/* selecttime_vdso: selecttime with the advisor's `select-clock` rewrite
 * applied: the time is read through glibc, which uses the vDSO and makes no
 * system call.
 *   selecttime_vdso COUNT
 * Known sequence: pipe2, write(4), then select (pselect6 from glibc) x COUNT
 * with no clock call between: the select node's self edge weighs COUNT-1. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/select.h>
#include <sys/time.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 2) {
        fprintf(stderr, "usage: selecttime_vdso COUNT\n");
        return 2;
    }
    long count = atol(argv[1]);
    int p[2];
    if (pipe(p) != 0 || write(p[1], "x", 1) != 1)
        return 1;
    struct timeval tv, now;
    long long sum = 0;
    for (long i = 0; i < count; i++) {
        fd_set r;
        FD_ZERO(&r);
        FD_SET(p[0], &r);
        tv.tv_sec = 0;
        tv.tv_usec = 0;
        if (select(p[0] + 1, &r, NULL, NULL, &tv) < 0)
            return 1;
        gettimeofday(&now, NULL);
        sum += now.tv_usec & 1;
    }
    return sum < 0;
}
