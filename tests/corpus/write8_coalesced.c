/* write8_coalesced: write8 with the advisor's `coalesce-writes` rewrite
 * applied by hand: the 8-byte records go through a 64 KiB buffer, written
 * when full and before close.  The file's bytes are those of write8.
 *   write8_coalesced FILE COUNT
 * Known sequence: openat(FILE)=3, write(3, 65536 bytes) x floor(8*COUNT/65536),
 * write(3) of the rest if any, close(3). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[65536];
static size_t len;

static int flush(int fd)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n < 0)
            return -1;
        done += (size_t)n;
    }
    len = 0;
    return 0;
}

int main(int argc, char *argv[])
{
    if (argc != 3) {
        fprintf(stderr, "usage: write8_coalesced FILE COUNT\n");
        return 2;
    }
    long count = atol(argv[2]);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    for (long i = 0; i < count; i++) {
        if (len + 8 > sizeof buf && flush(fd) != 0) {
            perror("write");
            return 1;
        }
        memcpy(buf + len, "01234567", 8);
        len += 8;
    }
    if (flush(fd) != 0) {
        perror("write");
        return 1;
    }
    return close(fd) == 0 ? 0 : 1;
}
