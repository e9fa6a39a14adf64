/* udprecv: datagrams sent and received one system call each.
 *   udprecv ROUNDS
 * Two UDP sockets on 127.0.0.1 (fds 3 and 4); each round sends 32
 * datagrams of 256 bytes from 3 to 4 with sendto, then receives them with
 * recvfrom: sendto(3)->sendto(3) and recvfrom(4)->recvfrom(4) weigh 31 per
 * round. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 2) {
        fprintf(stderr, "usage: udprecv ROUNDS\n");
        return 2;
    }
    long rounds = atol(argv[1]);
    int out = socket(AF_INET, SOCK_DGRAM, 0);
    int in = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (out < 0 || in < 0 || bind(in, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(in, (struct sockaddr *)&a, &len) != 0) {
        perror("setup");
        return 1;
    }
    char buf[256] = {0};
    for (long r = 0; r < rounds; r++) {
        for (int i = 0; i < 32; i++)
            if (sendto(out, buf, sizeof buf, 0, (struct sockaddr *)&a, sizeof a) != sizeof buf)
                return 1;
        for (int i = 0; i < 32; i++) {
            struct sockaddr_in from;
            socklen_t fl = sizeof from;
            if (recvfrom(in, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl) != sizeof buf)
                return 1;
        }
    }
    return 0;
}
