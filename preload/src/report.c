/* Reports: one line per event, to the supervisor's socket or to stderr.
 * A leaf: calls nothing else of the library. */
#include "rt.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>

/* ---- diagnostics ------------------------------------------------------ */

void sc_report(const char *kind, const char *fmt, ...)
{
    char text[512], msg[640];
    int saved = errno;
    char comm[32] = "?";
    long fd = sc_sys4(SYS_openat, AT_FDCWD, (long)"/proc/self/comm", O_RDONLY | O_CLOEXEC, 0);
    if (fd >= 0) {
        long n = sc_sys3(SYS_read, fd, (long)comm, sizeof comm - 1);
        comm[n > 0 ? n - 1 : 0] = 0; /* drop the newline */
        sc_sys1(SYS_close, fd);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    int sent = 0;
    if (G.report_len) {
        /* The supervisor prints it (once per distinct report). */
        int n = snprintf(msg, sizeof msg, "syscluster-runtime/1\t%s\t%d\t%s\t%s\n", kind, (int)sc_getpid(), comm, text);
        long s = sc_sys3(SYS_socket, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s >= 0 && n > 0) {
            struct sockaddr_un a = {.sun_family = AF_UNIX};
            memcpy(a.sun_path, G.report, (size_t)G.report_len);
            long r = sc_sys6(SYS_sendto, s, (long)msg, n, MSG_DONTWAIT, (long)&a,
                             (long)(offsetof(struct sockaddr_un, sun_path) + (size_t)G.report_len));
            sent = r == n;
        }
        if (s >= 0)
            sc_sys1(SYS_close, s);
    }
    if (!sent && (G.verbose || strcmp(kind, "stats") != 0)) {
        int n = snprintf(msg, sizeof msg, "syscluster: %s[%d]: %s\n", comm, (int)sc_getpid(), text);
        if (n > 0)
            sc_sys3(SYS_write, 2, (long)msg, n < (int)sizeof msg ? n : (int)sizeof msg - 1);
    }
    errno = saved;
}
