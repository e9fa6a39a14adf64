/* stdio: writes through stdio, so that each write(2) is issued several
 * libc frames below the program's call (fflush -> _IO_new_file_sync ->
 * _IO_new_do_write -> new_do_write -> _IO_new_file_write -> write; fwrite ->
 * _IO_new_file_xsputn -> ... -> write), as code-location tests need.
 *   stdio FILE COUNT
 * The stream has a 4096-byte buffer of its own (setvbuf), so stdio neither
 * sizes it with fstat nor allocates it.  Known sequence:
 *   openat(FILE)=3, [write(3, 8 bytes) from fflush] x COUNT,
 *   write(3, 4096) x 2 from one fwrite of 8192 bytes, close(3) from fclose,
 * so openat->write(3) weighs 1, write(3)->write(3) weighs COUNT+1 and
 * write(3)->close(3) weighs 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char buffer[4096];
static char big[8192];

int main(int argc, char *argv[])
{
    if (argc != 3) {
        fprintf(stderr, "usage: stdio FILE COUNT\n");
        return 2;
    }
    long count = atol(argv[2]);
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    setvbuf(f, buffer, _IOFBF, sizeof buffer);
    for (long i = 0; i < count; i++) {
        fwrite("01234567", 1, 8, f);
        if (fflush(f) != 0) {
            perror("fflush");
            return 1;
        }
    }
    memset(big, 'x', sizeof big);
    if (fwrite(big, 1, sizeof big, f) != sizeof big) {
        perror("fwrite");
        return 1;
    }
    return fclose(f) == 0 ? 0 : 1;
}
