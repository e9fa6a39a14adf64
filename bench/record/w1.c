/* W1: 2,000,000 8-byte writes to a file.   w1 OUT [COUNT] */
#include <fcntl.h>
#include <unistd.h>
#include "bench.h"

int main(int argc, char *argv[])
{
	if (argc < 2)
		return 2;
	long count = argc > 2 ? atol(argv[2]) : 2000000;
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 1;
	long long t = bench_now();
	for (long i = 0; i < count; i++)
		if (write(fd, "01234567", 8) != 8)
			return 1;
	bench_report(t);
	return close(fd) != 0;
}
