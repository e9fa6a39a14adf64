/* ptrace_floor: the least any ptrace recorder can pay per system call on
 * this machine, for the ratios of bench/ptrace/overhead.sh.
 *
 *   ptrace_floor STOPS FILE COUNT
 *
 * Forks a child that installs a seccomp filter returning SECCOMP_RET_TRACE
 * for every call and writes 8 bytes COUNT times to FILE.  The tracer does
 * nothing but what every recorder must: at each seccomp stop (a call's
 * entry) one PTRACE_GET_SYSCALL_INFO, then it resumes.  With STOPS = 2 it
 * resumes with PTRACE_SYSCALL, so that the call also stops at its exit (the
 * only way to see its result), and reads the exit the same way; with
 * STOPS = 1 the calls' results are never seen.  Prints nothing; exit 0. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: ptrace_floor 1|2 FILE COUNT\n");
        return 2;
    }
    int stops = atoi(argv[1]);
    long count = atol(argv[3]);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        raise(SIGSTOP); /* until the tracer has seized us */
        struct sock_filter f[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE)};
        struct sock_fprog p = {1, f};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p))
            _exit(1);
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        for (long i = 0; i < count; i++)
            if (write(fd, "01234567", 8) != 8)
                _exit(1);
        _exit(0);
    }
    int st;
    if (waitpid(pid, &st, WUNTRACED) != pid ||
        ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESECCOMP | PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL) ||
        kill(pid, SIGCONT))
        return 1;
    for (;;) {
        if (waitpid(pid, &st, __WALL) < 0)
            return 1;
        if (WIFEXITED(st))
            return WEXITSTATUS(st);
        if (WIFSIGNALED(st))
            return 1;
        struct __ptrace_syscall_info info;
        int req = PTRACE_CONT, sig = 0;
        if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_SECCOMP << 8))) {
            ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof info, &info);
            if (stops == 2)
                req = PTRACE_SYSCALL;
        } else if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
            ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof info, &info);
        } else if (st >> 16 == 0 && WSTOPSIG(st) != SIGSTOP && WSTOPSIG(st) != SIGCONT) {
            sig = WSTOPSIG(st);
        }
        ptrace(req, pid, 0, sig);
    }
}
