/* forkexec: fork, then exec a child that writes.
 *   forkexec FILE COUNT
 * The child execs write8 (next to this program) with FILE COUNT, so the
 * child's write(3)->write(3) weighs COUNT-1; the parent only waits. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 3) {
        fprintf(stderr, "usage: forkexec FILE COUNT\n");
        return 2;
    }
    char prog[PATH_MAX];
    snprintf(prog, sizeof prog, "%s", argv[0]);
    char *slash = strrchr(prog, '/');
    snprintf(slash ? slash + 1 : prog, sizeof prog - (slash ? (size_t)(slash + 1 - prog) : 0), "write8");
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        execl(prog, "write8", argv[1], argv[2], (char *)NULL);
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid)
        return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
