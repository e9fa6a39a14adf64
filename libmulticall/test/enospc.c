/* SPDX-License-Identifier: MIT */
/*
 * Description: a full filesystem.  A 256 KiB tmpfs, mounted in a private
 * mount namespace, fills up in the middle of a fused writev, a pwritev, a
 * copy_file_range loop (block sizes that divide the page and ones that do
 * not, both rotations): the write that reaches the end returns what fit,
 * the next fails with ENOSPC.  Everything must be as direct leaves it.
 * Needs CAP_SYS_ADMIN (unshare + mount): skips where that is not allowed.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static char small[256];
static char data[1 << 16];
static char buf[1 << 15];

static void empty_small(void)
{
	DIR *d = opendir(small);
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			unlink(t_path(small, e->d_name));
	if (d)
		closedir(d);
}

struct wcase {
	unsigned n;
	long len;
	int check;
	int positional;
};

static void writes(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct wcase *w = arg;
	struct mc_call c[80];
	int fd, ret;

	(void)dir;
	empty_small();
	fd = t_open(t_path(small, "out"), O_RDWR | O_CREAT | O_TRUNC);
	for (unsigned i = 0; i < w->n; i++) {
		const char *src = data + (i * w->len) % (sizeof(data) - (size_t)w->len);

		if (w->positional)
			mc_prep_pwrite(&c[i], fd, src, (size_t)w->len, (off_t)i * w->len);
		else
			mc_prep_write(&c[i], fd, src, (size_t)w->len);
		if (w->check == -2 || (int)i == w->check)
			mc_set_check(&c[i]);
	}
	ret = mc_run(ctx, c, w->n);
	t_rec(o, "ret", ret);
	t_rec_calls(o, "c", c, w->n);
	t_rec_fd_offset(o, "offset", fd);
	t_rec_file(o, "out", t_path(small, "out"));
	close(fd);
	empty_small();
}

struct ccase {
	long bs;
	int rotated, wchk;
};

static void copy(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct ccase *k = arg;
	struct mc_call body[2];
	struct mc_loop loop = { 0, MC_WHILE_GT, 0, 1000000 };
	unsigned long it = 0;
	int in, out, ret, r = 0, w = 1;
	long n0 = 0;

	empty_small();
	t_write_file(t_path(dir, "in"), 400000, 9);
	in = t_open(t_path(dir, "in"), O_RDONLY);
	out = t_open(t_path(small, "out"), O_WRONLY | O_CREAT | O_TRUNC);
	memset(buf, 0x77, sizeof(buf));
	if (k->rotated) {
		n0 = read(in, buf, (size_t)k->bs);
		r = 1;
		w = 0;
		loop.call = 1;
	}
	mc_prep_read(&body[r], in, buf, (size_t)k->bs);
	mc_prep_write(&body[w], out, buf, 0);
	mc_set_ref(&body[w], 2, (unsigned)r);
	mc_set_check(&body[r]);
	if (k->wchk)
		mc_set_check(&body[w]);
	body[r].result = n0;
	ret = mc_run_loop(ctx, body, 2, &loop, &it);
	t_rec(o, "ret", ret);
	t_rec(o, "iterations", (long long)it);
	t_rec_calls(o, "c", body, 2);
	t_rec_fd_offset(o, "in.offset", in);
	t_rec_fd_offset(o, "out.offset", out);
	t_rec_file(o, "out", t_path(small, "out"));
	t_rec_mem(o, "buf", buf, sizeof(buf));
	close(in);
	close(out);
	empty_small();
}

int main(void)
{
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char what[160];

	signal(SIGPIPE, SIG_IGN);
	if (unshare(CLONE_NEWNS) < 0)
		t_need("tmpfs", "cannot unshare the mount namespace (%s); needs CAP_SYS_ADMIN",
		       strerror(errno));
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		t_need("tmpfs", "cannot make mounts private (%s)", strerror(errno));
	snprintf(small, sizeof(small), "%s/mc-enospc-XXXXXX", base);
	if (!mkdtemp(small)) {
		t_fail("enospc: mkdtemp %s: %s", small, strerror(errno));
		return T_EXIT_FAIL;
	}
	if (mount("tmpfs", small, "tmpfs", 0, "size=256k") < 0) {
		rmdir(small);
		t_need("tmpfs", "cannot mount a tmpfs (%s)", strerror(errno));
	}
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 5 + 7);

	for (int pos = 0; pos < 2; pos++)
		for (int chk = -2; chk <= 0; chk++) {
			static const long lens[] = { 5000, 4096, 3333 };

			for (unsigned l = 0; l < 3; l++) {
				struct wcase w = { 80, lens[l], chk == 0 ? 60 : chk, pos };

				snprintf(what, sizeof(what), "%s 80x%ld check=%d", pos ? "pwrite" : "write",
					 w.len, w.check);
				t_compare(what, writes, &w);
			}
		}
	for (int rot = 0; rot < 2; rot++)
		for (int wchk = 0; wchk < 2; wchk++) {
			static const long bss[] = { 512, 3000, 4096, 16384, 20000 };

			for (unsigned b = 0; b < 5; b++) {
				struct ccase k = { bss[b], rot, wchk };

				snprintf(what, sizeof(what), "copy bs=%ld rot=%d wchk=%d", k.bs, rot, wchk);
				t_compare(what, copy, &k);
			}
		}
	umount(small);
	rmdir(small);
	return t_finish();
}
