/* statstorm: a stat storm: the same few paths looked up again and again
 * (as build tools and shells searching $PATH do).
 *   statstorm DIR ROUNDS
 * Creates DIR/s0 .. DIR/s7, then ROUNDS times stats each of them and
 * checks DIR/missing with access: newfstatat (AT_FDCWD) x 8 then access,
 * so newfstatat->newfstatat weighs 7*ROUNDS, newfstatat->access and
 * access->newfstatat about ROUNDS. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 3) {
        fprintf(stderr, "usage: statstorm DIR ROUNDS\n");
        return 2;
    }
    long rounds = atol(argv[2]);
    char path[4096];
    for (int i = 0; i < 8; i++) {
        snprintf(path, sizeof path, "%s/s%d", argv[1], i);
        int fd = open(path, O_WRONLY | O_CREAT, 0644);
        if (fd < 0 || close(fd) != 0) {
            perror(path);
            return 1;
        }
    }
    long found = 0;
    struct stat st;
    for (long r = 0; r < rounds; r++) {
        for (int i = 0; i < 8; i++) {
            snprintf(path, sizeof path, "%s/s%d", argv[1], i);
            found += stat(path, &st) == 0;
        }
        snprintf(path, sizeof path, "%s/missing", argv[1]);
        found += access(path, F_OK) == 0;
    }
    return found != 8 * rounds;
}
