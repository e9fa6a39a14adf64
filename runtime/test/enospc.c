/* enospc: a deferred write's error surfaces as documented (docs/RUNTIME.md,
 * "Errors"): the next write, fsync or close on the fd fails with it.
 *   enospc FILE stop COUNT    writes 8-byte records until one fails; prints
 *                             "ERRNO_NAME" and exits 1 (0 if none failed)
 *   enospc FILE close COUNT   writes COUNT records ignoring errors, then
 *                             prints "close RESULT ERRNO_NAME"
 *   enospc FILE efbig COUNT   like stop, under RLIMIT_FSIZE = 100000 bytes
 *                             with SIGXFSZ ignored (no root needed) */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const char *name(int e)
{
    return e == ENOSPC ? "ENOSPC" : e == EFBIG ? "EFBIG" : e == EIO ? "EIO" : e == 0 ? "0" : "other";
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    long count = atol(argv[3]);
    if (!strcmp(argv[2], "efbig")) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {100000, 100000};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            return 2;
    }
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 2;
    char rec[32];
    for (long i = 0; i < count; i++) {
        snprintf(rec, sizeof rec, "%07ld\n", i);
        if (write(fd, rec, 8) != 8 && strcmp(argv[2], "close") != 0) {
            printf("%s\n", name(errno));
            return 1;
        }
    }
    if (!strcmp(argv[2], "close")) {
        errno = 0;
        int r = close(fd);
        printf("close %d %s\n", r, name(r ? errno : 0));
        return 0;
    }
    return close(fd) == 0 ? 0 : 1;
}
