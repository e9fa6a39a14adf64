/* copy: the copy program of seed 000, figure 5(a), unchanged but for the
 * headers a modern compiler needs.  Known sequence for an input of S bytes,
 * k = ceil(S / 4096):
 *   openat(in) openat(out) [read(3) write(4)] x k  read(3)=0  exit_group
 * so read(3)->write(4) and write(4)->read(3) both weigh k. */
#include <stdio.h>
#include <fcntl.h>
#include <unistd.h>

#define N 4096

int main(int argc, char *argv[])
{
    int inp, out, n;
    char buff[N];

    if (argc != 3) {
        fprintf(stderr, "usage: copy IN OUT\n");
        return 2;
    }
    inp = open(argv[1], O_RDONLY);
    out = creat(argv[2], 0666);

    while ((n = read(inp, &buff, N)) > 0) {
        write(out, &buff, n);
    }
    return 0;
}
