/* An lseek(SEEK_SET) + read pair on a descriptor global of this
 * translation unit, as fsck.fat's fs_read (tests/plugin/seek_read.sh): the
 * plugin makes it one pread and keeps the position the pair would have
 * left pending for the other uses of the descriptor.  Each argument is an
 * operation, its result printed (with errno on failure and a checksum of
 * the bytes read):
 *   gPOS  get: lseek(fd, POS, SEEK_SET) checked `!= POS` (err), read 64
 *   n     read 16 at the current position (where the pairs left it)
 *   c     lseek(fd, 0, SEEK_CUR): the position
 *   r     close and open again
 *   R     close and open again with O_CLOEXEC (the pairs gain only then)
 *   f     fork: the child reads 16 at the shared position and exits, the
 *         parent waits (a `c` after it shows the child's read)
 *   x     a program spawned from another translation unit (posix_spawn,
 *         seek_read_spawn.c) reads 16 from descriptor 3, inherited unless
 *         close-on-exec */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

void spawn_reader(void); /* seek_read_spawn.c */

static int fd;
static const char *path;
static unsigned long gets;

static void open_input(int flags)
{
	fd = open(path, O_RDONLY | flags);
	if (fd < 0)
		err(2, "open %s", path);
}

__attribute__((noinline)) static long get(char *buf, long pos)
{
	if (lseek(fd, pos, SEEK_SET) != pos) // sc: lseek get
		err(3, "seek to %ld", pos);
	long r = read(fd, buf, 64);          // sc: read get

	gets++; /* not a tail call: the recorder finds the read here */
	return r;
}

static void report(const char *op, long r, const char *buf)
{
	unsigned sum = 0;

	for (long i = 0; i < r; i++)
		sum = sum * 31 + (unsigned char)buf[i];
	if (r < 0)
		printf("%s -> %ld (errno %d)\n", op, r, errno);
	else
		printf("%s -> %ld sum %08x\n", op, r, sum);
}

int main(int argc, char **argv)
{
	char buf[64];

	if (argc < 2)
		errx(1, "usage: seek_read FILE OPS...");
	path = argv[1];
	open_input(0);
	for (int i = 2; i < argc; i++) {
		const char *op = argv[i];

		if (op[0] == 'g')
			report(op, get(buf, atol(op + 1)), buf);
		else if (op[0] == 'n')
			report(op, read(fd, buf, 16), buf);
		else if (op[0] == 'c')
			printf("%s -> %ld\n", op, (long)lseek(fd, 0, SEEK_CUR));
		else if (op[0] == 'r' || op[0] == 'R') {
			close(fd);
			open_input(op[0] == 'R' ? O_CLOEXEC : 0);
		} else if (op[0] == 'f') {
			pid_t child = fork();

			if (child < 0)
				err(4, "fork");
			if (child == 0) {
				report("f (child)", read(fd, buf, 16), buf);
				fflush(stdout);
				_exit(0);
			}
			waitpid(child, NULL, 0);
		} else if (op[0] == 'x')
			spawn_reader();
		else
			errx(1, "unknown operation %s", op);
		fflush(stdout);
	}
	return 0;
}
