/* A loop of one checked write with the same arguments, as dosfstools'
 * mkfs.fat clears sectors (writebuf: `write(dev, buf, size) != size` →
 * a noreturn handler): the plugin writes its iterations in writev batches
 * (llvm/lib/BatchWrite.cpp).  tests/plugin/batch_write.sh builds it plain
 * and with the plugin and compares the two under faults.
 *   batch_write OUT K SIZE [close]
 * writes a 100-byte header (so that a file size limit falls inside a
 * block), then K blocks of SIZE bytes from a static buffer; prints the
 * file position at the end.  `close`: the descriptor is closed before the
 * loop (EBADF).  The handler prints the block, the write's result and
 * errno. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int dev;
static char *blank;
static int sector_size;

static void die(const char *msg, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *msg, ...)
{
	va_list ap;
	int e = errno;
	va_start(ap, msg);
	vfprintf(stderr, msg, ap);
	va_end(ap);
	fprintf(stderr, ": errno %d (%s)\n", e, strerror(e));
	exit(1);
}

static void __attribute__((noinline)) write_blocks(int k)
{
	int x;
	for (x = 0; x < k; ++x) {
		int size = sector_size;
		long r = write(dev, blank, size); // batch write
		if (r != size)
			die("failed whilst writing block %d: result %ld", x, r);
	}
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: batch_write OUT K SIZE [close]\n");
		return 2;
	}
	dev = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (dev < 0) {
		perror(argv[1]);
		return 2;
	}
	sector_size = atoi(argv[3]);
	blank = calloc(1, (size_t)sector_size);
	if (!blank)
		return 2;
	memset(blank, 0xf6, (size_t)sector_size);
	if (write(dev, "header: 100 bytes, so that a limit in 512-byte units falls inside a block ............................", 100) != 100)
		die("header");
	if (argc > 4 && strcmp(argv[4], "close") == 0)
		close(dev);
	write_blocks(atoi(argv[2]));
	printf("position %ld\n", (long)lseek(dev, 0, SEEK_CUR));
	return 0;
}
