/* write8_unchecked: write8 with the bug a careless rewrite brings, a write
 * whose result is ignored.  Same calls and bytes as write8 while the
 * writes succeed; a failed write goes unnoticed and the program exits 0.
 *   write8_unchecked FILE COUNT
 * `syscluster verify --inject write:ENOSPC@K` tells it from write8. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 3) {
        fprintf(stderr, "usage: write8 FILE COUNT\n");
        return 2;
    }
    long count = atol(argv[2]);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    for (long i = 0; i < count; i++) {
        ssize_t n = write(fd, "01234567", 8);
        (void)n;
    }
    return close(fd) == 0 ? 0 : 1;
}
