/* clean_stdio: a clean program for the advisor (no recommendation is
 * expected): writes COUNT short lines through stdio, whose 4 KiB buffer
 * already coalesces them into a few large writes.
 *   clean_stdio FILE COUNT
 * Known sequence: openat(FILE)=3, write(3, 4096 bytes) x floor(8*COUNT/4096),
 * write(3) of the rest, close(3). */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char *argv[])
{
    if (argc != 3) {
        fprintf(stderr, "usage: clean_stdio FILE COUNT\n");
        return 2;
    }
    long count = atol(argv[2]);
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    for (long i = 0; i < count; i++)
        fputs("0123456\n", f);
    return fclose(f) == 0 ? 0 : 1;
}
