/* W3: 200,000 x (open, fstat, read 4 KiB, lseek, read, close, getpid).
 *   w3 FILE [COUNT]      FILE holds at least 8 KiB */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bench.h"

int main(int argc, char *argv[])
{
	if (argc < 2)
		return 2;
	long count = argc > 2 ? atol(argv[2]) : 200000;
	char buf[4096];
	struct stat st;
	long long t = bench_now();
	for (long i = 0; i < count; i++) {
		int fd = open(argv[1], O_RDONLY);
		if (fd < 0 || fstat(fd, &st) != 0 || read(fd, buf, sizeof buf) != sizeof buf ||
		    lseek(fd, 4096, SEEK_SET) != 4096 || read(fd, buf, sizeof buf) != sizeof buf || close(fd) != 0)
			return 1;
		getpid();
	}
	bench_report(t);
	return 0;
}
