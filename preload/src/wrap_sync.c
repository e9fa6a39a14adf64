/* Synchronization between processes: waking another process through a
 * process-shared semaphore, condition variable, mutex, read-write lock,
 * barrier or futex is
 * a message like a write to a pipe, so everything pending is written out
 * first (sc_publish), and the woken reader sees every byte written before.
 * Objects private to the process are left alone: its own threads see the
 * pending bytes through the wrappers of the calls that observe a file.
 *
 * Whether an object is process-shared is read from glibc's public layouts
 * (checked on glibc 2.36, x86-64; the test preload/test/observer.c fails
 * if they change):
 *   sem_t              the int after the 64-bit value (struct new_sem's
 *                      `private`): 0 private, FUTEX_PRIVATE_FLAG (128) shared
 *                      (sem_open's semaphores are shared);
 *   pthread_mutex_t    __data.__kind & 128 (PTHREAD_MUTEX_PSHARED_BIT);
 *   pthread_cond_t     __data.__wrefs & 1 (__PTHREAD_COND_SHARED_MASK);
 *   pthread_barrier_t  the fourth int (struct pthread_barrier's `shared`):
 *                      0 private, 128 shared;
 *   pthread_rwlock_t   __data.__shared: 0 private, 1 shared.
 * With nothing pending each wrapper costs one load. */
#include "rt.h"

#include <pthread.h>
#include <semaphore.h>

static inline int pending(void)
{
    return sc_unlikely(atomic_load_explicit(&G.pending, memory_order_relaxed) != 0);
}

SC_EXPORT int sem_post(sem_t *s)
{
    if (pending() && ((const int *)s)[2] != 0)
        sc_publish();
    return SC_REAL(sem_post)(s);
}

SC_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    if (pending() && (m->__data.__kind & 128))
        sc_publish();
    return SC_REAL(pthread_mutex_unlock)(m);
}

SC_EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
    if (pending() && (c->__data.__wrefs & 1))
        sc_publish();
    return SC_REAL(pthread_cond_signal)(c);
}

SC_EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
    if (pending() && (c->__data.__wrefs & 1))
        sc_publish();
    return SC_REAL(pthread_cond_broadcast)(c);
}

SC_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
    if (pending() && ((const int *)b)[3] != 0)
        sc_publish();
    return SC_REAL(pthread_barrier_wait)(b);
}

/* Unlocking a process-shared read-write lock lets a process waiting in
 * rdlock or wrlock go on: a message like the others. */
SC_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
    if (pending() && l->__data.__shared != 0)
        sc_publish();
    return SC_REAL(pthread_rwlock_unlock)(l);
}
