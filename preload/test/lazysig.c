/* lazysig: signals before and after the runtime installs its trampolines,
 * which it does when first needed -- not at start (docs/RUNTIME.md,
 * "Signals before the first deferral").
 *   lazysig caught FILE    SigCgt before any write, then after short
 *                          writes to FILE (under the runtime: 0, then not 0)
 *   lazysig fatal FILE N TERM|KILL
 *                          N short records to FILE, then SIGTERM (SIGKILL,
 *                          the control) to itself by pthread_kill, which
 *                          publishes nothing: the process dies of it, and
 *                          the records must be in the file -- the
 *                          trampoline wrote them out
 *   lazysig handler FILE   a SIGUSR1 handler set before any write, raised
 *                          between the records; it writes one record too
 *   lazysig query FILE     what sigaction answers, before and after the
 *                          first deferral, for a handler set before it,
 *                          SIG_IGN inherited (USR2: run it ignoring USR2),
 *                          SIG_IGN set before it, the default; then
 *                          whether the kernel ignores what it says
 *   lazysig race FILE      one thread sets SIGHUP and SIGUSR2 to SIG_IGN and
 *                          SIG_DFL in turn while another makes the first
 *                          deferral; then what sigaction answers and what
 *                          the kernel ignores must agree with the last set
 *   lazysig show WHAT      prints WHAT and whether SIGSEGV is ignored
 * Output must be the same with and without the runtime (but caught's). */
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

extern char **environ;

static int out;

static void records(int from, int n)
{
    char b[32];
    for (int i = from; i < from + n; i++) {
        int k = snprintf(b, sizeof b, "record %d\n", i);
        if (write(out, b, (size_t)k) != k)
            exit(3);
    }
}

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
    (void)sig;
    handled++;
    static const char h[] = "handler\n";
    if (write(out, h, sizeof h - 1) != (ssize_t)(sizeof h - 1))
        _exit(4);
}

static const char *name(void (*h)(int))
{
    return h == SIG_IGN ? "SIG_IGN" : h == SIG_DFL ? "SIG_DFL" : h == on_usr1 ? "on_usr1" : "another";
}

static void query(const char *when)
{
    static const int sigs[] = {SIGUSR1, SIGUSR2, SIGHUP, SIGTERM};
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        if (sigaction(sigs[i], NULL, &sa) != 0) {
            printf("%s %s: error\n", when, strsignal(sigs[i]));
            continue;
        }
        printf("%s %s: %s flags %s mask %s\n", when, strsignal(sigs[i]), name(sa.sa_handler),
               sa.sa_flags & SA_RESTART ? "restart" : "-", sigismember(&sa.sa_mask, SIGUSR2) ? "usr2" : "-");
    }
    fflush(stdout);
}

static void (*last_hup)(int), (*last_usr2)(int);

/* A field of /proc/self/status (a mask of signals), read through fd. */
static unsigned long long mask_at(int fd, const char *field)
{
    char buf[4096];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return ~0ULL;
    buf[n] = 0;
    char *p = strstr(buf, field);
    return p ? strtoull(p + strlen(field), NULL, 16) : ~0ULL;
}

static unsigned long long status_mask(const char *field)
{
    int fd = open("/proc/self/status", O_RDONLY);
    unsigned long long m = mask_at(fd, field);
    close(fd);
    return m;
}

/* Sets SIGHUP and SIGUSR2 in turn until the kernel catches SIGTERM: the
 * runtime installed its trampolines, in signal order, so the last sets
 * here overlapped the installation (plain: 5,000 rounds). */
static void *flip(void *arg)
{
    (void)arg;
    int st = open("/proc/self/status", O_RDONLY);
    for (int i = 0; i < 5000; i++) {
        last_hup = i % 2 ? SIG_IGN : SIG_DFL;
        signal(SIGHUP, last_hup);
        last_usr2 = i % 2 ? SIG_DFL : SIG_IGN;
        signal(SIGUSR2, last_usr2);
        if ((mask_at(st, "SigCgt:") >> (SIGTERM - 1)) & 1) {
            if (getenv("LAZYSIG_DEBUG"))
                fprintf(stderr, "flip: %d rounds\n", i);
            break;
        }
    }
    close(st);
    return NULL;
}

static void agree(int sig, void (*last)(int))
{
    struct sigaction sa;
    sigaction(sig, NULL, &sa);
    int ign = (status_mask("SigIgn:") >> (sig - 1)) & 1;
    printf("%s: sigaction %s, kernel %s\n", strsignal(sig), sa.sa_handler == last ? "agrees" : "disagrees",
           ign == (last == SIG_IGN) ? "agrees" : "disagrees");
}

static void *defer(void *arg)
{
    (void)arg;
    records(0, 64);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "show") == 0) {
        struct sigaction sa;
        sigaction(SIGSEGV, NULL, &sa);
        printf("%s: SIGSEGV %s\n", argv[2], name(sa.sa_handler));
        return 0;
    }
    if (argc < 3)
        return 2;
    out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0)
        return 2;
    const char *mode = argv[1];
    if (strcmp(mode, "caught") == 0) {
        unsigned long long before = status_mask("SigCgt:");
        records(0, 16);
        printf("before %llx after %llx\n", before, status_mask("SigCgt:"));
    } else if (strcmp(mode, "fatal") == 0 && argc == 5) {
        records(0, atoi(argv[3]));
        pthread_kill(pthread_self(), strcmp(argv[4], "KILL") == 0 ? SIGKILL : SIGTERM);
        return 5;
    } else if (strcmp(mode, "handler") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;
        sigaction(SIGUSR1, &sa, NULL);
        for (int i = 0; i < 10; i++) {
            records(i * 10, 10);
            pthread_kill(pthread_self(), SIGUSR1);
        }
        printf("handled %d\n", (int)handled);
    } else if (strcmp(mode, "query") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;
        sa.sa_flags = SA_RESTART;
        sigaddset(&sa.sa_mask, SIGUSR2);
        sigaction(SIGUSR1, &sa, NULL);
        signal(SIGHUP, SIG_IGN);
        query("before");
        records(0, 16);
        query("after");
        /* The kernel agrees: SIGHUP and SIGUSR2 ignored (the process lives),
         * SIGUSR1 runs the handler. */
        pthread_kill(pthread_self(), SIGHUP);
        pthread_kill(pthread_self(), SIGUSR2);
        pthread_kill(pthread_self(), SIGUSR1);
        printf("alive, handled %d\n", (int)handled);
        /* A child started now starts with SIGSEGV as this process has it. */
        pid_t pid;
        char *child[] = {argv[0], "show", "posix_spawn", NULL};
        if (posix_spawn(&pid, argv[0], NULL, NULL, child, environ) == 0)
            waitpid(pid, NULL, 0);
    } else if (strcmp(mode, "race") == 0) {
        pthread_t a, b;
        pthread_create(&a, NULL, flip, NULL);
        pthread_create(&b, NULL, defer, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        agree(SIGHUP, last_hup);
        agree(SIGUSR2, last_usr2);
    } else {
        return 2;
    }
    return 0;
}
