/* The least a supervising parent can be (bench/runtime/parent.py): a static
 * program that starts argv[1..] with vfork and execve, as the launcher does
 * (preload/launcher/launcher.c), waits for it and exits with its status.
 * No report socket, no checks, no signal forwarding, no guardian wait: what
 * `syscluster run` costs beyond this is the launcher's own work. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int start(void *argv)
{
    char **a = argv;
    execve(a[0], a, environ);
    _exit(127);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    char stack[4096] __attribute__((aligned(16)));
    pid_t pid = clone(start, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, argv + 1);
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return 125;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
