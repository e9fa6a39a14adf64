/* observer: a reader process synchronized with the writer through a
 * process-shared object sees every record it was told about.
 *   observer FILE KIND [ROUNDS]     KIND: sem cond broadcast mutex rwlock barrier futex
 * The writer writes one 8-byte record (deferred under the runtime), then
 * tells the reader through KIND (in MAP_SHARED memory); the reader, woken
 * by that call, checks the file holds every record told so far.  Prints
 * "missing N of ROUNDS" and exits 1 if any was missing.  (Acknowledgements
 * back to the writer go through a plain atomic: the reader writes nothing.) */
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define WARM 8

struct shared {
    sem_t sem;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    pthread_barrier_t barrier;
    pthread_rwlock_t rwlock;
    _Atomic int futex_word; /* stays 0: the reader learns only through the wake */
    _Atomic long told, want, ack, missing;
};

static void spin_until(_Atomic long *v, long x)
{
    while (atomic_load(v) != x)
        sched_yield();
}

static long on_disk(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? (long)(st.st_size / 8) - WARM : -1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: observer FILE sem|cond|broadcast|mutex|rwlock|barrier|futex [ROUNDS]\n");
        return 2;
    }
    const char *kind = argv[2];
    long rounds = argc > 3 ? atol(argv[3]) : 50;
    struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 2;
    sem_init(&sh->sem, 1, 0);
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&sh->mutex, &ma);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    pthread_cond_init(&sh->cond, &ca);
    pthread_barrierattr_t ba;
    pthread_barrierattr_init(&ba);
    pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&sh->barrier, &ba, 2);
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_SHARED);
    pthread_rwlock_init(&sh->rwlock, &ra);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 2;
    int mutex = !strcmp(kind, "mutex"), rwlock = !strcmp(kind, "rwlock");
    if (mutex)
        pthread_mutex_lock(&sh->mutex);
    if (rwlock)
        pthread_rwlock_wrlock(&sh->rwlock);
    pid_t child = fork();
    if (child == 0) {
        int rd = open(argv[1], O_RDONLY);
        for (long i = 1; i <= rounds; i++) {
            if (!strcmp(kind, "sem")) {
                while (sem_wait(&sh->sem) != 0)
                    ;
            } else if (!strcmp(kind, "cond") || !strcmp(kind, "broadcast")) {
                pthread_mutex_lock(&sh->mutex);
                while (atomic_load(&sh->told) < i)
                    pthread_cond_wait(&sh->cond, &sh->mutex);
                pthread_mutex_unlock(&sh->mutex);
            } else if (mutex) {
                spin_until(&sh->want, i);
                pthread_mutex_lock(&sh->mutex); /* the writer holds it while it writes */
                pthread_mutex_unlock(&sh->mutex);
            } else if (rwlock) {
                spin_until(&sh->want, i);
                pthread_rwlock_rdlock(&sh->rwlock); /* the writer holds it for writing while it writes */
                pthread_rwlock_unlock(&sh->rwlock);
            } else if (!strcmp(kind, "barrier")) {
                pthread_barrier_wait(&sh->barrier);
            } else if (!strcmp(kind, "futex")) {
                while (syscall(SYS_futex, &sh->futex_word, FUTEX_WAIT, 0, NULL, NULL, 0) != 0)
                    ;
            } else {
                _exit(2);
            }
            long told = atomic_load(&sh->told), seen = on_disk(rd);
            if (seen < told)
                atomic_fetch_add(&sh->missing, 1);
            atomic_store(&sh->ack, i);
        }
        _exit(0);
    }
    char rec[32];
    for (int i = 0; i < WARM; i++)
        if (write(fd, "warm...\n", 8) != 8)
            return 2;
    for (long i = 1; i <= rounds; i++) {
        snprintf(rec, sizeof rec, "%07ld\n", i);
        if (!strcmp(kind, "sem")) {
            if (write(fd, rec, 8) != 8)
                return 2;
            atomic_store(&sh->told, i);
            sem_post(&sh->sem);
        } else if (!strcmp(kind, "cond") || !strcmp(kind, "broadcast")) {
            if (write(fd, rec, 8) != 8)
                return 2;
            pthread_mutex_lock(&sh->mutex);
            atomic_store(&sh->told, i);
            if (!strcmp(kind, "cond"))
                pthread_cond_signal(&sh->cond);
            else
                pthread_cond_broadcast(&sh->cond);
            pthread_mutex_unlock(&sh->mutex);
        } else if (mutex) {
            atomic_store(&sh->want, i);
            if (write(fd, rec, 8) != 8)
                return 2;
            atomic_store(&sh->told, i);
            pthread_mutex_unlock(&sh->mutex);
        } else if (rwlock) {
            atomic_store(&sh->want, i);
            if (write(fd, rec, 8) != 8)
                return 2;
            atomic_store(&sh->told, i);
            pthread_rwlock_unlock(&sh->rwlock);
        } else if (!strcmp(kind, "barrier")) {
            if (write(fd, rec, 8) != 8)
                return 2;
            atomic_store(&sh->told, i);
            pthread_barrier_wait(&sh->barrier);
        } else if (!strcmp(kind, "futex")) {
            if (write(fd, rec, 8) != 8)
                return 2;
            atomic_store(&sh->told, i);
            while (syscall(SYS_futex, &sh->futex_word, FUTEX_WAKE, 1, NULL, NULL, 0) < 1)
                sched_yield(); /* until the reader is waiting */
        }
        spin_until(&sh->ack, i);
        if (mutex)
            pthread_mutex_lock(&sh->mutex);
        if (rwlock)
            pthread_rwlock_wrlock(&sh->rwlock);
    }
    int st;
    waitpid(child, &st, 0);
    long missing = atomic_load(&sh->missing);
    printf("missing %ld of %ld\n", missing, rounds);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 && missing == 0 ? 0 : 1;
}
