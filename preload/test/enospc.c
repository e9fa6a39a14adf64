/* enospc: a deferred write's error surfaces as documented (docs/RUNTIME.md,
 * "Errors"): the next write, fsync or close on the fd fails with it.
 *   enospc FILE stop COUNT    writes 8-byte records until one fails; prints
 *                             "ERRNO_NAME" and exits 1 (0 if none failed)
 *   enospc FILE close COUNT   writes COUNT records ignoring errors, then
 *                             prints "close RESULT ERRNO_NAME"
 *   enospc FILE efbig COUNT   like stop, under RLIMIT_FSIZE = 100000 bytes
 *                             with SIGXFSZ ignored (no root needed)
 *   enospc FILE retry COUNT   a logger that handles a full disk: first
 *                             fills FILE.ballast0..2 with 40 KiB each; when
 *                             a record fails with ENOSPC it prints the record
 *                             number, deletes one ballast file and writes the
 *                             record again (the rest of it, after a short write)
 *   enospc FILE retry-other COUNT
 *                             the same, but the disk is filled by another
 *                             process (a child, through shared memory the
 *                             runtime cannot see) after record COUNT/4, and
 *                             that process frees it when told; prints only
 *                             "retried" (where the error shows may differ);
 *                             it pauses 50 ms once the disk is full, so that
 *                             the runtime's time-bound flush fails first
 *   enospc FILE retry-fork COUNT
 *                             retry-other, and the logger forks a child (which
 *                             exits at once) before it has space freed: a
 *                             fork must not drop the bytes a failed flush
 *                             holds for the retry */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *name(int e)
{
    return e == ENOSPC ? "ENOSPC" : e == EFBIG ? "EFBIG" : e == EIO ? "EIO" : e == 0 ? "0" : "other";
}

/* Writes all of rec, as a careful logger does: a short write goes on with
 * the rest; ENOSPC calls free_space() and tries again. */
static int put(int fd, const char *rec, size_t n, long i, int (*free_space)(long))
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = write(fd, rec + done, n - done);
        if (r > 0)
            done += (size_t)r;
        else if (r < 0 && errno == ENOSPC) {
            if (free_space(i) != 0)
                return -1;
        } else
            return -1;
    }
    return 0;
}

static char ballast_base[4096];
static int ballasts = 3;

static int free_ballast(long i)
{
    printf("ENOSPC at record %ld\n", i);
    if (ballasts == 0)
        return -1;
    char p[4200];
    snprintf(p, sizeof p, "%s.ballast%d", ballast_base, --ballasts);
    return unlink(p);
}

static struct filler {
    _Atomic int state; /* 1: fill now, 2: full, 3: free it, 4: freed */
} *fl;

static int fork_first; /* retry-fork */

static int free_filler(long i)
{
    (void)i;
    if (atomic_load(&fl->state) != 2)
        return -1; /* a second ENOSPC: nothing more to free */
    if (fork_first) {
        pid_t k = fork();
        if (k == 0)
            _exit(0);
        waitpid(k, NULL, 0);
    }
    atomic_store(&fl->state, 3);
    while (atomic_load(&fl->state) != 4)
        sched_yield();
    return 0;
}

/* The other process: fills the filesystem with big writes when told, and
 * removes its file when told. */
static void filler(const char *base)
{
    char p[4200];
    static char block[65536];
    snprintf(p, sizeof p, "%s.filler", base);
    while (atomic_load(&fl->state) != 1)
        sched_yield();
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    while (fd >= 0 && write(fd, block, sizeof block) > 0)
        ;
    atomic_store(&fl->state, 2);
    while (atomic_load(&fl->state) != 3)
        sched_yield();
    close(fd);
    unlink(p);
    atomic_store(&fl->state, 4);
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    long count = atol(argv[3]);
    if (!strcmp(argv[2], "retry") || !strcmp(argv[2], "retry-other") || !strcmp(argv[2], "retry-fork")) {
        int other = strcmp(argv[2], "retry") != 0;
        fork_first = !strcmp(argv[2], "retry-fork");
        snprintf(ballast_base, sizeof ballast_base, "%s", argv[1]);
        pid_t kid = -1;
        if (other) {
            fl = mmap(NULL, sizeof *fl, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
            if (fl == MAP_FAILED)
                return 2;
            kid = fork();
            if (kid == 0)
                filler(argv[1]);
        } else {
            static char block[40960];
            for (int b = 0; b < 3; b++) {
                char p[4200];
                snprintf(p, sizeof p, "%s.ballast%d", argv[1], b);
                int bfd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                if (bfd < 0 || write(bfd, block, sizeof block) != (ssize_t)sizeof block || close(bfd) != 0)
                    return 2;
            }
        }
        int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            return 2;
        char rec[32];
        for (long i = 0; i < count; i++) {
            if (other && i == count / 4) {
                atomic_store(&fl->state, 1);
                while (atomic_load(&fl->state) != 2)
                    sched_yield();
                /* Past the runtime's time bound (5 ms): its guardian's
                 * flush of the pending records meets the full disk before
                 * any call of ours does.  That failure is the one the next
                 * write reports, once: not again at close. */
                usleep(50 * 1000);
            }
            snprintf(rec, sizeof rec, "%07ld\n", i);
            if (put(fd, rec, 8, i, other ? free_filler : free_ballast) != 0) {
                printf("gave up at record %ld: %s\n", i, name(errno));
                return 1;
            }
        }
        if (other) {
            printf(atomic_load(&fl->state) == 4 ? "retried\n" : "no ENOSPC\n");
            if (atomic_load(&fl->state) != 4)
                kill(kid, SIGKILL);
            waitpid(kid, NULL, 0);
        }
        return close(fd) == 0 ? 0 : 1;
    }
    if (!strcmp(argv[2], "efbig")) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {100000, 100000};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            return 2;
    }
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 2;
    char rec[32];
    for (long i = 0; i < count; i++) {
        snprintf(rec, sizeof rec, "%07ld\n", i);
        if (write(fd, rec, 8) != 8 && strcmp(argv[2], "close") != 0) {
            printf("%s\n", name(errno));
            return 1;
        }
    }
    if (!strcmp(argv[2], "close")) {
        errno = 0;
        int r = close(fd);
        printf("close %d %s\n", r, name(r ? errno : 0));
        return 0;
    }
    return close(fd) == 0 ? 0 : 1;
}
