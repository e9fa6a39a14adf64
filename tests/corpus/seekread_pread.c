/* seekread_pread: seekread with the advisor's `pread` rewrite applied:
 * each lseek + read pair is one pread at the same offsets.
 *   seekread_pread FILE COUNT     FILE must hold at least 64 KiB
 * Known sequence: openat=3, pread64(3) x COUNT, close(3), so
 * pread64(3)->pread64(3) weighs COUNT-1 and there is no lseek. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 3) {
        fprintf(stderr, "usage: seekread_pread FILE COUNT\n");
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
        if (pread(fd, buf, sizeof buf, at) < 0) {
            perror("pread");
            return 1;
        }
    }
    return close(fd) == 0 ? 0 : 1;
}
