/* clean_bigcopy: a clean program for the advisor (no recommendation is
 * expected): copies IN to OUT through one 1 MiB buffer, so a file of up to
 * 1 MiB takes one read and one write.
 *   clean_bigcopy IN OUT
 * Known sequence for S <= 1 MiB: openat(in)=3 openat(out)=4 read(3)=S
 * write(4) read(3)=0: every edge of the copy weighs 1. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N (1 << 20)

int main(int argc, char *argv[])
{
    if (argc != 3) {
        fprintf(stderr, "usage: clean_bigcopy IN OUT\n");
        return 2;
    }
    char *buf = malloc(N);
    int in = open(argv[1], O_RDONLY);
    int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ssize_t n;
    if (!buf || in < 0 || out < 0) {
        perror("setup");
        return 1;
    }
    while ((n = read(in, buf, N)) > 0)
        if (write(out, buf, n) != n)
            return 1;
    return n < 0;
}
