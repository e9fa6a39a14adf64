/* killed: a program killed by a signal in the middle of its run.
 *   killed FILE COUNT segv|kill|term
 * Writes 8 bytes COUNT times, then dies: by a null-pointer store (SIGSEGV,
 * no system call), or by kill(getpid(), SIGKILL or SIGTERM).  Known edges:
 * write(3)->write(3) weighs COUNT-1; with kill|term, write(3)->getpid and
 * getpid->kill weigh 1. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 4) {
        fprintf(stderr, "usage: killed FILE COUNT segv|kill|term\n");
        return 2;
    }
    long count = atol(argv[2]);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 1;
    for (long i = 0; i < count; i++)
        if (write(fd, "killme!\n", 8) != 8)
            return 1;
    if (strcmp(argv[3], "segv") == 0)
        *(volatile int *)0 = 1;
    else
        kill(getpid(), strcmp(argv[3], "kill") == 0 ? SIGKILL : SIGTERM);
    return 3; /* not reached */
}
