/* copy_cfr: the copy program of seed 000 with the advisor's `copy-offload`
 * rewrite applied: copy_file_range moves the data inside the kernel, with
 * the read/write loop as the fallback (EXDEV, EINVAL, ENOSYS).
 *   copy_cfr IN OUT
 * Known sequence for regular files on one file system: openat(in)=3,
 * openat(out)=4, copy_file_range(3, 4) x ceil(size / 1 GiB), then one
 * copy_file_range(3, 4) that returns 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#define N 4096

int main(int argc, char *argv[])
{
    int inp, out;
    ssize_t n;
    char buff[N];

    if (argc != 3) {
        fprintf(stderr, "usage: copy_cfr IN OUT\n");
        return 2;
    }
    inp = open(argv[1], O_RDONLY);
    out = creat(argv[2], 0666);
    if (inp < 0 || out < 0) {
        perror("open");
        return 1;
    }
    while ((n = copy_file_range(inp, NULL, out, NULL, 1 << 30, 0)) > 0)
        ;
    if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS))
        while ((n = read(inp, buff, N)) > 0)
            if (write(out, buff, n) != n)
                return 1;
    return n < 0;
}
