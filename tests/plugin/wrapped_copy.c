/* wrapped_copy: the copy loop of seed 000 fig. 5 with its calls in
 * wrappers that end in them (`return read(fd, buf, BLOCK);`), for the
 * plugin's execution test (tests/plugin/run.sh, check_inline), built with
 * clang told not to inline so that the wrappers stay out of line.  At -O2
 * their calls are jumps: the recorder sees read and write return into
 * main, and the plan names main's lines.  The plugin inlines the wrappers
 * (seed 000 §3.3) and the rotated loop becomes one looped multi-call.
 *   wrapped_copy IN OUT
 * Prints the last read's result and errno. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#define BLOCK 4096

long get_block(int fd, char *buf)
{
    return read(fd, buf, BLOCK);
}

void put_block(int fd, const char *buf, long n)
{
    write(fd, buf, n);
}

int main(int argc, char *argv[])
{
    char buf[BLOCK];
    long n;

    if (argc != 3) {
        fprintf(stderr, "usage: wrapped_copy IN OUT\n");
        return 2;
    }
    int in = open(argv[1], O_RDONLY);
    int out = creat(argv[2], 0644);
    while ((n = get_block(in, buf)) > 0)
        put_block(out, buf, n);
    printf("last read %ld, errno %d\n", n, errno);
    return 0;
}
