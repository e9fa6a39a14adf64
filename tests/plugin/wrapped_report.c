/* wrapped_report: the calls of a straight-line region inside helpers, as
 * real programs write them (safe_read, xwrite, write_buf), for the
 * plugin's execution test (tests/plugin/run.sh, check_inline).
 *   wrapped_report IN OUT COUNT
 * For each of COUNT records: pread a record of IN, write a tag, the record
 * and a newline to OUT.  The tag and the newline go through put(), a
 * static helper clang inlines; the record through write_record(), an
 * extern helper whose error reporting makes it too large for clang's
 * inliner at -O2: the plan's write -> write edges cross from main into
 * write_record, and the plugin inlines it (seed 000 §3.3) into a trial
 * copy of main to make the three writes one multi-call.  Every failure
 * is reported and exits (the handlers do not return: §3.3.2).  Then prints
 * the bytes written, the last results and errno. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *prog = "wrapped_report";
static long records;

static void put(int fd, const char *s, size_t n)
{
    if (write(fd, s, n) < 0) {
        perror("put");
        exit(5);
    }
}

long write_record(int fd, const char *buf, long n)
{
    long w = write(fd, buf, n);
    if (w < 0) {
        int e = errno;
        fprintf(stderr, "%s: cannot write record %ld (%ld bytes) to descriptor %d: %s\n", prog, records, n, fd,
                strerror(e));
        fprintf(stderr, "%s: %ld records were written before it\n", prog, records);
        fflush(stderr);
        exit(6);
    }
    return w;
}

int main(int argc, char *argv[])
{
    char buf[128];
    long total = 0, n = 0, w = 0;

    if (argc != 4) {
        fprintf(stderr, "usage: wrapped_report IN OUT COUNT\n");
        return 2;
    }
    int in = open(argv[1], O_RDONLY);
    int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0) {
        perror("open");
        return 1;
    }
    long count = atol(argv[3]);
    for (long i = 0; i < count; i++) {
        n = pread(in, buf, sizeof buf, (i * 7919L) % 64 * 100);
        if (n < 0) {
            perror("pread");
            return 4;
        }
        put(out, "record: ", 8);
        w = write_record(out, buf, n);
        put(out, "\n", 1);
        total += w;
        records++;
    }
    printf("%ld bytes, last read %ld, last write %ld, errno %d\n", total, n, w, errno);
    return close(out) == 0 && close(in) == 0 ? 0 : 7;
}
