/* server: the read -> sendto loop of a web server serving a file over UDP
 * (seed 000 §4's web server cluster).
 *   server FILE
 * Sends FILE in 1 KiB datagrams to a socket of its own on 127.0.0.1.  Known
 * sequence for k = ceil(size / 1024): [read(3) sendto(4)] x k then read(3)=0,
 * so read(3)->sendto(4) and sendto(4)->read(3) weigh k. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 2) {
        fprintf(stderr, "usage: server FILE\n");
        return 2;
    }
    int in = open(argv[1], O_RDONLY);
    int out = socket(AF_INET, SOCK_DGRAM, 0);
    int sink = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (in < 0 || out < 0 || sink < 0 || bind(sink, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(sink, (struct sockaddr *)&a, &len) != 0) {
        perror("setup");
        return 1;
    }
    char buf[1024];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (sendto(out, buf, n, 0, (struct sockaddr *)&a, sizeof a) != n) {
            perror("sendto");
            return 1;
        }
    return n < 0;
}
