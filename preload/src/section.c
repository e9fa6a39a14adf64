/* The end of a critical section (sc_leave in rt.h): the signals that
 * arrived inside it were held back (signals.c re-queued and blocked them);
 * they are let through now.  A leaf, so that every file can end a section
 * without depending on the signal machinery. */
#include "rt.h"
#include "sys.h"

#include <signal.h>

void sc_release_deferred(void)
{
    uint64_t m = sc_tls.deferred_mask;
    sc_tls.deferred_mask = 0;
    sc_sys4(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&m, 0, 8);
}
