/* server_sendmmsg: server with the advisor's `sendmmsg` rewrite applied:
 * 32 blocks of 1 KiB are read at once and sent as 32 datagrams by one
 * sendmmsg.  The datagrams (lengths and bytes, in order) are those of
 * server for a regular file.
 *   server_sendmmsg FILE
 * Known sequence for k = ceil(size / 32 KiB): [read(3) sendmmsg(4)] x k
 * then read(3)=0. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#define BLOCK 1024
#define BATCH 32

int main(int argc, char *argv[])
{
    if (argc != 2) {
        fprintf(stderr, "usage: server_sendmmsg FILE\n");
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
    static char buf[BATCH * BLOCK];
    struct iovec iov[BATCH];
    struct mmsghdr msg[BATCH];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0) {
        int k = 0;
        for (ssize_t at = 0; at < n; at += BLOCK, k++) {
            iov[k].iov_base = buf + at;
            iov[k].iov_len = (size_t)(n - at < BLOCK ? n - at : BLOCK);
            msg[k].msg_hdr = (struct msghdr){.msg_name = &a, .msg_namelen = sizeof a, .msg_iov = &iov[k], .msg_iovlen = 1};
        }
        for (int sent = 0; sent < k;) {
            int r = sendmmsg(out, msg + sent, (unsigned)(k - sent), 0);
            if (r <= 0) {
                perror("sendmmsg");
                return 1;
            }
            sent += r;
        }
    }
    return n < 0;
}
