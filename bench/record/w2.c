/* W2: copy of a file (64 MiB) with 4 KiB reads and writes.   w2 IN OUT */
#include <fcntl.h>
#include <unistd.h>
#include "bench.h"

int main(int argc, char *argv[])
{
	if (argc != 3)
		return 2;
	char buf[4096];
	int in = open(argv[1], O_RDONLY);
	int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0)
		return 1;
	long long t = bench_now();
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, n) != n)
			return 1;
	bench_report(t);
	return n < 0;
}
