/* scanprobe: loads a library with dlopen, then makes short writes.
 *   scanprobe LIB FILE
 * Under the runtime, -v says whether the library was taken for one that
 * makes raw system calls (it runs unchanged) or the writes were deferred. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    if (!dlopen(argv[1], RTLD_NOW)) {
        fprintf(stderr, "scanprobe: %s\n", dlerror());
        return 1;
    }
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 100; i++)
        if (write(fd, "record.\n", 8) != 8)
            return 1;
    return close(fd) != 0;
}
