/* stdio8: write8 (tests/corpus) buffered by stdio: the same COUNT 8-byte
 * records, the same bytes, through fwrite and stdio's default buffer (the
 * file's st_blksize, 4096 bytes on ext4) -- the speed an application gets
 * by buffering itself, which the runtime must come within 1.3x of.
 *   stdio8 FILE COUNT */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char *argv[])
{
    if (argc != 3) {
        fprintf(stderr, "usage: stdio8 FILE COUNT\n");
        return 2;
    }
    long count = atol(argv[2]);
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    for (long i = 0; i < count; i++)
        if (fwrite("01234567", 1, 8, f) != 8) {
            perror("fwrite");
            return 1;
        }
    return fclose(f) == 0 ? 0 : 1;
}
