/* planplugin: a call site in a library loaded with dlopen, for planned.c
 * (its plan names the site; the runtime must resolve it after dlopen). */
#include <sys/syscall.h>
#include <unistd.h>

long (*volatile plugin_sys)(long, ...) = syscall;

__attribute__((noinline)) long plugin_gtod(void *tv)
{
    long r = plugin_sys(SYS_gettimeofday, tv, (void *)0);
    __asm__ volatile("" ::: "memory");
    return r;
}
