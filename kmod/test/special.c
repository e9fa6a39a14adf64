/* SPDX-License-Identifier: MIT */
/*
 * Description: the module's specialized multi-calls (seed 000 §3.4, seed
 * 004 §4.2).  Which path ran is read from the module's counters
 * (/sys/module/multicall/parameters/runs_*): the copy loop in both forms
 * with the seed's 4096-byte block takes the value-specialized path, with
 * any other block the specialized loop with the size as given; a copy whose
 * buffer overlaps the program's array, and any other program, the generic
 * interpreter; select then gettimeofday the specialized pair (gettimeofday
 * inlined).  Each is compared with direct: results, return value,
 * iterations, the bytes copied, the buffer, the fd_set, and for the time
 * of day that it lies between two readings taken around the call.
 * (libmulticall's conformance suite, loop.c, runs every copy loop shape
 * and fault on kmod against direct as well.)
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/time.h>
#include <unistd.h>

enum { GENERIC, COPY, COPY_BLOCK, SELECT_TIME, PLAN, NPATHS };
static const char *const path_name[NPATHS] = { "runs_generic", "runs_copy", "runs_copy_block", "runs_select_time",
					       "runs_plan" };

static void counters(long v[NPATHS])
{
	char p[128], b[32];

	for (int k = 0; k < NPATHS; k++) {
		FILE *f;

		snprintf(p, sizeof(p), "/sys/module/multicall/parameters/%s", path_name[k]);
		f = fopen(p, "r");
		if (!f || !fgets(b, sizeof(b), f)) {
			t_fail("%s: %s", p, strerror(errno));
			v[k] = -1;
		} else {
			v[k] = atol(b);
		}
		if (f)
			fclose(f);
	}
}

/* Runs fn on kmod and checks that exactly the path 'want' ran, once. */
static void expect_path(const char *what, t_scenario fn, void *arg, int want)
{
	struct mc_ctx *ctx = t_ctx(MC_BACKEND_KMOD);
	struct t_outcome *o = calloc(1, sizeof(*o));
	char dir[] = "/tmp/mc-special-XXXXXX";
	long before[NPATHS], after[NPATHS];

	if (!ctx || !o || !mkdtemp(dir)) {
		t_fail("%s: no kmod context or scratch directory", what);
		free(o);
		return;
	}
	counters(before);
	fn(ctx, dir, o, arg);
	counters(after);
	for (int k = 0; k < NPATHS; k++)
		T_ASSERT(after[k] - before[k] == (k == want), "%s: %s went from %ld to %ld", what, path_name[k],
			 before[k], after[k]);
	mc_ctx_free(ctx);
	free(o);
}

struct copy_case {
	int rotated;
	long bs, size;
	unsigned long max;
	int chk;
	int overlap; /* the buffer lies in the program's array (an empty input: nothing is read) */
};

static char buf[1 << 16];

static void copy(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct copy_case *k = arg;
	struct {
		struct mc_call body[2];
		char tail[64];
	} prog;
	struct mc_loop loop = { 0, MC_WHILE_GT, 0, k->max };
	char *b = k->overlap ? (char *)&prog : buf;
	unsigned long it = 0;
	int in, out, r = 0, w = 1, ret;
	long n0 = 0;

	t_write_file(t_path(dir, "in"), (size_t)k->size, 5);
	in = t_open(t_path(dir, "in"), O_RDONLY);
	out = t_open(t_path(dir, "out"), O_WRONLY | O_CREAT | O_TRUNC);
	memset(buf, 0x5a, sizeof(buf));
	if (k->rotated) {
		n0 = read(in, b, (size_t)k->bs);
		r = 1, w = 0, loop.call = 1;
	}
	mc_prep_read(&prog.body[r], in, b, (size_t)k->bs);
	mc_prep_write(&prog.body[w], out, b, 0);
	mc_set_ref(&prog.body[w], 2, (unsigned)r);
	if (k->chk) {
		mc_set_check(&prog.body[r]);
		mc_set_check(&prog.body[w]);
	}
	prog.body[r].result = n0;
	ret = mc_run_loop(ctx, prog.body, 2, &loop, &it);
	t_rec(o, "ret", ret);
	t_rec(o, "iterations", (long long)it);
	t_rec_calls(o, "body", prog.body, 2);
	t_rec_fd_offset(o, "in.offset", in);
	t_rec_file(o, "out", t_path(dir, "out"));
	t_rec_mem(o, "buf", buf, sizeof(buf));
	close(in);
	close(out);
}

struct st_case {
	int ready;    /* data waits in the pipe */
	int bad_nfds; /* select fails (EINVAL): the time is not read */
	int tv;       /* 0 NULL, 1 valid, 2 a bad address (EFAULT) */
};

static void select_time(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	const struct st_case *k = arg;
	struct timeval timeout = { 0, 0 }, now = { 0, 0 }, t0, t1;
	fd_set rd;
	long res[2] = { 7, 7 };
	int p[2], ret;

	(void)dir;
	if (pipe(p))
		t_fail("pipe: %s", strerror(errno));
	if (k->ready && write(p[1], "x", 1) != 1)
		t_fail("write: %s", strerror(errno));
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	gettimeofday(&t0, NULL);
	ret = mc_select_time(ctx, k->bad_nfds ? -1 : p[0] + 1, &rd, NULL, NULL, &timeout,
			     k->tv == 0 ? NULL : k->tv == 1 ? &now : (struct timeval *)8, res);
	gettimeofday(&t1, NULL);
	t_rec(o, "ret", ret);
	t_rec(o, "select", res[0]);
	t_rec(o, "gettimeofday", res[1]);
	t_rec(o, "readable", FD_ISSET(p[0], &rd));
	if (k->tv == 1 && res[1] == 0)
		t_rec(o, "now in [before, after]",
		      timercmp(&t0, &now, <=) && timercmp(&now, &t1, <=) && now.tv_usec < 1000000);
	close(p[0]);
	close(p[1]);
}

/* select then a checked gettimeofday into a bad address, through mc_run:
 * the specialized pair stops at the failing checked call as direct does. */
static void select_time_checked(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	struct timeval timeout = { 0, 0 };
	struct mc_call c[2];
	fd_set rd;
	int p[2];

	(void)dir, (void)arg;
	if (pipe(p) || write(p[1], "x", 1) != 1)
		t_fail("pipe: %s", strerror(errno));
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	mc_prep_select(&c[0], p[0] + 1, &rd, NULL, NULL, &timeout);
	mc_set_check(&c[0]);
	mc_prep_gettimeofday(&c[1], (struct timeval *)8);
	mc_set_check(&c[1]);
	t_rec(o, "ret", mc_run(ctx, c, 2));
	t_rec_calls(o, "c", c, 2);
	close(p[0]);
	close(p[1]);
}

/* A program of another shape: the generic interpreter. */
static void other(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg)
{
	struct mc_call c[3];
	int fd = t_open_null(dir);

	(void)arg;
	mc_prep_write(&c[0], fd, "ab", 2);
	mc_prep_write(&c[1], fd, "c", 1);
	mc_prep_syscall(&c[2], SYS_getpid, 0, 0, 0, 0, 0, 0);
	t_rec(o, "ret", mc_run(ctx, c, 3));
	t_rec_calls(o, "c", c, 3);
	close(fd);
}

int main(void)
{
	static const struct copy_case copies[] = {
		{ 0, 4096, 65536 + 100, 1000, 1, 0 }, { 1, 4096, 65536 + 100, 1000, 1, 0 },
		{ 0, 4096, 40000, 3, 0, 0 },          { 0, 3000, 40000, 1000, 1, 0 },
		{ 1, 512, 5000, 1000, 0, 0 },         { 0, 4096, 0, 1000, 1, 1 },
	};
	static const struct st_case sts[] = { { 1, 0, 1 }, { 0, 0, 1 }, { 1, 0, 0 }, { 0, 1, 1 }, { 1, 0, 2 } };
	char what[128];

	if (!t_ctx(MC_BACKEND_KMOD))
		return t_finish();
	for (unsigned i = 0; i < sizeof(copies) / sizeof(copies[0]); i++) {
		const struct copy_case *k = &copies[i];

		snprintf(what, sizeof(what), "copy rot=%d bs=%ld size=%ld max=%lu chk=%d overlap=%d", k->rotated,
			 k->bs, k->size, k->max, k->chk, k->overlap);
		t_compare(what, copy, (void *)k);
		expect_path(what, copy, (void *)k, k->overlap ? GENERIC : k->bs == 4096 ? COPY_BLOCK : COPY);
	}
	/* A bad tv is only for direct and kmod: elsewhere the vDSO would fault. */
	for (unsigned i = 0; i < sizeof(sts) / sizeof(sts[0]); i++) {
		const struct st_case *k = &sts[i];
		struct mc_ctx *d = t_ctx(MC_BACKEND_DIRECT), *m = t_ctx(MC_BACKEND_KMOD);
		struct t_outcome *od = calloc(1, sizeof(*od)), *om = calloc(1, sizeof(*om));

		snprintf(what, sizeof(what), "select_time ready=%d bad_nfds=%d tv=%d", k->ready, k->bad_nfds, k->tv);
		if (!d || !m || !od || !om) {
			t_fail("%s: no context", what);
			return t_finish();
		}
		select_time(d, "/tmp", od, (void *)k);
		select_time(m, "/tmp", om, (void *)k);
		T_ASSERT(od->nvalues == om->nvalues, "%s: %u values on direct, %u on kmod", what, od->nvalues,
			 om->nvalues);
		for (unsigned v = 0; v < od->nvalues && v < om->nvalues; v++)
			T_ASSERT(od->value[v] == om->value[v], "%s: %s: direct %lld, kmod %lld", what, od->label[v],
				 od->value[v], om->value[v]);
		expect_path(what, select_time, (void *)k, SELECT_TIME);
		mc_ctx_free(d);
		mc_ctx_free(m);
		free(od);
		free(om);
	}
	t_compare("select + checked gettimeofday(bad address)", select_time_checked, NULL);
	expect_path("select + checked gettimeofday(bad address)", select_time_checked, NULL, SELECT_TIME);
	t_compare("three calls", other, NULL);
	expect_path("three calls", other, NULL, GENERIC);
	return t_finish();
}
