/* region_report: straight-line regions of system calls with their error
 * handling, for the plugin's execution test (tests/plugin/run.sh).
 *   region_report IN OUT COUNT
 * For each of COUNT records: lseek to a record of IN, read it, write an
 * 8-byte header and the record to OUT; every failure goes to err(3), which
 * does not return (§3.3.2).  Then prints how many bytes were written, the
 * last results and errno, and exits 0.  The loop body is one region of four
 * calls: lseek -> read -> write -> write, the last write's count the read's
 * result (a result reference).  Built with -DFULL_CHECKS, each write is
 * tested as most real programs test one, `!= n`: a short write is an error
 * too (§3.3.2 with libmulticall's MC_CHECK_FULL). */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    char buf[128];
    long total = 0, n = 0, w = 0;

    if (argc != 4) {
        fprintf(stderr, "usage: region_report IN OUT COUNT\n");
        return 2;
    }
    int in = open(argv[1], O_RDONLY);
    if (in < 0)
        err(1, "%s", argv[1]);
    int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0)
        err(1, "%s", argv[2]);
    long count = atol(argv[3]);
    for (long i = 0; i < count; i++) {
        off_t at = (off_t)((i * 7919L) % 64) * 100;
        if (lseek(in, at, SEEK_SET) < 0)
            err(3, "lseek");
        n = read(in, buf, sizeof buf);
        if (n < 0)
            err(4, "read");
#ifdef FULL_CHECKS
        if (write(out, "record: ", 8) != 8)
            err(5, "write header");
        w = write(out, buf, n);
        if (w != n)
            err(6, "write record");
#else
        if (write(out, "record: ", 8) < 0)
            err(5, "write header");
        w = write(out, buf, n);
        if (w < 0)
            err(6, "write record");
#endif
        total += w;
    }
    printf("%ld bytes, last read %ld, last write %ld, errno %d\n", total, n, w, errno);
    return close(out) == 0 && close(in) == 0 ? 0 : 7;
}
