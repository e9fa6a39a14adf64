/* threads: a multi-threaded writer.
 *   threads DIR THREADS COUNT
 * Fds 3 and 4 are a pipe that starts the threads together; thread i writes
 * 8 bytes COUNT times to DIR/t<i>, fd 5+i (opened before the threads
 * start).  Transitions are per thread, so write(5+i)->write(5+i) weighs
 * COUNT-1 for every i, and no edge joins the writes of two different fds,
 * however the threads interleave. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long count;
static int barrier_fd[2];

static void *writer(void *arg)
{
    int fd = (int)(long)arg;
    char go;
    /* Start together, so that the threads' writes interleave. */
    if (read(barrier_fd[0], &go, 1) != 1)
        return (void *)1;
    for (long i = 0; i < count; i++)
        if (write(fd, "abcdefgh", 8) != 8)
            return (void *)1;
    return NULL;
}

int main(int argc, char *argv[])
{
    if (argc != 4) {
        fprintf(stderr, "usage: threads DIR THREADS COUNT\n");
        return 2;
    }
    unsigned n = (unsigned)atoi(argv[2]);
    count = atol(argv[3]);
    pthread_t tid[64];
    int fds[64];
    if (n < 1 || n > 64 || pipe(barrier_fd) != 0)
        return 2;
    for (unsigned i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/t%u", argv[1], i);
        fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fds[i] < 0) {
            perror(path);
            return 1;
        }
    }
    for (unsigned i = 0; i < n; i++)
        pthread_create(&tid[i], NULL, writer, (void *)(long)fds[i]);
    char go[64] = {0};
    if (write(barrier_fd[1], go, n) != (ssize_t)n)
        return 1;
    int bad = 0;
    for (unsigned i = 0; i < n; i++) {
        void *r;
        pthread_join(tid[i], &r);
        bad |= r != NULL;
    }
    return bad;
}
