/* write8: a loop of 8-byte writes (seed 001's benchmark).
 *   write8 FILE COUNT
 * Known sequence: openat(FILE)=3, write(3, 8 bytes) x COUNT, close(3),
 * so write(3)->write(3) weighs COUNT-1 and write(3)->close(3) weighs 1. */
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
        if (write(fd, "01234567", 8) != 8) {
            perror("write");
            return 1;
        }
    }
    return close(fd) == 0 ? 0 : 1;
}
