/* SPDX-License-Identifier: MIT */
/*
 * Description: positional rules.  lseek(SEEK_SET) + reads become preadv
 * with one lseek at the end (the file offset must end where the calls
 * leave it, also when a read ends short at end of file or fails);
 * preads and pwrites at consecutive offsets become preadv and pwritev.
 * Descriptors where lseek or read fail (write-only, O_PATH) must fail
 * the same way.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

struct scase {
	unsigned pairs;   /* lseek + reads_per */
	unsigned reads_per;
	long fsize;
	int openmode;     /* 0 O_RDONLY, 1 O_WRONLY, 2 O_PATH */
	int bad_at;       /* a bad buffer in this call, -1 none */
	int check;
};

static char bufs[64][512];

static void seekread(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct scase *k = arg;
	struct mc_call c[64];
	unsigned n = 0;
	int fd, ret;
	static const int modes[] = { O_RDONLY, O_WRONLY, O_PATH };

	t_write_file(t_path(dir, "in"), (size_t)k->fsize, 4);
	fd = t_open(t_path(dir, "in"), modes[k->openmode]);
	memset(bufs, 0, sizeof(bufs));
	for (unsigned p = 0; p < k->pairs; p++) {
		off_t at = (off_t)((p * 7919L) % 120) * 512;

		mc_prep_lseek(&c[n++], fd, at, SEEK_SET);
		for (unsigned r = 0; r < k->reads_per; r++) {
			mc_prep_read(&c[n], fd, bufs[n], 512);
			n++;
		}
	}
	if (k->bad_at >= 0)
		c[k->bad_at].args[1] = (long)t_bad_ptr();
	for (unsigned i = 0; i < n; i++)
		if (k->check == -2 || (int)i == k->check)
			mc_set_check(&c[i]);
	ret = mc_run(ctx, c, n);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, n);
	t_rec_mem(o, "bufs", bufs, sizeof(bufs));
	t_rec_fd_offset(o, "offset", fd);
	if (t_backend_of(ctx) == MC_BACKEND_FUSION && k->openmode == 0 && k->bad_at < 0 &&
	    k->fsize >= 70000) {
		struct mc_stats s = t_stats(ctx);

		T_ASSERT(s.fused >= n - 1, "seek+preadv not used (%llu fused of %u)", s.fused, n);
	}
	close(fd);
}

struct pcase {
	int write;
	unsigned n;
	long len, start, fsize;
	int gap_at; /* offsets not consecutive here, -1 none */
};

static void positional(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct pcase *k = arg;
	struct mc_call c[64];
	static char data[64][1024];
	int fd, ret;
	long off = k->start;

	t_write_file(t_path(dir, "f"), (size_t)k->fsize, 8);
	fd = t_open(t_path(dir, "f"), O_RDWR);
	for (unsigned i = 0; i < 64; i++)
		memset(data[i], k->write ? 'a' + (int)i % 26 : 0, sizeof(data[i]));
	for (unsigned i = 0; i < k->n; i++) {
		if ((int)i == k->gap_at)
			off += 3;
		if (k->write)
			mc_prep_pwrite(&c[i], fd, data[i], (size_t)k->len, off);
		else
			mc_prep_pread(&c[i], fd, data[i], (size_t)k->len, off);
		off += k->len;
	}
	ret = mc_run(ctx, c, k->n);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, k->n);
	t_rec_mem(o, "data", data, sizeof(data));
	t_rec_fd_offset(o, "offset", fd);
	t_rec_file(o, "f", t_path(dir, "f"));
	close(fd);
}

int main(void)
{
	char what[128];

	for (unsigned per = 1; per <= 3; per++)
		for (int mode = 0; mode < 3; mode++)
			for (int chk = -2; chk < 0; chk++) {
				static const long sizes[] = { 70000, 61440 + 100, 30000 };

				for (unsigned s = 0; s < 3; s++) {
					struct scase k = { 8, per, sizes[s], mode, -1, chk };

					snprintf(what, sizeof(what), "seekread per=%u mode=%d size=%ld check=%d",
						 per, mode, k.fsize, chk);
					t_compare(what, seekread, &k);
				}
			}
	{
		struct scase k = { 8, 2, 70000, 0, 5, -1 };

		t_compare("seekread bad buffer at 5", seekread, &k);
		k.check = 5;
		t_compare("seekread bad buffer at 5, checked", seekread, &k);
		k.bad_at = 1;
		t_compare("seekread bad buffer at 1, checked", seekread, &k);
	}
	for (int w = 0; w < 2; w++)
		for (int gap = -1; gap < 8; gap += 5) {
			static const long fsizes[] = { 100000, 5000 };

			for (unsigned f = 0; f < 2; f++) {
				struct pcase k = { w, 16, 1000, 2000, fsizes[f], gap };

				snprintf(what, sizeof(what), "%s gap=%d fsize=%ld", w ? "pwrite" : "pread",
					 gap, k.fsize);
				t_compare(what, positional, &k);
			}
		}
	return t_finish();
}
