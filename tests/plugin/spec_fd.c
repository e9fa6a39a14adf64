/* spec_fd: records written as a header to one descriptor and a body to
 * another, which are one descriptor in most runs — for the plugin's
 * execution test of value specialization on the descriptor (§3.4,
 * tests/plugin/run.sh: check_spec_fd).
 *   spec_fd OUT LOG COUNT
 * LOG "-" writes the headers to OUT too (the same descriptor, which the
 * code cannot prove); each write is checked `!= n` to err(3). */
#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 4) {
        fprintf(stderr, "usage: spec_fd OUT LOG COUNT\n");
        return 2;
    }
    int out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int log = strcmp(argv[2], "-") ? open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644) : out;
    long count = atol(argv[3]);
    char head[16], body[48];

    if (out < 0 || log < 0)
        err(2, "open");
    for (long i = 0; i < count; i++) {
        snprintf(head, sizeof head, "record %08ld", i);
        memset(body, 'a' + (int)(i % 26), sizeof body);
        if (write(log, head, sizeof head) != sizeof head)
            err(1, "head");
        if (write(out, body, sizeof body) != sizeof body)
            err(1, "body");
    }
    return 0;
}
