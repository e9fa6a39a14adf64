/* SPDX-License-Identifier: MIT */
/*
 * Description: result references (seed 000 §3.2, argument safety).  An
 * argument that is an earlier call's result: n = read(...); write(.., n);
 * fd = openat(...); write(fd, ...); close(fd); offsets from lseek.  With
 * MC_PREDICT, io_uring submits the predicted value inside the link and must
 * finish with the real one when the prediction fails (a short read).
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

struct rcase {
	long size;    /* input size */
	int predict;
	unsigned pairs;
	int check;
};

static char buf[8][4096];

/* pairs x { n = read(in, buf, 4096); write(out, buf, n) } */
static void read_write(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct rcase *k = arg;
	struct mc_call c[16];
	int in, out, ret;

	t_write_file(t_path(dir, "in"), (size_t)k->size, 3);
	in = t_open(t_path(dir, "in"), O_RDONLY);
	out = t_open(t_path(dir, "out"), O_WRONLY | O_CREAT | O_TRUNC);
	memset(buf, 0, sizeof(buf));
	for (unsigned p = 0; p < k->pairs; p++) {
		mc_prep_read(&c[2 * p], in, buf[p], 4096);
		mc_prep_write(&c[2 * p + 1], out, buf[p], 0);
		mc_set_ref(&c[2 * p + 1], 2, 2 * p);
		if (k->predict)
			mc_set_predict(&c[2 * p]);
		if (k->check) {
			mc_set_check(&c[2 * p]);
			mc_set_check(&c[2 * p + 1]);
		}
	}
	ret = mc_run(ctx, c, 2 * k->pairs);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, 2 * k->pairs);
	t_rec_fd_offset(o, "in.offset", in);
	t_rec_fd_offset(o, "out.offset", out);
	t_rec_file(o, "out", t_path(dir, "out"));
	t_rec_mem(o, "buf", buf, sizeof(buf));
	if (t_backend_of(ctx) == MC_BACKEND_URING && k->predict) {
		struct mc_stats s = t_stats(ctx);

		T_ASSERT(s.uring >= 2 * k->pairs - 1, "io_uring ran %llu of %u calls", s.uring,
			 2 * k->pairs);
	}
	close(in);
	close(out);
}

/* fd = openat(dir, name, O_CREAT); write(fd) x 3; lseek(fd, 0, SEEK_CUR);
 * pwrite(fd, .., off = that); fsync(fd); close(fd) */
static void chain(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const char *name = arg;
	struct mc_call c[8];
	char path[512];
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	mc_prep_openat(&c[0], AT_FDCWD, path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	mc_set_check(&c[0]);
	for (int i = 1; i <= 3; i++) {
		mc_prep_write(&c[i], 0, "abcdefghij", 10);
		mc_set_ref(&c[i], 0, 0);
	}
	mc_prep_lseek(&c[4], 0, 0, SEEK_CUR);
	mc_set_ref(&c[4], 0, 0);
	mc_prep_pwrite(&c[5], 0, "XYZ", 3, 0);
	mc_set_ref(&c[5], 0, 0);
	mc_set_ref(&c[5], 3, 4);
	mc_prep_fsync(&c[6], 0);
	mc_set_ref(&c[6], 0, 0);
	mc_prep_close(&c[7], 0);
	mc_set_ref(&c[7], 0, 0);
	ret = mc_run(ctx, c, 8);
	t_rec(o, "ret", ret);
	/* the descriptor number itself may differ only if the table does */
	t_rec_calls(o, "c", c, 8);
	t_rec_file(o, "file", path);
}

int main(void)
{
	static const long sizes[] = { 0, 100, 4096, 4097, 10000, 32768, 40000 };
	char what[128];

	for (unsigned s = 0; s < 7; s++)
		for (int pred = 0; pred < 2; pred++)
			for (int chk = 0; chk < 2; chk++) {
				struct rcase k = { sizes[s], pred, 8, chk };

				snprintf(what, sizeof(what), "read->write size=%ld predict=%d check=%d",
					 k.size, pred, chk);
				t_compare(what, read_write, &k);
			}
	t_compare("openat->write->lseek->pwrite->close", chain, "f");
	t_compare("openat fails (no such dir): checked stop", chain, "nodir/f");
	return t_finish();
}
