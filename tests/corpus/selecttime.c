/* selecttime: the select -> gettimeofday loop of mpeg_play (seed 000 §4).
 *   selecttime COUNT
 * Each iteration waits on a pipe that is always readable with a zero
 * timeout, then reads the time through the system call (as 2002's libc
 * did; today's libc would use the vDSO and make no system call).  Known
 * edges: select->gettimeofday weighs COUNT, gettimeofday->select COUNT-1. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 2) {
        fprintf(stderr, "usage: selecttime COUNT\n");
        return 2;
    }
    long count = atol(argv[1]);
    int p[2];
    if (pipe(p) != 0 || write(p[1], "x", 1) != 1)
        return 1;
    struct timeval tv, now;
    for (long i = 0; i < count; i++) {
        fd_set r;
        FD_ZERO(&r);
        FD_SET(p[0], &r);
        tv.tv_sec = 0;
        tv.tv_usec = 0;
        if (select(p[0] + 1, &r, NULL, NULL, &tv) < 0)
            return 1;
        syscall(SYS_gettimeofday, &now, NULL);
    }
    return 0;
}
