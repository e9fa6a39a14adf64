/* Raw system calls for the runtime's own work.  They never touch errno, are
 * never cancellation points and do not go through our own wrappers, so the
 * runtime can use them from signal handlers, from the guardian (which has no
 * real thread-local storage) and while holding its locks.  They return the
 * result or -errno. */
#ifndef SC_SYS_H
#define SC_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>

static inline long sc_sys0(long n)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n) : "rcx", "r11", "memory");
    return r;
}

static inline long sc_sys1(long n, long a)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a) : "rcx", "r11", "memory");
    return r;
}

static inline long sc_sys2(long n, long a, long b)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b) : "rcx", "r11", "memory");
    return r;
}

static inline long sc_sys3(long n, long a, long b, long c)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return r;
}

static inline long sc_sys4(long n, long a, long b, long c, long d)
{
    long r;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return r;
}

static inline long sc_sys5(long n, long a, long b, long c, long d, long e)
{
    long r;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                     : "rcx", "r11", "memory");
    return r;
}

static inline long sc_sys6(long n, long a, long b, long c, long d, long e, long f)
{
    long r;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return r;
}

#define SC_FUTEX_WAIT_PRIVATE 128  /* FUTEX_WAIT | FUTEX_PRIVATE_FLAG */
#define SC_FUTEX_WAKE_PRIVATE 129  /* FUTEX_WAKE | FUTEX_PRIVATE_FLAG */

struct sc_timespec {
    long tv_sec;
    long tv_nsec;
};

static inline long sc_futex_wait(void *addr, int val, const struct sc_timespec *ts)
{
    return sc_sys4(SYS_futex, (long)addr, SC_FUTEX_WAIT_PRIVATE, val, (long)ts);
}

static inline long sc_futex_wake(void *addr, int n)
{
    return sc_sys3(SYS_futex, (long)addr, SC_FUTEX_WAKE_PRIVATE, n);
}

/* On the region shared with the guardian (another address space): no
 * FUTEX_PRIVATE_FLAG. */
static inline long sc_futex_wait_shared(void *addr, int val, const struct sc_timespec *ts)
{
    return sc_sys4(SYS_futex, (long)addr, 0 /* FUTEX_WAIT */, val, (long)ts);
}

static inline long sc_futex_wake_shared(void *addr, int n)
{
    return sc_sys3(SYS_futex, (long)addr, 1 /* FUTEX_WAKE */, n);
}

static inline long sc_gettid(void) { return sc_sys0(SYS_gettid); }
static inline long sc_getpid(void) { return sc_sys0(SYS_getpid); }

#endif
