/* copy_block: the copy program of seed 000 with the block size as an
 * argument: at 4096 it makes exactly the calls of copy; at 131072 it is the
 * advisor's `larger-block` rewrite.
 *   copy_block IN OUT BLOCK
 * Known sequence for an input of S bytes, k = ceil(S / BLOCK):
 *   openat(in)=3 openat(out)=4 [read(3) write(4)] x k  read(3)=0
 * so read(3)->write(4) and write(4)->read(3) both weigh k. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 4) {
        fprintf(stderr, "usage: copy_block IN OUT BLOCK\n");
        return 2;
    }
    size_t block = (size_t)atol(argv[3]);
    char *buff = malloc(block);
    int inp = open(argv[1], O_RDONLY);
    int out = creat(argv[2], 0666);
    ssize_t n;
    if (!buff || block == 0 || inp < 0 || out < 0) {
        perror("setup");
        return 1;
    }
    while ((n = read(inp, buff, block)) > 0)
        if (write(out, buff, n) != n)
            return 1;
    return n < 0;
}
