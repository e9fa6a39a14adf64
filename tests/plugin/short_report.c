/* short_report: straight-line regions whose writes are checked as most
 * real programs check them, a short write being an error (§3.3.2 with
 * libmulticall's MC_CHECK_FULL), for the plugin's execution test
 * (tests/plugin/run.sh).
 *   short_report IN OUT COUNT
 * For each of COUNT records: lseek to a record of IN, read it, write an
 * 8-byte header and the record to OUT, each write tested `!= n` into
 * err(3), which does not return.  Then prints how many bytes were written
 * and errno, and exits 0. */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    char buf[128];
    long total = 0;

    if (argc != 4) {
        fprintf(stderr, "usage: short_report IN OUT COUNT\n");
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
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0)
            err(4, "read");
        if (write(out, "record: ", 8) != 8)
            err(5, "write header");
        if (write(out, buf, n) != n)
            err(6, "write record");
        total += 8 + n;
    }
    printf("%ld bytes, errno %d\n", total, errno);
    return close(out) == 0 && close(in) == 0 ? 0 : 7;
}
