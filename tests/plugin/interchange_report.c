/* interchange_report: seed 000 §3.3.1's example as a loop, for the
 * plugin's execution test (tests/plugin/run.sh, check_interchange).
 *   interchange_report IN OUT
 * Copies IN to OUT in 4 KiB blocks, each between a header byte and a
 * separator; between the block's write and the separator's, the counters
 * of the seed's example are updated (static globals: read_bytes += n;
 * block_sent++).  Every failure goes to err(3), which does not return and
 * prints the counters (§3.3.2): a moved store must still have happened
 * when a later call's handler runs.  Built with -DSEND, the seed's sendto
 * comes before the separator: the block sent as a datagram to a UDP socket
 * of 127.0.0.1 that this program binds and never reads (the kernel drops
 * what its buffer cannot hold; sendto succeeds).  The `// sc:` markers
 * name the calls for the test's plan (llvm/test/make-plan.py). */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

static long read_bytes, block_sent;

int main(int argc, char *argv[])
{
    static char buf[4096];
    long n;

    if (argc != 3) {
        fprintf(stderr, "usage: interchange_report IN OUT\n");
        return 2;
    }
    int in = open(argv[1], O_RDONLY);
    if (in < 0)
        err(1, "%s", argv[1]);
    int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0)
        err(1, "%s", argv[2]);
#ifdef SEND
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof to;
    int sock = socket(AF_INET, SOCK_DGRAM, 0);
    if (sock < 0 || bind(sock, (struct sockaddr *)&to, len) < 0 || getsockname(sock, (struct sockaddr *)&to, &len) < 0)
        err(1, "socket");
#endif
    for (;;) {
        n = read(in, buf, sizeof buf);
        if (n < 0)
            err(4, "read after %ld bytes in %ld blocks", read_bytes, block_sent);
        if (n == 0)
            break;
        if (write(out, "[", 1) < 0)                    // sc: write
            err(5, "header after %ld bytes in %ld blocks", read_bytes, block_sent);
        if (write(out, buf, n) < 0)                    // sc: write
            err(5, "write after %ld bytes in %ld blocks", read_bytes, block_sent);
        read_bytes += n;
        block_sent++;
#ifdef SEND
        if (sendto(sock, buf, n, 0, (struct sockaddr *)&to, len) < 0) // sc: sendto
            err(6, "sendto after %ld bytes in %ld blocks", read_bytes, block_sent);
#endif
        if (write(out, "]\n", 2) < 0)                  // sc: write
            err(7, "separator after %ld bytes in %ld blocks", read_bytes, block_sent);
    }
    printf("%ld bytes in %ld blocks, errno %d\n", read_bytes, block_sent, errno);
    return close(out) == 0 && close(in) == 0 ? 0 : 8;
}
