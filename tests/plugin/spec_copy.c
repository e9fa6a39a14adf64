/* spec_copy: the copy loop of seed 000 with its block size a variable,
 * for the plugin's execution test of value specialization (§3.4,
 * tests/plugin/run.sh).
 *   spec_copy IN OUT BLOCK
 * Copies IN to OUT in reads of BLOCK bytes, then prints the last read's
 * result and errno. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char buf[1 << 16];

int main(int argc, char *argv[])
{
    if (argc != 4) {
        fprintf(stderr, "usage: spec_copy IN OUT BLOCK\n");
        return 2;
    }
    int in = open(argv[1], O_RDONLY);
    int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    size_t bs = strtoul(argv[3], NULL, 10);
    long n;

    if (in < 0 || out < 0 || bs == 0 || bs > sizeof buf) {
        perror("spec_copy");
        return 1;
    }
    while ((n = read(in, buf, bs)) > 0)
        write(out, buf, n);
    printf("last read %ld, errno %d\n", n, errno);
    return 0;
}
