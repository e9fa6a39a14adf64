/* sharedkill: SIGKILL at random points while another process writes to
 * the same file (issue 9, items 3 and 4).
 *   sharedkill LIB same|append N DIR
 * Each of N rounds: P, under the runtime (LD_PRELOAD=LIB), writes 8-byte
 * records "P%06d\n" and counts what was acknowledged in shared memory; Q,
 * plain, writes "Q%06d\n" records at the same time -- through the same open
 * file description (same: `{ P & Q; } > file`) or through its own O_APPEND
 * description while P appends through another (append).  P is SIGKILLed
 * after 1-30 ms; Q stops 20 ms later; this process, a subreaper, waits for
 * P's guardian.  Then every record must be whole, each writer's in order,
 * none of Q's overwritten, and P's at least what P saw acknowledged.
 * Prints the rounds that failed and in how many P had a guardian (it
 * deferred: the guardian starts at the first deferral); exit 0 if none
 * failed and at least half had one (or the check proves nothing). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct shm {
    volatile long p_ack, q_done, stop;
};

static void writer(int fd, char who, volatile long *count, volatile long *stop)
{
    char rec[16];
    for (long i = 0; !stop || !*stop; i++) {
        snprintf(rec, sizeof rec, "%c%06ld\n", who, i % 1000000);
        if (write(fd, rec, 8) != 8)
            _exit(3);
        *count = i + 1;
    }
}

static int check(const char *path, long p_ack, long q_done, char *why, size_t len)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        return snprintf(why, len, "cannot read"), 1;
    char *d = malloc((size_t)st.st_size + 1);
    if (!d)
        return snprintf(why, len, "%lld bytes", (long long)st.st_size), 1;
    if (read(fd, d, (size_t)st.st_size) != st.st_size)
        return snprintf(why, len, "short read"), 1;
    close(fd);
    long np = 0, nq = 0;
    for (off_t o = 0; o + 8 <= st.st_size; o += 8) {
        char want[16];
        long *n = d[o] == 'P' ? &np : &nq;
        snprintf(want, sizeof want, "%c%06ld\n", d[o] == 'P' ? 'P' : 'Q', *n % 1000000);
        if (memcmp(d + o, want, 8) != 0) {
            free(d);
            return snprintf(why, len, "at %lld: %.8s, expected %.7s (P %ld, Q %ld so far)", (long long)o, d + o, want,
                            np, nq),
                   1;
        }
        (*n)++;
    }
    free(d);
    if (st.st_size % 8)
        return snprintf(why, len, "a torn record at the end"), 1;
    if (np < p_ack)
        return snprintf(why, len, "%ld of P's records on disk, %ld acknowledged", np, p_ack), 1;
    if (nq != q_done)
        return snprintf(why, len, "%ld of Q's records on disk, %ld written", nq, q_done), 1;
    return 0;
}

static struct shm *shm_map(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0 || ftruncate(fd, 4096) != 0)
        exit(2);
    struct shm *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        exit(2);
    close(fd);
    return m;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--writer") == 0) { /* P: --writer FD SHM */
        struct shm *m = shm_map(argv[3]);
        writer(atoi(argv[2]), 'P', &m->p_ack, NULL);
        return 0;
    }
    if (argc != 5)
        return 2;
    int append = strcmp(argv[2], "append") == 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rounds = atoi(argv[3]);
    char path[4096];
    snprintf(path, sizeof path, "%s/shared.log", argv[4]);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    char shmpath[4096];
    snprintf(shmpath, sizeof shmpath, "%s/shared.ack", argv[4]);
    struct shm *m = shm_map(shmpath);
    srand((unsigned)getpid());
    int failed = 0, guarded = 0;
    for (int r = 0; r < rounds; r++) {
        m->p_ack = m->q_done = m->stop = 0;
        int flags = O_WRONLY | O_CREAT | O_TRUNC | (append ? O_APPEND : 0);
        int fd = open(path, flags, 0644);
        if (fd < 0)
            return 2;
        pid_t q = fork();
        if (q == 0) {
            int qfd = append ? open(path, O_WRONLY | O_APPEND) : fd;
            writer(qfd, 'Q', &m->q_done, &m->stop);
            _exit(0);
        }
        pid_t p = fork();
        if (p == 0) {
            int pfd = append ? open(path, O_WRONLY | O_APPEND) : fd;
            char fdnum[16];
            snprintf(fdnum, sizeof fdnum, "%d", pfd);
            setenv("LD_PRELOAD", argv[1], 1);
            setenv("SYSCLUSTER_COALESCE", "4096", 1);
            execl("/proc/self/exe", argv[0], "--writer", fdnum, shmpath, (char *)NULL);
            _exit(127);
        }
        close(fd);
        struct timespec ts = {0, (1 + rand() % 30) * 1000000L};
        nanosleep(&ts, NULL);
        kill(p, SIGKILL);
        waitpid(p, NULL, 0);
        ts.tv_nsec = 20000000L;
        nanosleep(&ts, NULL);
        m->stop = 1;
        pid_t w;
        int grd = 0;
        while ((w = waitpid(-1, NULL, __WALL)) > 0) /* Q, and P's guardian (we are the subreaper) */
            grd |= w != q;
        guarded += grd;
        char why[256];
        if (check(path, m->p_ack, m->q_done, why, sizeof why)) {
            printf("round %d: %s\n", r, why);
            failed++;
        }
    }
    printf("%d of %d rounds failed, %d with a guardian\n", failed, rounds, guarded);
    return failed != 0 || guarded * 2 < rounds;
}
