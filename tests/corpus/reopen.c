/* reopen: the same small file opened, read and closed again and again (as
 * a program rereading its configuration does).
 *   reopen FILE COUNT       FILE is created with 64 bytes if missing
 * Known sequence per round: openat(FILE)=3, read(3)=64, read(3)=0,
 * close(3): openat->read(3) and read(3)->close(3) weigh COUNT, and
 * read(3)->read(3) weighs COUNT. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 3) {
        fprintf(stderr, "usage: reopen FILE COUNT\n");
        return 2;
    }
    long count = atol(argv[2]);
    if (access(argv[1], F_OK) != 0) {
        FILE *f = fopen(argv[1], "w");
        if (!f || fprintf(f, "%063d\n", 7) != 64 || fclose(f) != 0)
            return 1;
    }
    char buf[4096];
    long total = 0;
    for (long i = 0; i < count; i++) {
        int fd = open(argv[1], O_RDONLY);
        ssize_t n;
        if (fd < 0)
            return 1;
        while ((n = read(fd, buf, sizeof buf)) > 0)
            total += n;
        if (n < 0 || close(fd) != 0)
            return 1;
    }
    return total != 64 * count;
}
