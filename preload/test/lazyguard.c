/* The guardian starts at the first deferral, and its clone leaves the
 * program's memory out (docs/RUNTIME.md, "The guardian" and "Start-up").
 * Run under the library (SYSCLUSTER_COALESCE=4096):
 *
 *     lazyguard FILE MIB
 *
 * 1. before any short write to a regular file there is no guardian (no
 *    child of this process), and none after a long write or a write to a
 *    pipe;
 * 2. MIB MiB are written, and 1 MiB more that the program marks
 *    MADV_DONTFORK itself; then short writes to FILE until one is
 *    deferred (after a warm-up of a few): now there is one child, named
 *    syscluster-grd;
 * 3. writing the MIB MiB again takes few page faults (a clone that copied
 *    them would have left every page write-protected: one fault per page);
 * 4. the program's own MADV_DONTFORK mark is still there, the big
 *    mapping has none; a fork child sees the whole of the big memory and
 *    not the region marked by the program;
 * 5. FILE holds exactly the bytes written.
 *
 * Prints one "ok" line per check, "FAIL ..." and exits 1 on the first
 * that does not hold. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void fail(const char *what)
{
    printf("FAIL %s\n", what);
    exit(1);
}

/* This process's children (from /proc), with their names. */
static int children(char *names, size_t cap)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    FILE *f = fopen(path, "r");
    if (!f)
        fail("cannot read /proc/self/task/PID/children");
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    int count = 0;
    names[0] = 0;
    for (char *t = strtok(buf, " \n"); t; t = strtok(NULL, " \n")) {
        char cpath[64], comm[32] = "";
        snprintf(cpath, sizeof cpath, "/proc/%s/comm", t);
        FILE *c = fopen(cpath, "r");
        if (c) {
            if (!fgets(comm, sizeof comm, c))
                comm[0] = 0;
            fclose(c);
        }
        comm[strcspn(comm, "\n")] = 0;
        snprintf(names + strlen(names), cap - strlen(names), "%s%s", count ? "," : "", comm);
        count++;
    }
    return count;
}

/* The VmFlags of the mapping that starts at addr, from /proc/self/smaps. */
static int marked_dontfork(void *addr)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        fail("cannot read /proc/self/smaps");
    char line[512];
    int in = 0, dc = -1;
    unsigned long want = (unsigned long)addr;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = want >= lo && want < hi;
        else if (in && !strncmp(line, "VmFlags:", 8)) {
            dc = strstr(line, " dc") != NULL;
            break;
        }
    }
    fclose(f);
    if (dc < 0)
        fail("mapping not found in /proc/self/smaps");
    return dc;
}

static long minflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        fail("usage: lazyguard FILE MIB");
    size_t len = (size_t)atoi(argv[2]) << 20;
    char names[256];
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        fail("cannot create FILE");

    /* 1: nothing deferred yet. */
    if (children(names, sizeof names) != 0)
        fail("a child (guardian?) before any deferral");
    static char big_block[8192];
    memset(big_block, 'B', sizeof big_block);
    if (write(fd, big_block, sizeof big_block) != (ssize_t)sizeof big_block)
        fail("long write");
    int p[2];
    if (pipe(p) != 0 || write(p[1], "x", 1) != 1)
        fail("pipe");
    close(p[0]);
    close(p[1]);
    if (children(names, sizeof names) != 0)
        fail("a guardian started for a long write or a pipe");
    printf("ok no guardian before the first deferral\n");

    /* 2: memory, then the first deferral. */
    char *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *own = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED || own == MAP_FAILED)
        fail("mmap");
    for (size_t i = 0; i < len; i += 4096)
        mem[i] = (char)(i >> 12);
    memset(own, 'o', 1 << 20);
    if (madvise(own, 1 << 20, MADV_DONTFORK) != 0)
        fail("madvise(MADV_DONTFORK)");
    /* The first few short writes of an fd go straight through (a warm-up,
     * SC_WARMUP); one of the next is deferred. */
    int shorts = 0;
    while (shorts < 16 && children(names, sizeof names) == 0) {
        if (write(fd, "short\n", 6) != 6)
            fail("short write");
        shorts++;
    }
    if (children(names, sizeof names) != 1 || strcmp(names, "syscluster-grd") != 0) {
        printf("children: %s\n", names);
        fail("not one guardian after the first deferral");
    }
    printf("ok one guardian, after %d short writes\n", shorts);

    /* 3: the memory was not copied (nor write-protected). */
    long before = minflt();
    for (size_t i = 0; i < len; i += 4096)
        mem[i] = (char)((i >> 12) + 1);
    long faults = minflt() - before, pages = (long)(len / 4096);
    if (faults > pages / 8) {
        printf("%ld faults writing %ld pages again\n", faults, pages);
        fail("the guardian's clone copied the program's memory");
    }
    printf("ok writing %ld pages again after the guardian's start: %ld faults\n", pages, faults);

    /* 4: the marks are the program's own; a fork copies as before. */
    if (!marked_dontfork(own) || marked_dontfork(mem))
        fail("MADV_DONTFORK marks changed by the guardian's start");
    pid_t c = fork();
    if (c == 0) {
        for (size_t i = 0; i < len; i += 4096)
            if (mem[i] != (char)((i >> 12) + 1))
                _exit(2);
        /* The program's own DONTFORK region is not in the child. */
        _exit(mincore(own, 4096, (unsigned char[1]){0}) == 0 ? 3 : 0);
    }
    int st;
    if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("fork child status %d\n", st);
        fail("a fork child after the guardian's start does not see the program's memory as marked");
    }
    printf("ok the program's MADV_DONTFORK marks kept; a fork child sees its memory\n");

    /* 5: the bytes. */
    if (close(fd) != 0)
        fail("close");
    fd = open(argv[1], O_RDONLY);
    char back[8192 + 16 * 6 + 1];
    ssize_t n = read(fd, back, sizeof back);
    int same = n == 8192 + 6 * shorts && memcmp(back, big_block, 8192) == 0;
    for (int i = 0; same && i < shorts; i++)
        same = memcmp(back + 8192 + 6 * i, "short\n", 6) == 0;
    if (!same)
        fail("FILE does not hold the bytes written");
    printf("ok FILE holds the bytes written\n");
    return 0;
}
