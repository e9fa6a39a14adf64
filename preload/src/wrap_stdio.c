/* The "before" halves of the stdio wrappers.  Each wrapper is an assembly
 * stub (asm.S) that saves the argument registers, calls sc_pre_NAME with
 * the first five arguments, restores them and jumps to libc's NAME: one
 * mechanism for fixed and variadic functions alike. */
#include "rt.h"
#include "sys.h"

#include <stdio.h>

static void flush_all(void)
{
    sc_enter();
    sc_flush_all();
    sc_leave();
}

/* Output through fd: its own file if it is coalesced, else everything. */
static void out_fd(int fd)
{
    struct sc_fdent *e = sc_fdent(fd);
    if (fd >= 0 && e && e->kind == SC_FD_COAL)
        sc_observe(fd, 0);
    else
        flush_all();
}

static void pre_OUT(long a)
{
    FILE *f = (FILE *)a;
    if (!sc_busy() || !sc_live())
        return;
    if (!f)
        flush_all(); /* fflush(NULL) */
    else
        out_fd(f->_fileno);
}

static void pre_IN(long a)
{
    FILE *f = (FILE *)a;
    if (f && f->_fileno >= 0 && sc_busy() && sc_live())
        sc_observe(f->_fileno, 0);
}

static void pre_OUTFD(long a)
{
    if (sc_busy() && sc_live())
        out_fd((int)a);
}

static void pre_STDOUT(long a)
{
    (void)a;
    pre_OUT((long)stdout);
}

static void pre_STDERR(long a)
{
    (void)a;
    pre_OUT((long)stderr);
}

static void pre_STDIN(long a)
{
    (void)a;
    pre_IN((long)stdin);
}

static void pre_ALL(long a)
{
    (void)a;
    if (atomic_load(&G.pending) && sc_live())
        flush_all();
}

/* fclose: the stream's buffer goes out, then its fd closes. */
static void pre_CLOSE(long a)
{
    FILE *f = (FILE *)a;
    if (!f || !sc_live())
        return;
    int fd = f->_fileno;
    sc_enter();
    sc_flush_all();
    if (fd >= 0)
        sc_release_fd(fd, NULL);
    sc_leave();
}

#define W(name, kind, arg)                                                                              \
    SC_HIDDEN void *sc_pre_##name(long a0, long a1, long a2, long a3, long a4)                          \
    {                                                                                                   \
        static void *real;                                                                              \
        long args[5] = {a0, a1, a2, a3, a4};                                                            \
        if (sc_mode() != SC_OFF)                                                                        \
            pre_##kind(args[arg]);                                                                      \
        if (sc_unlikely(!real))                                                                         \
            real = sc_dlnext(#name);                                                                    \
        return real;                                                                                    \
    }
#include "stdio_list.h"
