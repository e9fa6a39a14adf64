/* redundant: calls that ask the kernel what the program already knows.
 *   redundant FILE COUNT lseek|getpid|fstat
 * Opens FILE (created, 8 bytes) as fd 3, then COUNT times:
 *   lseek:  lseek(3, 0, SEEK_CUR)  (ftell's question): lseek(3)->lseek(3)
 *           weighs COUNT-1;
 *   getpid: getpid() as a system call: getpid->getpid weighs COUNT-1;
 *   fstat:  fstat(3) (glibc: newfstatat(3, "", …, AT_EMPTY_PATH)) then
 *           pread(3, 8 bytes at 0): newfstatat(3)->pread64(3) weighs COUNT
 *           and pread64(3)->newfstatat(3) COUNT-1, and nothing changes the
 *           file in between. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 4) {
        fprintf(stderr, "usage: redundant FILE COUNT lseek|getpid|fstat\n");
        return 2;
    }
    long count = atol(argv[2]);
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "01234567", 8) != 8) {
        perror(argv[1]);
        return 1;
    }
    long sum = 0;
    char buf[8];
    struct stat st;
    for (long i = 0; i < count; i++) {
        if (strcmp(argv[3], "lseek") == 0)
            sum += lseek(fd, 0, SEEK_CUR);
        else if (strcmp(argv[3], "getpid") == 0)
            sum += syscall(SYS_getpid);
        else if (fstat(fd, &st) == 0 && pread(fd, buf, sizeof buf, 0) == 8)
            sum += st.st_size;
        else
            return 1;
    }
    return (sum < 0) | (close(fd) != 0);
}
