/* sigexec: the signal dispositions a program sets are those its children
 * start with, whichever way it starts them.
 *   sigexec          ignores SIGSEGV, SIGBUS and SIGUSR1, then starts
 *                    itself by posix_spawn, system, popen, execve without
 *                    the runtime in its environment, and execv
 *   sigexec show HOW prints HOW and the signals it started ignoring
 * The output must be the same with and without the runtime. */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The signals the program sees ignored (sigaction's view: under the
 * runtime the kernel may see its trampoline instead). */
static void show(const char *how)
{
    unsigned long mask = 0;
    for (int sig = 1; sig < 32; sig++) {
        struct sigaction sa;
        if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
            mask |= 1UL << (sig - 1);
    }
    printf("%s ignores %lx\n", how, mask);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "show") == 0) {
        show(argv[2]);
        return 0;
    }
    show("start");
    struct sigaction sa;
    int r = sigaction(32, NULL, &sa); /* glibc's own: EINVAL */
    printf("sigaction(32) %d %s\n", r, r ? strerror(errno) : "");
    fflush(stdout);
    signal(SIGSEGV, SIG_IGN);
    signal(SIGBUS, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
    char cmd[4200];
    pid_t pid;
    char *spawn_argv[] = {argv[0], "show", "posix_spawn", NULL};
    if (posix_spawn(&pid, argv[0], NULL, NULL, spawn_argv, environ) == 0)
        waitpid(pid, NULL, 0);
    snprintf(cmd, sizeof cmd, "exec '%s' show system", argv[0]);
    if (system(cmd) != 0)
        return 1;
    snprintf(cmd, sizeof cmd, "exec '%s' show popen", argv[0]);
    FILE *p = popen(cmd, "r");
    char buf[256];
    while (p && fgets(buf, sizeof buf, p))
        fputs(buf, stdout);
    if (!p || pclose(p) != 0)
        return 1;
    fflush(stdout);
    if ((pid = fork()) == 0) {
        char *exec_argv[] = {argv[0], "show", "exec-without-runtime", NULL}, *env[] = {NULL};
        execve(argv[0], exec_argv, env);
        _exit(1);
    }
    waitpid(pid, NULL, 0);
    execl(argv[0], argv[0], "show", "exec", (char *)NULL);
    return 1;
}
