/* SPDX-License-Identifier: MIT */
/*
 * Description: calls io_uring cannot express, and calls fusion does not
 * merge, between ones they do: getppid, fstat, fcntl, lseek, dup, select,
 * reads and writes on pipes (which may block, so never go to the ring),
 * in order with file reads and writes that do.  Order is observable: an
 * lseek between two writes moves the second, a dup'ed descriptor shares
 * the offset.  Also checks that the uring backend did use the ring.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void run(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	int variant = *(int *)arg;
	struct mc_call c[40];
	struct stat st;
	struct timeval tv = { 0, 0 };
	fd_set rs;
	char rb[4][64];
	int fd, p[2], ret, n = 0;

	t_write_file(t_path(dir, "f"), 3000, 1);
	fd = t_open(t_path(dir, "f"), O_RDWR);
	if (pipe(p) < 0)
		t_fail("pipe");
	memset(rb, 0, sizeof(rb));
	FD_ZERO(&rs);
	FD_SET(p[0], &rs);
	mc_prep_write(&c[n++], fd, "AAAA", 4);
	mc_prep_write(&c[n++], fd, "BBBB", 4);
	mc_prep_syscall(&c[n++], SYS_getppid, 0, 0, 0, 0, 0, 0);
	mc_prep_lseek(&c[n++], fd, 100, SEEK_SET);
	mc_prep_write(&c[n++], fd, "CCCC", 4);
	mc_prep_write(&c[n++], fd, "DDDD", 4);
	mc_prep_syscall(&c[n++], SYS_fstat, fd, (long)&st, 0, 0, 0, 0);
	mc_prep_syscall(&c[n++], SYS_dup, fd, 0, 0, 0, 0, 0);
	mc_prep_write(&c[n], 0, "EEEE", 4); /* through the dup: same offset */
	mc_set_ref(&c[n++], 0, 7);
	mc_prep_write(&c[n++], fd, "FFFF", 4);
	mc_prep_write(&c[n++], p[1], "pipe", 4);
	mc_prep_select(&c[n++], p[0] + 1, &rs, NULL, NULL, &tv);
	mc_prep_read(&c[n++], p[0], rb[0], 64);
	mc_prep_read(&c[n++], fd, rb[1], 64);
	mc_prep_read(&c[n++], fd, rb[2], 64);
	mc_prep_syscall(&c[n++], SYS_fcntl, fd, F_GETFL, 0, 0, 0, 0);
	mc_prep_syscall(&c[n], SYS_close, 0, 0, 0, 0, 0, 0);
	mc_set_ref(&c[n++], 0, 7);
	mc_prep_pwrite(&c[n++], fd, "GGGG", 4, 2990);
	mc_prep_pwrite(&c[n++], fd, "HHHH", 4, 2994);
	mc_prep_pread(&c[n++], fd, rb[3], 64, 2980);
	if (variant == 1)
		for (int i = 0; i < n; i++)
			mc_set_check(&c[i]);
	if (variant == 2)
		c[5].args[0] = 999; /* EBADF in the middle, unchecked */
	ret = mc_run(ctx, c, (unsigned)n);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, (unsigned)n);
	t_rec_mem(o, "rb", rb, sizeof(rb));
	t_rec_fd_offset(o, "offset", fd);
	t_rec_file(o, "f", t_path(dir, "f"));
	if (t_backend_of(ctx) == MC_BACKEND_URING) {
		struct mc_stats s = t_stats(ctx);

		T_ASSERT(s.uring >= 8, "io_uring ran %llu calls", s.uring);
		T_ASSERT(s.direct >= 6, "%llu calls ran directly", s.direct);
	}
	close(fd);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	for (int v = 0; v < 3; v++) {
		char what[64];

		snprintf(what, sizeof(what), "mixed variant %d", v);
		t_compare(what, run, &v);
	}
	return t_finish();
}
