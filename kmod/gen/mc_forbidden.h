/* TEMPORARY until the generator lands */
#define MC_FORBIDDEN_CALLS(X) X(clone) X(clone3) X(fork) X(vfork) X(execve) X(execveat) X(exit) X(exit_group) X(rt_sigreturn) X(ptrace) X(seccomp) X(rt_sigsuspend) X(sigaltstack) X(restart_syscall) X(iopl)
