/* tcpload: a load generator for tcpserver.
 *   tcpload PORT CONNECTIONS REQUESTS
 * Opens CONNECTIONS connections to 127.0.0.1:PORT at once, then sends
 * REQUESTS requests of 16 bytes on each in turn, reading each answer back
 * (it must be the request), and closes them all.  Exit 0 when every answer
 * came back whole, 1 otherwise; an alarm ends it after 30 s (exit 3). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 4) {
        fprintf(stderr, "usage: tcpload PORT CONNECTIONS REQUESTS\n");
        return 2;
    }
    int port = atoi(argv[1]), conns = atoi(argv[2]), reqs = atoi(argv[3]);
    alarm(30);
    int *fd = calloc(conns, sizeof *fd);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int c = 0; c < conns; c++) {
        fd[c] = socket(AF_INET, SOCK_STREAM, 0);
        if (fd[c] < 0 || connect(fd[c], (struct sockaddr *)&a, sizeof a) != 0) {
            perror("connect");
            return 1;
        }
    }
    char req[16], got[16];
    for (int r = 0; r < reqs; r++)
        for (int c = 0; c < conns; c++) {
            /* 16 bytes whatever the counts: the numbers wrap at 100000. */
            snprintf(req, sizeof req, "get %05u:%05u", (unsigned)c % 100000, (unsigned)r % 100000);
            if (write(fd[c], req, sizeof req) != sizeof req) {
                perror("write");
                return 1;
            }
            size_t have = 0;
            while (have < sizeof got) {
                ssize_t n = read(fd[c], got + have, sizeof got - have);
                if (n <= 0) {
                    fprintf(stderr, "tcpload: connection %d closed early\n", c);
                    return 1;
                }
                have += n;
            }
            if (memcmp(req, got, sizeof req) != 0) {
                fprintf(stderr, "tcpload: wrong answer on connection %d\n", c);
                return 1;
            }
        }
    for (int c = 0; c < conns; c++)
        close(fd[c]);
    return 0;
}
