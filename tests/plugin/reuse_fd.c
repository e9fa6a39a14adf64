/* reuse_fd: a region of two writes whose descriptor the plugin registers
 * once (the function's own: opened here, given to nothing but system
 * calls), then everything that could leave that registration stale — for
 * the plugin's execution test (tests/plugin/run.sh: check_reuse_fd).
 *   reuse_fd MODE COUNT PATH...
 * Each record is two writes, "ab" then "cd", each checked `!= n` to err(3).
 * A stale registration shows: /proc/self/comm takes each write as the
 * thread's whole name ("cd" after the two writes; one writev would make
 * it "abcd"), and a FIFO in packet mode (O_DIRECT) keeps each write a
 * message (2-byte reads; one writev: 4).  MODE:
 *   close   each PATH in turn: open, COUNT records, close (the next open
 *           takes the same number)
 *   dup2    COUNT records to the first PATH, then the second PATH opened
 *           and dup2'd onto the first's number, COUNT records again
 *   fcntl   the first PATH opened O_RDWR, COUNT records, one read, then
 *           fcntl(F_SETFL): O_DIRECT | O_NONBLOCK for a FIFO (a packet
 *           pipe from then on), O_APPEND for a file; COUNT records, then
 *           the length of each read that follows
 *   fork    COUNT records to the first PATH; a child closes it, opens the
 *           second PATH (the same number) and writes COUNT records there;
 *           the parent waits and writes COUNT more to the first
 *   exec    COUNT records to the first PATH, then the program again
 *           (execv) as `reuse_fd inherited COUNT PATH2`
 *   inherited  closes every descriptor from 3 up (close_range: the first
 *           PATH's, inherited across the exec), then as close (PATH2
 *           takes the same number)
 * At the end, the thread's name (/proc/self/comm) is printed. */
#define _GNU_SOURCE
#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void comm(void)
{
    char name[64];
    int fd = open("/proc/self/comm", O_RDONLY);
    long n = fd < 0 ? -1 : read(fd, name, sizeof name - 1);

    if (n < 0)
        err(2, "/proc/self/comm");
    name[n] = 0;
    printf("comm: %s", name);
    close(fd);
}

int main(int argc, char *argv[])
{
    if (argc < 4) {
        fprintf(stderr, "usage: reuse_fd MODE COUNT PATH...\n");
        return 2;
    }
    const char *mode = argv[1];
    long count = atol(argv[2]);
    int last = argc;

    if (strcmp(mode, "dup2") == 0 || strcmp(mode, "fcntl") == 0 || strcmp(mode, "fork") == 0 ||
        strcmp(mode, "exec") == 0)
        last = 4;
    if (strcmp(mode, "inherited") == 0 && close_range(3, ~0u, 0) != 0)
        err(2, "close_range");
    for (int p = 3; p < last; p++) {
        int fd = open(argv[p], strcmp(mode, "fcntl") == 0 ? O_RDWR : O_WRONLY | O_APPEND);
        int changes = 1;

        if (fd < 0)
            err(2, "%s", argv[p]);
        for (long i = 0; i < 2 * count; i++) {
            if (write(fd, "ab", 2) != 2)
                err(3, "ab");
            if (write(fd, "cd", 2) != 2)
                err(3, "cd");
            if (i + 1 != count || !changes--)
                continue;
            /* half way: what the mode changes */
            if (strcmp(mode, "dup2") == 0) {
                int other = open(argv[4], O_WRONLY | O_APPEND);

                if (other < 0 || dup2(other, fd) != fd)
                    err(2, "%s", argv[4]);
                close(other);
            } else if (strcmp(mode, "fcntl") == 0) {
                /* emptied first: a write merges into the pipe's last
                 * buffer when that one was written without O_DIRECT */
                char buf[4096];
                struct stat st;

                printf("read %ld\n", (long)read(fd, buf, sizeof buf));
                if (fstat(fd, &st) != 0 ||
                    fcntl(fd, F_SETFL, S_ISFIFO(st.st_mode) ? O_DIRECT | O_NONBLOCK : O_APPEND) != 0)
                    err(2, "fcntl");
            } else if (strcmp(mode, "fork") == 0) {
                pid_t pid = fork();
                int status;

                if (pid < 0)
                    err(2, "fork");
                if (pid == 0) {
                    close(fd);
                    fd = open(argv[4], O_WRONLY | O_APPEND);
                    if (fd < 0)
                        err(2, "%s", argv[4]);
                    continue; /* the child's records, to the second PATH */
                }
                if (waitpid(pid, &status, 0) != pid || status != 0)
                    errx(2, "child: status %d", status);
            } else if (strcmp(mode, "exec") == 0) {
                char *again[] = { argv[0], "inherited", argv[2], argv[4], NULL };

                if (argc < 5)
                    errx(2, "exec: a second PATH");
                fflush(stdout);
                execv("/proc/self/exe", again);
                err(2, "execv");
            } else {
                i = 2 * count; /* close: COUNT records per PATH */
            }
        }
        if (strcmp(mode, "fcntl") == 0) {
            char buf[4096];
            long n;

            while ((n = read(fd, buf, sizeof buf)) > 0)
                printf("read %ld\n", n);
        }
        close(fd);
    }
    comm();
    return 0;
}
