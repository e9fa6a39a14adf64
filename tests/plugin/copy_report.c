/* copy_report: the copy loop of seed 000 fig. 5, and after it everything a
 * replacement of the loop could get wrong, printed: the last read's result,
 * errno, both file offsets and a checksum of the buffer the reads left.
 * tests/plugin/run.sh builds it with clang alone and with `syscluster cc`
 * and compares the two under faults.  With SC_ALARM=S in the environment
 * it first sets a SIGALRM handler without SA_RESTART and alarm(S), so that
 * a read blocked on an empty pipe fails with EINTR, a real signal's. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 4096

static void on_alarm(int sig)
{
    (void)sig;
}

int main(int argc, char *argv[])
{
    int inp, out, n;
    char buff[N];
    unsigned long sum = 0;

    if (argc != 3) {
        fprintf(stderr, "usage: copy_report IN OUT\n");
        return 2;
    }
    inp = open(argv[1], O_RDONLY);
    out = creat(argv[2], 0666);
    memset(buff, 'x', N);
    if (getenv("SC_ALARM")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm; /* no SA_RESTART: the blocked read fails */
        sigaction(SIGALRM, &sa, NULL);
        alarm((unsigned)atoi(getenv("SC_ALARM")));
    }
    errno = 0;

    while ((n = read(inp, &buff, N)) > 0) {
        write(out, &buff, n);
    }

    int err = errno;
    for (int i = 0; i < N; i++)
        sum = sum * 31 + (unsigned char)buff[i];
    printf("n=%d errno=%d in_offset=%lld out_offset=%lld buffer=%016lx\n", n, err,
           (long long)lseek(inp, 0, SEEK_CUR), (long long)lseek(out, 0, SEEK_CUR), sum);
    return n < 0;
}
