/* openstat: open, fstat, read, close of many files.
 *   openstat DIR COUNT      reads DIR/f0 .. DIR/f<COUNT-1> (created if missing)
 * Known sequence per file: openat=3 fstat(3) read(3) close(3); glibc's fstat
 * is newfstatat(3, "", buf, AT_EMPTY_PATH), whose node is newfstatat(3).  So
 * newfstatat(3)->read(3) and read(3)->close(3) weigh COUNT, and
 * openat->newfstatat(3) weighs COUNT plus the dynamic loader's one. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 3) {
        fprintf(stderr, "usage: openstat DIR COUNT\n");
        return 2;
    }
    int count = atoi(argv[2]);
    char path[4096], buf[4096];
    for (int i = 0; i < count; i++) {
        snprintf(path, sizeof path, "%s/f%d", argv[1], i);
        if (access(path, F_OK) != 0) {
            FILE *f = fopen(path, "w");
            if (!f) {
                perror(path);
                return 1;
            }
            fprintf(f, "file %d\n", i);
            fclose(f);
        }
    }
    for (int i = 0; i < count; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/f%d", argv[1], i);
        int fd = open(path, O_RDONLY);
        if (fd < 0 || fstat(fd, &st) != 0 || read(fd, buf, sizeof buf) < 0 || close(fd) != 0) {
            perror(path);
            return 1;
        }
    }
    return 0;
}
