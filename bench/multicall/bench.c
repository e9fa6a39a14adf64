/* SPDX-License-Identifier: MIT */
/*
 * mc-bench: the seeds' experiments on this machine, with libmulticall and
 * the tools a user would pick instead, each ratio measured side by side in
 * one run (variants interleaved in rounds, medians of the rounds).
 *
 *   mc-bench [--quick] [--json FILE] [--dir DIR] [--cp PATH]
 *
 * Prints the markdown section of docs/BENCHMARKS.md on stdout.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <multicall.h>

#include "../../libmulticall/tools/mc-tools.h"

extern char **environ;

static int quick;
static const char *dir = "/tmp";
static const char *cp_path = "/bin/cp";
static FILE *json;
static int json_first = 1;

/* The figure of a variant is its fastest round: the machine is shared,
 * and the fastest round is the one others disturbed least.  Its noise is
 * how far the lower quartile lies above it. */
static double fastest(double *v, unsigned n)
{
	double m = v[0];

	for (unsigned i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

static double spread(double *v, unsigned n)
{
	double t[64];

	memcpy(t, v, n * sizeof(*v));
	qsort(t, n, sizeof(*t), cmpd);
	return (t[n / 4] - t[0]) / t[0];
}

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mc-bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static struct mc_ctx *ctx_of(unsigned backend)
{
	struct mc_ctx *c;
	int r = mc_ctx_init(&c, backend);

	if (r < 0)
		die("%s context: %s", mc_backend_name(backend), strerror(-r));
	return c;
}

/* ---- the measuring frame ----
 * A case has variants; each round runs every variant (rotating the order)
 * reps times; a variant's figure is the median over rounds of the time per
 * operation. */
#define MAXV 8
struct variant {
	const char *name;
	void (*run)(void *st);     /* one operation */
	void (*reset)(void *st);   /* untimed, before each operation (may be NULL) */
	void *st;
	double ns[64];
	double med, spread;
};

static void measure(struct variant *v, unsigned nv, unsigned rounds, double target_ns)
{
	unsigned reps[MAXV];

	for (unsigned i = 0; i < nv; i++) {
		double t0, t;

		if (v[i].reset)
			v[i].reset(v[i].st);
		t0 = now_ns();
		v[i].run(v[i].st);
		t = now_ns() - t0;
		reps[i] = (unsigned)fmax(1, fmin(100000, target_ns / fmax(t, 1)));
	}
	for (unsigned r = 0; r < rounds; r++)
		for (unsigned k = 0; k < nv; k++) {
			struct variant *x = &v[(k + r) % nv];
			unsigned n = reps[(k + r) % nv];
			double sum = 0;

			for (unsigned j = 0; j < n; j++) {
				double t0;

				if (x->reset)
					x->reset(x->st);
				t0 = now_ns();
				x->run(x->st);
				sum += now_ns() - t0;
			}
			x->ns[r] = sum / n;
		}
	for (unsigned i = 0; i < nv; i++) {
		v[i].med = fastest(v[i].ns, rounds);
		v[i].spread = spread(v[i].ns, rounds);
	}
}

static void json_case(const char *name, struct variant *v, unsigned nv)
{
	if (!json)
		return;
	fprintf(json, "%s\n    {\"case\": \"%s\", \"variants\": {", json_first ? "" : ",", name);
	for (unsigned i = 0; i < nv; i++)
		fprintf(json, "%s\"%s\": {\"ns\": %.1f, \"spread\": %.3f}", i ? ", " : "", v[i].name,
			v[i].med, v[i].spread);
	fprintf(json, "}}");
	json_first = 0;
}

/* ---- auto against direct, collected over the cases ---- */
struct avd {
	char name[96];
	double autons, directns, noise;
};
static struct avd avds[64];
static unsigned navd;

static void note_avd(const char *name, const struct variant *a, const struct variant *d)
{
	struct avd *x = &avds[navd++];

	snprintf(x->name, sizeof(x->name), "%s", name);
	x->autons = a->med;
	x->directns = d->med;
	x->noise = fmax(a->spread, d->spread);
}

/* ================= table 1: a crossing against a function call ============ */
static __attribute__((noinline)) long fcall(long x)
{
	__asm__ volatile("" : : : "memory");
	return x + 1;
}

static void table1(void)
{
	unsigned rounds = quick ? 5 : 21, n = quick ? 100000 : 1000000;
	double ns[2][64], cyc[2][64];
	volatile long acc = 0;

	for (unsigned r = 0; r < rounds; r++)
		for (int w = 0; w < 2; w++) {
			unsigned aux;
			double t0 = now_ns();
			unsigned long long c0 = __rdtscp(&aux);

			for (unsigned i = 0; i < n; i++) {
				if (w == 0)
					acc += syscall(SYS_getppid);
				else
					acc += fcall((long)i);
			}
			cyc[w][r] = (double)(__rdtscp(&aux) - c0) / n;
			ns[w][r] = (now_ns() - t0) / n;
		}
	(void)acc;
	printf("### Seed 000 table 1: a crossing against a function call\n\n");
	printf("| | ns per call | TSC cycles per call |\n|---|---:|---:|\n");
	printf("| system call (`getppid`, entry + exit) | %.1f | %.0f |\n", fastest(ns[0], rounds),
	       fastest(cyc[0], rounds));
	printf("| function call (not inlined) | %.1f | %.1f |\n", fastest(ns[1], rounds),
	       fastest(cyc[1], rounds));
	printf("| ratio | %.0f× | %.0f× |\n\n", fastest(ns[0], rounds) / fastest(ns[1], rounds),
	       fastest(cyc[0], rounds) / fastest(cyc[1], rounds));
	printf("The seed measured 140 + 189 cycles for a crossing against 3 + 4 for a call\n"
	       "(about 47×) on a Pentium II; entry and exit cannot be told apart without a\n"
	       "kernel change, so this is the round trip.\n\n");
	if (json) {
		fprintf(json, "%s\n    {\"case\": \"table1\", \"syscall_ns\": %.1f, \"call_ns\": %.2f}",
			json_first ? "" : ",", fastest(ns[0], rounds), fastest(ns[1], rounds));
		json_first = 0;
	}
}

/* ================= copy: table 3 and figure 8 ============================= */
struct copyst {
	char in[512], out[512];
	size_t bs;
	char *buf;
	struct mc_ctx *ctx;
	int in_fd, out_fd;
};

/* Untimed: close the last copy's files, and open the input and a new
 * output file.  (Truncating and rewriting one file would make ext4 start
 * writeback at close, auto_da_alloc, which is disk time, not copying.)
 * The timed part is the copy itself, as the seed's figures are. */
static void copy_reset(void *p)
{
	struct copyst *s = p;

	if (s->in_fd > 0) {
		close(s->in_fd);
		close(s->out_fd);
	}
	unlink(s->out);
	s->in_fd = open(s->in, O_RDONLY);
	s->out_fd = open(s->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (s->in_fd < 0 || s->out_fd < 0)
		die("open: %s", strerror(errno));
}

static void copy_open(struct copyst *s)
{
	(void)s;
}

static void copy_close(struct copyst *s)
{
	(void)s;
}

static void copy_done(struct copyst *s)
{
	if (s->in_fd > 0) {
		close(s->in_fd);
		close(s->out_fd);
	}
	s->in_fd = s->out_fd = 0;
	unlink(s->out);
}

static void copy_rw(void *p)
{
	struct copyst *s = p;
	ssize_t n;

	copy_open(s);
	while ((n = read(s->in_fd, s->buf, s->bs)) > 0)
		if (write(s->out_fd, s->buf, (size_t)n) != n)
			die("write");
	copy_close(s);
}

/* fig. 3: the rotated loop, each write-read pair one mc_run */
static void copy_mc(void *p)
{
	struct copyst *s = p;
	struct mc_call c[2];
	long n;

	copy_open(s);
	n = read(s->in_fd, s->buf, s->bs);
	while (n > 0) {
		mc_prep_write(&c[0], s->out_fd, s->buf, (size_t)n);
		mc_set_check(&c[0]);
		mc_prep_read(&c[1], s->in_fd, s->buf, s->bs);
		mc_set_check(&c[1]);
		if (mc_run(s->ctx, c, 2) != 2)
			die("mc_run copy");
		n = c[1].result;
	}
	copy_close(s);
}

/* §3.4: the whole loop as one looped multi-call */
static void copy_loop(void *p)
{
	struct copyst *s = p;
	struct mc_call body[2];
	struct mc_loop loop = { 0, MC_WHILE_GT, 0, 1UL << 40 };
	unsigned long it;

	copy_open(s);
	mc_prep_read(&body[0], s->in_fd, s->buf, s->bs);
	mc_set_check(&body[0]);
	mc_prep_write(&body[1], s->out_fd, s->buf, 0);
	mc_set_ref(&body[1], 2, 0);
	mc_set_check(&body[1]);
	if (mc_run_loop(s->ctx, body, 2, &loop, &it) != 2)
		die("mc_run_loop copy");
	copy_close(s);
}

static void copy_cfr(void *p)
{
	struct copyst *s = p;
	ssize_t r;

	copy_open(s);
	while ((r = copy_file_range(s->in_fd, NULL, s->out_fd, NULL, 1 << 30, 0)) > 0)
		;
	if (r < 0)
		die("copy_file_range: %s", strerror(errno));
	copy_close(s);
}

static void spawn_wait(char *const argv[])
{
	pid_t pid;
	int st;

	if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0)
		die("spawn %s", argv[0]);
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("%s failed", argv[0]);
}

static void cp_reset(void *p)
{
	struct copyst *s = p;

	unlink(s->out);
}

static void copy_cp(void *p)
{
	struct copyst *s = p;
	char *argv[] = { (char *)cp_path, s->in, s->out, NULL };

	spawn_wait(argv);
}

static void spawn_true(void *p)
{
	char *argv[] = { (char *)"/bin/true", NULL };

	(void)p;
	spawn_wait(argv);
}

static void write_file(const char *path, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char b[65536];
	size_t done = 0;

	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (char)(i * 7 + 1);
	while (done < size) {
		size_t n = size - done < sizeof(b) ? size - done : sizeof(b);

		if (write(fd, b, n) != (ssize_t)n)
			die("write %s", path);
		done += n;
	}
	close(fd);
}

static double copy_loop_512_vs_rw, copy_loop_512_vs_cfr;
static int copy_target_sizes;

static void copy_tables(void)
{
	static const size_t sizes[] = { 81920, 947200, 2390753, 64ul << 20 };
	static const char *const size_names[] = { "80 KiB", "925 KiB", "2.28 MiB", "64 MiB" };
	static const size_t bss[] = { 512, 1024, 2048, 4096, 8192, 16384 };
	unsigned nsizes = quick ? 3 : 4;
	struct mc_ctx *autoc = ctx_of(MC_BACKEND_AUTO), *directc = ctx_of(MC_BACKEND_DIRECT);
	char *buf = aligned_alloc(4096, 16384);
	double spawn_ns;

	{
		struct variant t = { "spawn", spawn_true, NULL, NULL, { 0 }, 0, 0 };

		measure(&t, 1, quick ? 3 : 9, 5e6);
		spawn_ns = t.med;
	}
	printf("### Seed 000 table 3 and figure 8: copying a file\n\n");
	printf("Time per copy of a file in the page cache to a new, empty file on the same\n"
	       "filesystem (%s), both already open (as the seed timed the copy itself).\n"
	       "*read/write*: the loop of fig. 5; *multi-call*: the\n"
	       "rotated loop with each write-read pair one `mc_run` (fig. 3), auto backend;\n"
	       "*looped*: the whole loop one `mc_run_loop` (§3.4), auto backend, which runs it\n"
	       "as `copy_file_range`; *copy_file_range*: the call a user would write; *cp*:\n"
	       "coreutils `cp` as a process, so with its opens, closes and %.0f µs to spawn a\n"
	       "process (measured alongside with `/bin/true`).  Ratios are against read/write.\n\n",
	       dir, spawn_ns / 1000);
	printf("| file | block | read/write µs | multi-call | looped | copy_file_range | cp | looped vs read/write | looped vs copy_file_range |\n");
	printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (unsigned si = 0; si < nsizes; si++) {
		struct copyst st[6];
		char in[512];

		snprintf(in, sizeof(in), "%s/mc-bench-in.%d", dir, (int)getpid());
		write_file(in, sizes[si]);
		for (unsigned b = 0; b < 6; b++) {
			struct variant v[6];
			char name[96];

			for (unsigned k = 0; k < 6; k++) {
				snprintf(st[k].in, sizeof(st[k].in), "%s", in);
				snprintf(st[k].out, sizeof(st[k].out), "%s/mc-bench-out%u.%d", dir, k,
					 (int)getpid());
				st[k].bs = bss[b];
				st[k].buf = buf;
				st[k].ctx = autoc;
				st[k].in_fd = st[k].out_fd = 0;
			}
			st[5].ctx = directc;
			v[0] = (struct variant){ "read/write", copy_rw, copy_reset, &st[0], { 0 }, 0, 0 };
			v[1] = (struct variant){ "multi-call", copy_mc, copy_reset, &st[1], { 0 }, 0, 0 };
			v[2] = (struct variant){ "looped", copy_loop, copy_reset, &st[2], { 0 }, 0, 0 };
			v[3] = (struct variant){ "copy_file_range", copy_cfr, copy_reset, &st[3], { 0 }, 0, 0 };
			v[4] = (struct variant){ "cp", copy_cp, cp_reset, &st[4], { 0 }, 0, 0 };
			v[5] = (struct variant){ "multi-call direct", copy_mc, copy_reset, &st[5], { 0 }, 0, 0 };
			measure(v, 6, quick ? 3 : (sizes[si] > (8u << 20) ? 9 : 21),
				sizes[si] > (8u << 20) ? 1 : 1e7);
			printf("| %s | %zu | %.0f | %.0f (%.2f×) | %.0f (%.1f×) | %.0f (%.1f×) | %.0f | %.2f× faster | %+.0f %% |\n",
			       size_names[si], bss[b], v[0].med / 1000, v[1].med / 1000, v[0].med / v[1].med,
			       v[2].med / 1000, v[0].med / v[2].med, v[3].med / 1000, v[0].med / v[3].med,
			       v[4].med / 1000, v[0].med / v[2].med, (v[2].med / v[3].med - 1) * 100);
			snprintf(name, sizeof(name), "copy %s bs %zu", size_names[si], bss[b]);
			json_case(name, v, 6);
			snprintf(name, sizeof(name), "copy %s bs=%zu, multi-call per pair", size_names[si], bss[b]);
			note_avd(name, &v[1], &v[5]);
			if (bss[b] == 512) {
				double a = v[0].med / v[2].med, c = v[2].med / v[3].med - 1;

				if (!copy_target_sizes || a < copy_loop_512_vs_rw)
					copy_loop_512_vs_rw = a;
				if (!copy_target_sizes || c > copy_loop_512_vs_cfr)
					copy_loop_512_vs_cfr = c;
				copy_target_sizes++;
			}
			for (unsigned k = 0; k < 6; k++)
				copy_done(&st[k]);
		}
		unlink(in);
	}
	printf("\n");
	mc_ctx_free(autoc);
	mc_ctx_free(directc);
	free(buf);
}

/* ================= sixteen small writes =================================== */
struct wst {
	int fd[16];
	int nfd;          /* 1: all to fd[0]; 16: one each */
	struct mc_ctx *ctx;
	struct mc_call c[16];
	struct iovec iov[16];
	unsigned count;
};

static const char eight[16][8] = { "00000000", "11111111", "22222222", "33333333", "44444444",
				   "55555555", "66666666", "77777777", "88888888", "99999999",
				   "aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd", "eeeeeeee",
				   "ffffffff" };

static void w_reset(void *p)
{
	struct wst *s = p;

	/* keep files small: rewind now and then, outside the timing */
	if (++s->count % 4096 == 0)
		for (int i = 0; i < s->nfd; i++)
			lseek(s->fd[i], 0, SEEK_SET);
}

static void w_plain(void *p)
{
	struct wst *s = p;

	for (int i = 0; i < 16; i++)
		if (write(s->fd[s->nfd == 1 ? 0 : i], eight[i], 8) != 8)
			die("write");
}

static void w_writev(void *p)
{
	struct wst *s = p;

	if (writev(s->fd[0], s->iov, 16) != 128)
		die("writev");
}

static void w_mc(void *p)
{
	struct wst *s = p;

	for (int i = 0; i < 16; i++)
		mc_prep_write(&s->c[i], s->fd[s->nfd == 1 ? 0 : i], eight[i], 8);
	if (mc_run(s->ctx, s->c, 16) != 16)
		die("mc_run writes");
}

static double w16_ratio_file, w16_ratio_file_reg, w16_ratio_null, w16_ratio_null_reg;

static void small_writes(void)
{
	printf("### Sixteen 8-byte writes (seed 001's small writes)\n\n");
	printf("ns per group of sixteen `write(fd, buf, 8)`; *auto* classifies the descriptor in\n"
	       "each `mc_run` (1–2 `fstat`-like calls), *auto, registered* has it registered\n"
	       "with `mc_fd_register`; ratios against the sixteen plain writes.\n\n");
	printf("| target | 16 × write | writev by hand | auto | auto, registered | direct backend | uring backend |\n");
	printf("|---|---:|---:|---:|---:|---:|---:|\n");
	for (int t = 0; t < 3; t++) {
		struct wst st[7];
		struct variant v[7];
		const char *tname = t == 0 ? "one ext4 file" : t == 1 ? "/dev/null" : "16 ext4 files";
		char path[512], name[96];

		memset(st, 0, sizeof(st));
		for (int k = 0; k < 7; k++) {
			st[k].nfd = t == 2 ? 16 : 1;
			for (int i = 0; i < st[k].nfd; i++) {
				if (t == 1) {
					st[k].fd[i] = open_null(dir);
					if (st[k].fd[i] < 0)
						die("no null device: /dev/null is not one, and mknod failed");
				} else {
					snprintf(path, sizeof(path), "%s/mc-bench-w%d-%d.%d", dir, k, i, (int)getpid());
					st[k].fd[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
					unlink(path);
				}
			}
			for (int i = 0; i < 16; i++) {
				st[k].iov[i].iov_base = (void *)eight[i];
				st[k].iov[i].iov_len = 8;
			}
		}
		st[2].ctx = ctx_of(MC_BACKEND_AUTO);
		st[3].ctx = ctx_of(MC_BACKEND_AUTO);
		for (int i = 0; i < st[3].nfd; i++)
			mc_fd_register(st[3].ctx, st[3].fd[i]);
		st[4].ctx = ctx_of(MC_BACKEND_DIRECT);
		st[5].ctx = ctx_of(MC_BACKEND_URING);
		v[0] = (struct variant){ "16 x write", w_plain, w_reset, &st[0], { 0 }, 0, 0 };
		v[1] = (struct variant){ "writev", w_writev, w_reset, &st[1], { 0 }, 0, 0 };
		v[2] = (struct variant){ "auto", w_mc, w_reset, &st[2], { 0 }, 0, 0 };
		v[3] = (struct variant){ "auto registered", w_mc, w_reset, &st[3], { 0 }, 0, 0 };
		v[4] = (struct variant){ "direct", w_mc, w_reset, &st[4], { 0 }, 0, 0 };
		v[5] = (struct variant){ "uring", w_mc, w_reset, &st[5], { 0 }, 0, 0 };
		/* one writev cannot write to sixteen descriptors */
		measure(v, 6, quick ? 5 : 41, 4e6);
		{
			char cell[64] = "—";

			if (t != 2)
				snprintf(cell, sizeof(cell), "%.0f (%.1f×)", v[1].med, v[0].med / v[1].med);
			printf("| %s | %.0f | %s | %.0f (%.1f×) | %.0f (%.1f×) | %.0f (%.2f×) | %.0f (%.2f×) |\n",
			       tname, v[0].med, cell, v[2].med, v[0].med / v[2].med, v[3].med,
			       v[0].med / v[3].med, v[4].med, v[0].med / v[4].med, v[5].med,
			       v[0].med / v[5].med);
		}
		snprintf(name, sizeof(name), "16 writes to %s", tname);
		json_case(name, v, 6);
		note_avd(name, &v[2], &v[4]);
		if (t == 0) {
			w16_ratio_file = v[0].med / v[2].med;
			w16_ratio_file_reg = v[0].med / v[3].med;
		} else if (t == 1) {
			w16_ratio_null = v[0].med / v[2].med;
			w16_ratio_null_reg = v[0].med / v[3].med;
		}
		for (int k = 0; k < 7; k++) {
			for (int i = 0; i < st[k].nfd; i++)
				close(st[k].fd[i]);
			if (st[k].ctx)
				mc_ctx_free(st[k].ctx);
		}
	}
	printf("\n");
}

/* ================= select + gettimeofday (mpeg_play) ====================== */
struct sst {
	int p[2];
	struct mc_ctx *ctx;
};

static void s_plain_sys(void *p)
{
	struct sst *s = p;
	struct timeval tv = { 0, 0 }, now;
	fd_set r;

	FD_ZERO(&r);
	FD_SET(s->p[0], &r);
	if (select(s->p[0] + 1, &r, NULL, NULL, &tv) != 1)
		die("select");
	syscall(SYS_gettimeofday, &now, NULL);
}

static void s_plain_vdso(void *p)
{
	struct sst *s = p;
	struct timeval tv = { 0, 0 }, now;
	fd_set r;

	FD_ZERO(&r);
	FD_SET(s->p[0], &r);
	if (select(s->p[0] + 1, &r, NULL, NULL, &tv) != 1)
		die("select");
	gettimeofday(&now, NULL);
}

static void s_mc(void *p)
{
	struct sst *s = p;
	struct timeval tv = { 0, 0 }, now;
	struct mc_call c[2];
	fd_set r;

	FD_ZERO(&r);
	FD_SET(s->p[0], &r);
	mc_prep_select(&c[0], s->p[0] + 1, &r, NULL, NULL, &tv);
	mc_set_check(&c[0]);
	mc_prep_gettimeofday(&c[1], &now);
	if (mc_run(s->ctx, c, 2) != 2)
		die("mc_run select");
}

static void s_special(void *p)
{
	struct sst *s = p;
	struct timeval tv = { 0, 0 }, now;
	long res[2];
	fd_set r;

	FD_ZERO(&r);
	FD_SET(s->p[0], &r);
	if (mc_select_time(s->ctx, s->p[0] + 1, &r, NULL, NULL, &tv, &now, res) != 2)
		die("mc_select_time");
}

static void select_time(void)
{
	struct sst st[5];
	struct variant v[5];

	memset(st, 0, sizeof(st));
	for (int k = 0; k < 5; k++)
		if (pipe(st[k].p) < 0 || write(st[k].p[1], "x", 1) != 1)
			die("pipe");
	st[2].ctx = ctx_of(MC_BACKEND_DIRECT);
	st[3].ctx = ctx_of(MC_BACKEND_AUTO);
	st[4].ctx = ctx_of(MC_BACKEND_AUTO);
	v[0] = (struct variant){ "select+gettimeofday syscall", s_plain_sys, NULL, &st[0], { 0 }, 0, 0 };
	v[1] = (struct variant){ "select+gettimeofday vDSO", s_plain_vdso, NULL, &st[1], { 0 }, 0, 0 };
	v[2] = (struct variant){ "mc_run direct", s_mc, NULL, &st[2], { 0 }, 0, 0 };
	v[3] = (struct variant){ "mc_run auto", s_mc, NULL, &st[3], { 0 }, 0, 0 };
	v[4] = (struct variant){ "mc_select_time auto", s_special, NULL, &st[4], { 0 }, 0, 0 };
	measure(v, 5, quick ? 5 : 41, 4e6);
	printf("### select + gettimeofday (mpeg_play's cluster)\n\n");
	printf("ns per `select` (zero timeout, one ready pipe) followed by the time of day.\n\n");
	printf("| select + `gettimeofday` syscall (2002's libc) | select + vDSO (today's libc) | `mc_run` [select, gettimeofday], direct | same, auto | `mc_select_time`, auto |\n");
	printf("|---:|---:|---:|---:|---:|\n");
	printf("| %.0f | %.0f (%.2f×) | %.0f (%.2f×) | %.0f (%.2f×) | %.0f (%.2f×) |\n\n", v[0].med,
	       v[1].med, v[0].med / v[1].med, v[2].med, v[0].med / v[2].med, v[3].med,
	       v[0].med / v[3].med, v[4].med, v[0].med / v[4].med);
	printf("No existing system call does select and gettimeofday together: the generic\n"
	       "multi-call keeps two crossings on a stock kernel, and the specialized call wins\n"
	       "what the vDSO wins (the seed's `select_time` saved the second crossing in the\n"
	       "kernel; the module will).\n\n");
	json_case("select+gettimeofday", v, 5);
	note_avd("select+gettimeofday, generic mc_run", &v[3], &v[2]);
	for (int k = 0; k < 5; k++) {
		close(st[k].p[0]);
		close(st[k].p[1]);
		if (k >= 2)
			mc_ctx_free(st[k].ctx);
	}
}

/* ================= read + sendto (the web server) ========================= */
struct rst {
	int in, tx, rx;
	struct sockaddr_in to;
	char buf[1024];
	struct mc_ctx *ctx;
};

static void r_reset(void *p)
{
	struct rst *s = p;
	char b[2048];

	lseek(s->in, 0, SEEK_SET);
	while (recv(s->rx, b, sizeof(b), MSG_DONTWAIT) > 0)
		;
}

static void r_plain(void *p)
{
	struct rst *s = p;
	ssize_t n;

	while ((n = read(s->in, s->buf, sizeof(s->buf))) > 0)
		if (sendto(s->tx, s->buf, (size_t)n, 0, (struct sockaddr *)&s->to, sizeof(s->to)) != n)
			die("sendto: %s", strerror(errno));
}

static void r_mc_pairs(void *p)
{
	struct rst *s = p;
	struct mc_call c[2];

	for (;;) {
		mc_prep_read(&c[0], s->in, s->buf, sizeof(s->buf));
		mc_set_check(&c[0]);
		mc_prep_sendto(&c[1], s->tx, s->buf, 0, 0, (struct sockaddr *)&s->to, sizeof(s->to));
		mc_set_ref(&c[1], 2, 0);
		mc_set_check(&c[1]);
		if (mc_run(s->ctx, c, 2) != 2)
			die("mc_run read/sendto");
		if (c[0].result == 0)
			break;
	}
}

static void r_loop(void *p)
{
	struct rst *s = p;
	long res[2];
	unsigned long it;

	if (mc_read_sendto(s->ctx, s->in, s->buf, sizeof(s->buf), s->tx, 0, (struct sockaddr *)&s->to,
			   sizeof(s->to), 1UL << 40, res, &it) != 2)
		die("mc_read_sendto: %ld %ld", res[0], res[1]);
}

static void read_sendto(void)
{
	struct rst st[5];
	struct variant v[5];
	char path[512];
	int big = 64 << 20;

	snprintf(path, sizeof(path), "%s/mc-bench-server.%d", dir, (int)getpid());
	write_file(path, 1 << 20);
	memset(st, 0, sizeof(st));
	for (int k = 0; k < 5; k++) {
		socklen_t l = sizeof(st[k].to);

		st[k].in = open(path, O_RDONLY);
		st[k].tx = socket(AF_INET, SOCK_DGRAM, 0);
		st[k].rx = socket(AF_INET, SOCK_DGRAM, 0);
		if (setsockopt(st[k].rx, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) < 0)
			setsockopt(st[k].rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
		memset(&st[k].to, 0, sizeof(st[k].to));
		st[k].to.sin_family = AF_INET;
		st[k].to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		bind(st[k].rx, (struct sockaddr *)&st[k].to, sizeof(st[k].to));
		getsockname(st[k].rx, (struct sockaddr *)&st[k].to, &l);
	}
	unlink(path);
	st[1].ctx = ctx_of(MC_BACKEND_AUTO);
	st[2].ctx = ctx_of(MC_BACKEND_DIRECT);
	st[3].ctx = ctx_of(MC_BACKEND_AUTO);
	st[4].ctx = ctx_of(MC_BACKEND_DIRECT);
	v[0] = (struct variant){ "read+sendto", r_plain, r_reset, &st[0], { 0 }, 0, 0 };
	v[1] = (struct variant){ "mc_run pairs auto", r_mc_pairs, r_reset, &st[1], { 0 }, 0, 0 };
	v[2] = (struct variant){ "mc_run pairs direct", r_mc_pairs, r_reset, &st[2], { 0 }, 0, 0 };
	v[3] = (struct variant){ "mc_read_sendto auto", r_loop, r_reset, &st[3], { 0 }, 0, 0 };
	v[4] = (struct variant){ "mc_read_sendto direct", r_loop, r_reset, &st[4], { 0 }, 0, 0 };
	measure(v, 5, quick ? 3 : 21, 2e7);
	printf("### read + sendto over loopback (the web server's cluster)\n\n");
	printf("µs to send a 1 MiB file as 1 KiB UDP datagrams to a socket of the same process.\n\n");
	printf("| read + sendto loop | `mc_run` per pair, auto | `mc_read_sendto`, direct | `mc_read_sendto`, auto (readv + sendmmsg) |\n");
	printf("|---:|---:|---:|---:|\n");
	printf("| %.0f | %.0f (%.2f×) | %.0f (%.2f×) | %.0f (%.2f×) |\n\n", v[0].med / 1000,
	       v[1].med / 1000, v[0].med / v[1].med, v[4].med / 1000, v[0].med / v[4].med,
	       v[3].med / 1000, v[0].med / v[3].med);
	printf("Each datagram costs the network stack far more than its crossing, so batching\n"
	       "the crossings saves a part of the time only.\n\n");
	json_case("read+sendto", v, 5);
	note_avd("read+sendto, mc_run per pair", &v[1], &v[2]);
	note_avd("read+sendto, looped", &v[3], &v[4]);
	for (int k = 0; k < 5; k++) {
		close(st[k].in);
		close(st[k].tx);
		close(st[k].rx);
		if (st[k].ctx)
			mc_ctx_free(st[k].ctx);
	}
}

/* ================= auto against direct: short and mixed runs ============== */
struct mst {
	int fd, fd2;
	struct mc_ctx *ctx;
	char buf[4096];
	unsigned count;
	int kind;
};

static void m_reset(void *p)
{
	struct mst *s = p;

	if (++s->count % 1024 == 0 || s->kind >= 2)
		lseek(s->fd, 0, SEEK_SET);
}

static void m_run(void *p)
{
	struct mst *s = p;
	struct mc_call c[8];
	unsigned n = 0;

	switch (s->kind) {
	case 0: /* one write */
		mc_prep_write(&c[n++], s->fd, s->buf, 8);
		break;
	case 1: /* two writes: too short to pay for classification */
		mc_prep_write(&c[n++], s->fd, s->buf, 8);
		mc_prep_write(&c[n++], s->fd, s->buf, 8);
		break;
	case 2: /* read then write elsewhere: nothing to fuse */
		mc_prep_read(&c[n++], s->fd, s->buf, 512);
		mc_prep_write(&c[n], s->fd2, s->buf, 0);
		mc_set_ref(&c[n++], 2, 0);
		break;
	default: /* four reads of one file */
		for (int i = 0; i < 4; i++)
			mc_prep_read(&c[n++], s->fd, s->buf + 512 * i, 512);
		break;
	}
	if (mc_run(s->ctx, c, n) != (int)n)
		die("mc_run short");
}

static void short_runs(void)
{
	static const char *const names[] = { "1 write", "2 writes to one file",
					     "read then write to another file", "4 reads of one file" };
	char path[512], path2[512];

	snprintf(path, sizeof(path), "%s/mc-bench-short.%d", dir, (int)getpid());
	snprintf(path2, sizeof(path2), "%s/mc-bench-short2.%d", dir, (int)getpid());
	write_file(path, 1 << 20);
	for (int kind = 0; kind < 4; kind++) {
		struct mst st[2];
		struct variant v[2];
		char name[96];

		for (int k = 0; k < 2; k++) {
			st[k].fd = open(path, O_RDWR);
			st[k].fd2 = open(path2, O_WRONLY | O_CREAT, 0644);
			st[k].ctx = ctx_of(k ? MC_BACKEND_DIRECT : MC_BACKEND_AUTO);
			st[k].kind = kind;
			st[k].count = 0;
			memset(st[k].buf, 'x', sizeof(st[k].buf));
		}
		v[0] = (struct variant){ "auto", m_run, m_reset, &st[0], { 0 }, 0, 0 };
		v[1] = (struct variant){ "direct", m_run, m_reset, &st[1], { 0 }, 0, 0 };
		measure(v, 2, quick ? 5 : 41, 3e6);
		snprintf(name, sizeof(name), "%s", names[kind]);
		json_case(name, v, 2);
		note_avd(name, &v[0], &v[1]);
		for (int k = 0; k < 2; k++) {
			close(st[k].fd);
			close(st[k].fd2);
			mc_ctx_free(st[k].ctx);
		}
	}
	unlink(path);
	unlink(path2);
}

static void auto_table(void)
{
	unsigned worse = 0;

	printf("### auto against the direct backend\n\n");
	printf("Each case run by the same code with an auto and a direct context, side by side.\n"
	       "*noise* is, for the noisier of the two, how far its lower-quartile round lies\n"
	       "above its fastest; a case counts as slower only beyond it (and beyond 3 %%).\n\n");
	printf("| case | direct ns | auto ns | auto / direct | noise | |\n|---|---:|---:|---:|---:|---|\n");
	for (unsigned i = 0; i < navd; i++) {
		double r = avds[i].autons / avds[i].directns;
		double lim = 1 + fmax(0.03, avds[i].noise);
		int bad = r > lim;

		worse += (unsigned)bad;
		printf("| %s | %.0f | %.0f | %.2f | %.1f %% | %s |\n", avds[i].name, avds[i].directns,
		       avds[i].autons, r, avds[i].noise * 100, bad ? "**slower**" : "");
	}
	printf("\n");
	if (json) {
		fprintf(json, "%s\n    {\"case\": \"auto-vs-direct\", \"slower\": %u}", json_first ? "" : ",",
			worse);
		json_first = 0;
	}
	printf("### Targets\n\n");
	printf("| target | measured | met |\n|---|---|---|\n");
	printf("| 16 × 8-byte writes to one fd ≥ 8× faster than 16 writes | ext4 file: %.1f× (auto), %.1f× (auto, registered); /dev/null: %.1f×, %.1f× | %s |\n",
	       w16_ratio_file, w16_ratio_file_reg, w16_ratio_null, w16_ratio_null_reg,
	       w16_ratio_file >= 8 ? "yes" : w16_ratio_file_reg >= 8 ? "registered only" : "no");
	printf("| looped copy at 512 B ≥ 8× faster than the read/write loop | %.1f× (the smallest over the file sizes) | %s |\n",
	       copy_loop_512_vs_rw, copy_loop_512_vs_rw >= 8 ? "yes" : "no");
	printf("| looped copy at 512 B within 10 %% of copy_file_range | %+.0f %% (the largest over the file sizes) | %s |\n",
	       copy_loop_512_vs_cfr * 100, copy_loop_512_vs_cfr <= 0.10 ? "yes" : "no");
	printf("| auto never slower than direct beyond noise | %u of %u cases slower | %s |\n\n", worse,
	       navd, worse ? "no" : "yes");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "quick", no_argument, NULL, 'q' }, { "json", required_argument, NULL, 'j' },
		{ "dir", required_argument, NULL, 'd' }, { "cp", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	const char *json_path = NULL;
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'q':
			quick = 1;
			break;
		case 'j':
			json_path = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'c':
			cp_path = optarg;
			break;
		default:
			fprintf(stderr, "usage: mc-bench [--quick] [--json FILE] [--dir DIR] [--cp PATH]\n");
			return 2;
		}
	}
	if (access(dir, W_OK) < 0)
		die("--dir %s: %s", dir, strerror(errno));
	if (json_path) {
		json = fopen(json_path, "w");
		if (!json)
			die("%s: %s", json_path, strerror(errno));
		fprintf(json, "{\n  \"format_version\": 1,\n  \"results\": [");
	}
	table1();
	fprintf(stderr, "mc-bench: table 1 done\n");
	small_writes();
	fprintf(stderr, "mc-bench: small writes done\n");
	copy_tables();
	fprintf(stderr, "mc-bench: copies done\n");
	select_time();
	read_sendto();
	short_runs();
	auto_table();
	if (json) {
		fprintf(json, "\n  ]\n}\n");
		fclose(json);
	}
	return 0;
}
