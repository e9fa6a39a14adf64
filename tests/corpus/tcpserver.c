/* tcpserver: an event-driven server (epoll), the shape of a key-value store
 * or a web server: one listening socket on 127.0.0.1, every connection
 * accepted from it served by the same request loop.
 *   tcpserver PORTFILE CONNECTIONS
 * Binds 127.0.0.1 port 0, writes the port it got to PORTFILE, and answers
 * each request (up to 64 bytes) with the same bytes until CONNECTIONS
 * connections have come and gone; then exits 0.  An alarm ends it after 30 s
 * whatever happens (exit 3).  Known sequence per request:
 * epoll_wait -> read(conn) -> write(conn), whatever the connection. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char *argv[])
{
    if (argc != 3) {
        fprintf(stderr, "usage: tcpserver PORTFILE CONNECTIONS\n");
        return 2;
    }
    int want = atoi(argv[2]);
    alarm(30);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 128) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) != 0) {
        perror("setup");
        return 1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", ntohs(a.sin_port)) < 0 || fclose(f) != 0 || rename(tmp, argv[1]) != 0) {
        perror(argv[1]);
        return 1;
    }
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = l};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev) != 0) {
        perror("epoll");
        return 1;
    }
    int done = 0;
    struct epoll_event evs[64];
    char buf[64];
    while (done < want) {
        int n = epoll_wait(ep, evs, 64, -1);
        if (n < 0) {
            perror("epoll_wait");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == l) {
                int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
                struct epoll_event cev = {.events = EPOLLIN, .data.fd = c};
                if (c < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev) != 0) {
                    perror("accept");
                    return 1;
                }
                continue;
            }
            ssize_t r = read(fd, buf, sizeof buf);
            if (r > 0) {
                if (write(fd, buf, r) != r) {
                    perror("write");
                    return 1;
                }
            } else {
                epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                close(fd);
                done++;
            }
        }
    }
    return 0;
}
