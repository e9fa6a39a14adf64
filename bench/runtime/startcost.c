/* startcost: what starting the guardian costs a process with a large
 * address space (docs/RUNTIME.md, "Costs").
 *   startcost FILE MB
 * Maps MB MiB of anonymous memory and writes every page, opens FILE, makes
 * the 4 short writes the runtime lets through before it defers, then times
 * the fifth (under the runtime the first deferred write, which starts the
 * guardian) and then a second pass writing every page again (what the
 * program pays afterwards for pages the start left write-protected).
 * Prints "first_write_us RETOUCH_US"; run it plain for the reference. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: startcost FILE MB\n");
        return 2;
    }
    size_t len = (size_t)atol(argv[2]) << 20;
    char *m = len ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : NULL;
    if (m == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    for (size_t i = 0; i < len; i += 4096)
        m[i] = 1;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(argv[1]);
        return 2;
    }
    for (int i = 0; i < 4; i++)
        if (write(fd, "warm-up\n", 8) != 8)
            return 2;
    double t0 = now_us();
    if (write(fd, "record.\n", 8) != 8)
        return 2;
    double t1 = now_us();
    for (size_t i = 0; i < len; i += 4096)
        m[i] = 2;
    double t2 = now_us();
    printf("%.0f %.0f\n", t1 - t0, t2 - t1);
    return close(fd) == 0 ? 0 : 1;
}
