/* seekread: lseek + read at scattered offsets.
 *   seekread FILE COUNT     FILE must hold at least 64 KiB
 * Known sequence: openat=3, [lseek(3) read(3)] x COUNT, close(3), so
 * lseek(3)->read(3) weighs COUNT and read(3)->lseek(3) weighs COUNT-1. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 3) {
        fprintf(stderr, "usage: seekread FILE COUNT\n");
        return 2;
    }
    int count = atoi(argv[2]);
    char buf[512];
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    for (int i = 0; i < count; i++) {
        off_t at = (off_t)((i * 7919L) % 120) * 512;
        if (lseek(fd, at, SEEK_SET) != at || read(fd, buf, sizeof buf) < 0) {
            perror("lseek/read");
            return 1;
        }
    }
    return close(fd) == 0 ? 0 : 1;
}
