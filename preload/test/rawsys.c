/* rawsys: a program that makes system calls without libc (an inline
 * `syscall` instruction).  The runtime must notice at start, say so, and
 * let it run unchanged: its inline writes and its libc writes to the same
 * file stay in program order.
 *   rawsys FILE COUNT */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static long raw_write(int fd, const void *b, long n)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"((long)SYS_write), "D"((long)fd), "S"(b), "d"(n) : "rcx", "r11", "memory");
    return r;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    long count = atol(argv[2]);
    for (long i = 0; i < count; i++) {
        if (write(fd, "libc....", 8) != 8 || raw_write(fd, "raw.....", 8) != 8)
            return 1;
    }
    return 0;
}
