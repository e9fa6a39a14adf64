/* SPDX-License-Identifier: MIT */
/*
 * mc-calibrate: measures this machine for libmulticall's auto backend and
 * writes the calibration file the library reads once per process.
 *
 *   mc-calibrate [-o FILE | --stdout] [--dir DIR] [--quick]
 *                [--decisions=measured|eager|never] [--check FILE] [--machine]
 *
 * For every fusion rule and descriptor class it times runs of 2 to 64
 * calls through the library itself (direct, fusion with the descriptor
 * classified in the run, fusion with it registered, io_uring), side by
 * side in rounds, and keeps the medians; a rule is used from the smallest
 * run length at which it beats direct by more than the noise margin and
 * keeps beating it at every longer run measured.  See docs/MULTICALL.md
 * for the file format.
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "mc-tools.h"
#include "formats.h"

#define TOOL_VERSION "1.0.0"
#define MARGIN 0.93 /* a mechanism must be 7 % faster to be chosen */

static const unsigned batches[] = { 2, 3, 4, 6, 8, 12, 16, 24, 32, 64 };
#define NB (sizeof(batches) / sizeof(batches[0]))

enum { M_DIRECT, M_FUSION, M_FUSION_REG, M_URING, M_COUNT };
static const char *const mech_key[M_COUNT] = { "direct_ns", "fusion_ns", "fusion_registered_ns",
						"uring_ns" };

/* What follows first_context's number in the text (it is patched there). */
#define FIRST_END "},\n  \"batches\": ["

static int quick;
static const char *dir = NULL;
static char scratch[1 << 20];

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmpd);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mc-calibrate: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* ---- the kinds measured ---- */
struct world {
	int fd, peer;          /* the descriptor the calls use; where data goes/comes */
	struct sockaddr_in to;
	char path[512];
};

enum {
	K_WRITE_FILE, K_WRITE_NULL, K_WRITE_PIPE, K_WRITE_USTREAM, K_WRITE_STREAM,
	K_READ_FILE, K_READ_PIPE, K_PREAD_FILE, K_PWRITE_FILE, K_SEEKREAD_FILE,
	K_SENDTO_DGRAM, K_RECVFROM_DGRAM, K_STATX, K_COUNT
};

static const struct kind {
	const char *name;
	unsigned rule, cls, ukind;
	long len;
} kinds[K_COUNT] = {
	[K_WRITE_FILE] = { "write8.file", R_WRITEV, FDC_FILE, U_WRITE_FILE, 8 },
	[K_WRITE_NULL] = { "write8.null", R_WRITEV, FDC_NULL, U_COUNT, 8 },
	[K_WRITE_PIPE] = { "write8.pipe", R_WRITEV, FDC_PIPE, U_COUNT, 8 },
	[K_WRITE_USTREAM] = { "write8.ustream", R_WRITEV, FDC_USTREAM, U_COUNT, 8 },
	[K_WRITE_STREAM] = { "write8.stream", R_COUNT, FDC_STREAM, U_COUNT, 8 }, /* TCP: never fused */
	[K_READ_FILE] = { "read512.file", R_READV, FDC_FILE, U_READ_FILE, 512 },
	[K_READ_PIPE] = { "read64.pipe", R_COUNT, FDC_PIPE, U_COUNT, 64 }, /* never fused: direct only */
	[K_PREAD_FILE] = { "pread512.file", R_PREADV, FDC_FILE, U_COUNT, 512 },
	[K_PWRITE_FILE] = { "pwrite512.file", R_PWRITEV, FDC_FILE, U_COUNT, 512 },
	[K_SEEKREAD_FILE] = { "lseek+read512.file", R_SEEK_PREAD, FDC_FILE, U_COUNT, 512 },
	[K_SENDTO_DGRAM] = { "sendto64.dgram", R_SENDMMSG, FDC_DGRAM, U_COUNT, 64 },
	[K_RECVFROM_DGRAM] = { "recvfrom64.dgram", R_RECVMMSG, FDC_DGRAM, U_COUNT, 64 },
	[K_STATX] = { "statx.path", R_COUNT, 0, U_OTHER, 0 },
};

static void tcp_pair(int *a, int *b)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t l = sizeof(sa);
	int ls = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 1) < 0 ||
	    getsockname(ls, (struct sockaddr *)&sa, &l) < 0)
		die("tcp listen: %s", strerror(errno));
	*a = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(*a, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("tcp connect: %s", strerror(errno));
	*b = accept(ls, NULL, NULL);
	close(ls);
}

static void world_open(unsigned k, struct world *w)
{
	int p[2], big = 16 << 20;
	socklen_t l = sizeof(w->to);

	memset(w, 0, sizeof(*w));
	w->peer = -1;
	snprintf(w->path, sizeof(w->path), "%s/mc-calibrate.%d", dir, (int)getpid());
	switch (k) {
	case K_WRITE_FILE:
	case K_READ_FILE:
	case K_PREAD_FILE:
	case K_PWRITE_FILE:
	case K_SEEKREAD_FILE:
	case K_STATX:
		w->fd = open(w->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (w->fd < 0 || write(w->fd, scratch, sizeof(scratch)) != (ssize_t)sizeof(scratch))
			die("%s: %s", w->path, strerror(errno));
		lseek(w->fd, 0, SEEK_SET);
		break;
	case K_WRITE_NULL:
		w->fd = open_null(dir);
		break;
	case K_WRITE_PIPE:
	case K_READ_PIPE:
		if (pipe(p) < 0)
			die("pipe: %s", strerror(errno));
		fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
		w->fd = k == K_WRITE_PIPE ? p[1] : p[0];
		w->peer = k == K_WRITE_PIPE ? p[0] : p[1];
		break;
	case K_WRITE_USTREAM:
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, p) < 0)
			die("socketpair: %s", strerror(errno));
		setsockopt(p[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
		w->fd = p[0];
		w->peer = p[1];
		break;
	case K_WRITE_STREAM:
		tcp_pair(&w->fd, &w->peer);
		break;
	case K_SENDTO_DGRAM:
	case K_RECVFROM_DGRAM:
		w->fd = socket(AF_INET, SOCK_DGRAM, 0);
		w->peer = socket(AF_INET, SOCK_DGRAM, 0);
		w->to.sin_family = AF_INET;
		w->to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		setsockopt(w->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
		setsockopt(w->peer, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
		if (k == K_SENDTO_DGRAM) {
			bind(w->peer, (struct sockaddr *)&w->to, sizeof(w->to));
			getsockname(w->peer, (struct sockaddr *)&w->to, &l);
		} else {
			bind(w->fd, (struct sockaddr *)&w->to, sizeof(w->to));
			getsockname(w->fd, (struct sockaddr *)&w->to, &l);
		}
		break;
	}
	if (w->fd < 0)
		die("cannot set up %s: %s", kinds[k].name, strerror(errno));
}

static void world_close(struct world *w)
{
	close(w->fd);
	if (w->peer >= 0)
		close(w->peer);
	unlink(w->path);
}

/* Puts the world back between timed runs (untimed): drain what was
 * written, refill what was read, rewind files. */
static void world_reset(unsigned k, struct world *w, unsigned b)
{
	char tmp[65536];

	switch (k) {
	case K_WRITE_FILE:
	case K_READ_FILE:
		lseek(w->fd, 0, SEEK_SET);
		break;
	case K_WRITE_PIPE:
	case K_WRITE_USTREAM:
	case K_WRITE_STREAM:
		fcntl(w->peer, F_SETFL, O_NONBLOCK);
		while (read(w->peer, tmp, sizeof(tmp)) > 0)
			;
		break;
	case K_READ_PIPE:
		if (write(w->peer, scratch, (size_t)b * 64) < 0)
			die("refill");
		break;
	case K_SENDTO_DGRAM:
		fcntl(w->peer, F_SETFL, O_NONBLOCK);
		while (recv(w->peer, tmp, sizeof(tmp), 0) > 0)
			;
		break;
	case K_RECVFROM_DGRAM:
		for (unsigned i = 0; i < b; i++)
			sendto(w->peer, scratch, 64, 0, (struct sockaddr *)&w->to, sizeof(w->to));
		break;
	default:
		break;
	}
}

static void prep(unsigned k, struct world *w, struct mc_call *c, unsigned b)
{
	for (unsigned i = 0; i < b; i++) {
		switch (k) {
		case K_WRITE_FILE:
		case K_WRITE_NULL:
		case K_WRITE_PIPE:
		case K_WRITE_USTREAM:
		case K_WRITE_STREAM:
			mc_prep_write(&c[i], w->fd, scratch + 8 * i, 8);
			break;
		case K_READ_FILE:
			mc_prep_read(&c[i], w->fd, scratch + 512 * i, 512);
			break;
		case K_READ_PIPE:
			mc_prep_read(&c[i], w->fd, scratch + 64 * i, 64);
			break;
		case K_PREAD_FILE:
			mc_prep_pread(&c[i], w->fd, scratch + 512 * i, 512, 512 * (off_t)i);
			break;
		case K_PWRITE_FILE:
			mc_prep_pwrite(&c[i], w->fd, scratch + 512 * i, 512, 512 * (off_t)i);
			break;
		case K_SEEKREAD_FILE:
			if (i % 2 == 0)
				mc_prep_lseek(&c[i], w->fd, (off_t)((i * 7919) % 1000) * 512, SEEK_SET);
			else
				mc_prep_read(&c[i], w->fd, scratch + 512 * i, 512);
			break;
		case K_SENDTO_DGRAM:
			mc_prep_sendto(&c[i], w->fd, scratch, 64, 0, (struct sockaddr *)&w->to,
				       sizeof(w->to));
			break;
		case K_RECVFROM_DGRAM:
			mc_prep_recvfrom(&c[i], w->fd, scratch + 64 * i, 64, 0, NULL, NULL);
			break;
		case K_STATX:
			mc_prep_syscall(&c[i], SYS_statx, AT_FDCWD, (long)w->path, 0, STATX_SIZE,
					(long)(scratch + 512 * i), 0);
			break;
		}
	}
}

/* ns per call of runs of b calls of kind k with each mechanism, medians
 * of interleaved rounds; NAN where a mechanism is not available. */
static void measure(unsigned k, unsigned b, double out[M_COUNT])
{
	unsigned rounds = quick ? 3 : 9, reps = quick ? 30 : 200, m, r, i;
	struct mc_ctx *ctx[M_COUNT];
	double t[M_COUNT][16];
	struct mc_call c[64];
	struct world w;

	world_open(k, &w);
	ctx[M_DIRECT] = mc_ctx_new(MC_BACKEND_DIRECT);
	ctx[M_FUSION] = mc_ctx_new(MC_BACKEND_FUSION);
	ctx[M_FUSION_REG] = mc_ctx_new(MC_BACKEND_FUSION);
	ctx[M_URING] = kinds[k].ukind < U_COUNT ? mc_ctx_new(MC_BACKEND_URING) : NULL;
	if (ctx[M_FUSION_REG])
		mc_fd_register(ctx[M_FUSION_REG], w.fd);
	if (kinds[k].rule == R_COUNT) {
		mc_ctx_free(ctx[M_FUSION]);
		mc_ctx_free(ctx[M_FUSION_REG]);
		ctx[M_FUSION] = ctx[M_FUSION_REG] = NULL;
	}
	prep(k, &w, c, b);
	for (r = 0; r < rounds; r++) {
		for (m = 0; m < M_COUNT; m++) {
			double sum = 0;

			if (!ctx[m])
				continue;
			for (i = 0; i < reps; i++) {
				double t0;

				world_reset(k, &w, b);
				t0 = now_ns();
				mc_run(ctx[m], c, b);
				sum += now_ns() - t0;
			}
			t[m][r] = sum / reps / b;
		}
	}
	for (m = 0; m < M_COUNT; m++) {
		out[m] = ctx[m] ? median(t[m], rounds) : NAN;
		mc_ctx_free(ctx[m]);
	}
	world_close(&w);
}

/* One timed run of a loop reading blocks of `block` bytes from the start of
 * in and writing each to out (a file, emptied first), or with rx >= 0
 * sending each to `to` (rx, its receiver, drained first), for at most max
 * iterations; ns.  The iterations, with the last read's 0, land in *it
 * when it is not NULL. */
static double loop_once(struct mc_ctx *ctx, int in, int out, int rx, const struct sockaddr_in *to, unsigned block,
			unsigned long max, unsigned long *it)
{
	struct mc_call body[2];
	struct mc_loop loop = { 0, MC_WHILE_GT, 0, max };
	unsigned long n;
	double t0;
	char tmp[8192];

	lseek(in, 0, SEEK_SET);
	if (rx >= 0)
		while (recv(rx, tmp, sizeof(tmp), 0) > 0)
			;
	else if (ftruncate(out, 0) == 0)
		lseek(out, 0, SEEK_SET);
	mc_prep_read(&body[0], in, scratch + 65536, block);
	if (rx >= 0)
		mc_prep_sendto(&body[1], out, scratch + 65536, 0, 0, (const struct sockaddr *)to, sizeof(*to));
	else
		mc_prep_write(&body[1], out, scratch + 65536, 0);
	mc_set_ref(&body[1], 2, 0);
	t0 = now_ns();
	mc_run_loop(ctx, body, 2, &loop, it ? it : &n);
	return now_ns() - t0;
}

/* Copy loops (R_COPY) and read/sendto loops (R_BATCH_SEND): ns per
 * iteration for loops of b blocks, direct and fused. */
static void measure_loop(int send, unsigned b, double res[2])
{
	unsigned rounds = quick ? 3 : 9, reps = quick ? 10 : 40;
	struct mc_ctx *ctx[2] = { mc_ctx_new(MC_BACKEND_DIRECT), mc_ctx_new(MC_BACKEND_FUSION) };
	double t[2][16];
	char in_path[512], out_path[512];
	struct sockaddr_in to = { .sin_family = AF_INET };
	socklen_t l = sizeof(to);
	int in, out, rx = -1, big = 16 << 20;

	snprintf(in_path, sizeof(in_path), "%s/mc-calibrate-in.%d", dir, (int)getpid());
	snprintf(out_path, sizeof(out_path), "%s/mc-calibrate-out.%d", dir, (int)getpid());
	in = open(in_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (in < 0 || write(in, scratch, (size_t)b * 4096) != (ssize_t)b * 4096)
		die("%s: %s", in_path, strerror(errno));
	if (send) {
		out = socket(AF_INET, SOCK_DGRAM, 0);
		rx = socket(AF_INET, SOCK_DGRAM, 0);
		to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
		bind(rx, (struct sockaddr *)&to, sizeof(to));
		getsockname(rx, (struct sockaddr *)&to, &l);
		fcntl(rx, F_SETFL, O_NONBLOCK);
	} else {
		out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	}
	for (unsigned r = 0; r < rounds; r++)
		for (unsigned m = 0; m < 2; m++) {
			double sum = 0;

			for (unsigned i = 0; i < reps; i++)
				sum += loop_once(ctx[m], in, out, send ? rx : -1, &to, send ? 1024 : 4096, 1UL << 40, NULL);
			t[m][r] = sum / reps / b;
		}
	res[0] = median(t[0], rounds);
	res[1] = median(t[1], rounds);
	close(in);
	close(out);
	if (rx >= 0)
		close(rx);
	unlink(in_path);
	unlink(out_path);
	mc_ctx_free(ctx[0]);
	mc_ctx_free(ctx[1]);
}

/* The fused copy's saving per block at each block size (copy-block.file):
 * a copy of COPY_BYTES from a file to a new file on --dir, read+write of
 * one block per iteration (direct) against the looped multi-call (fused:
 * copy_file_range), ns per block.  The compiler plugin prices a copy loop
 * by its block size from these (docs/COMPILER.md): at 4 KiB the saving
 * is mostly crossings, above it the bytes the program no longer moves
 * twice.  Sizes and mechanisms interleaved in rounds; each figure is the
 * least disturbed run (the minimum), and every run is short enough (under
 * a millisecond here) for some to go undisturbed on a loaded machine:
 * read+write costs the same per block at any length, so it copies the
 * first DIRECT_BLOCKS blocks only.  (The median of whole 2 MiB copies,
 * 6 ms by read+write of 512 B blocks, was two to ten times their cost
 * under load, which the plugin would have taken for a saving.) */
static const unsigned block_sizes[] = { 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536 };
#define NBS (sizeof(block_sizes) / sizeof(block_sizes[0]))
#define COPY_BYTES (2u << 20)
#define DIRECT_BLOCKS 128UL

static void measure_copy_blocks(double res[NBS][2])
{
	unsigned rounds = quick ? 3 : 7, reps = quick ? 3 : 4;
	struct mc_ctx *ctx[2] = { mc_ctx_new(MC_BACKEND_DIRECT), mc_ctx_new(MC_BACKEND_FUSION) };
	char in_path[512], out_path[512];
	int in, out;

	snprintf(in_path, sizeof(in_path), "%s/mc-calibrate-in.%d", dir, (int)getpid());
	snprintf(out_path, sizeof(out_path), "%s/mc-calibrate-out.%d", dir, (int)getpid());
	in = open(in_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	for (unsigned done = 0; in >= 0 && done < COPY_BYTES; done += sizeof(scratch))
		if (write(in, scratch, sizeof(scratch)) != (ssize_t)sizeof(scratch))
			die("%s: %s", in_path, strerror(errno));
	out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (in < 0 || out < 0 || !ctx[0] || !ctx[1])
		die("%s: %s", in < 0 ? in_path : out_path, strerror(errno));
	for (unsigned r = 0; r < rounds; r++)
		for (unsigned s = 0; s < NBS; s++)
			for (unsigned m = 0; m < 2; m++)
				for (unsigned i = 0; i < reps; i++) {
					/* Iterations: the blocks and the read of the end, or DIRECT_BLOCKS. */
					unsigned long it = 0, all = COPY_BYTES / block_sizes[s];
					unsigned long max = m || all + 1 < DIRECT_BLOCKS ? all + 1 : DIRECT_BLOCKS;
					double ns = loop_once(ctx[m], in, out, -1, NULL, block_sizes[s], max, &it) /
						    (double)(max > all ? all : max);

					if (it != max) {
						unlink(in_path);
						unlink(out_path);
						die("copy-block.file: %u B blocks: %lu iterations, not %lu", block_sizes[s], it, max);
					}
					if ((r == 0 && i == 0) || ns < res[s][m])
						res[s][m] = ns;
				}
	close(in);
	close(out);
	unlink(in_path);
	unlink(out_path);
	mc_ctx_free(ctx[0]);
	mc_ctx_free(ctx[1]);
}

/* The fused copy's fixed cost beyond its saving per block
 * (costs_ns.fused_copy_fixed): what a priced copy pays per call besides its
 * first context -- the gate's fstat, lseek and fstat
 * (llvm/runtime/write_read_loop.c), the fusion probes (statx of both ends,
 * fstatfs), the engine's read taken back and the pread refilling the
 * buffer at the end.  A short copy of FIXED_BLOCKS blocks of FIXED_BLOCK
 * bytes between two files, as the plugin's replacement makes it (the
 * program's first read, then write/read looped from the write, the read's
 * result handed on), against the program's read/write loop of the same
 * blocks: fixed = fused - direct + blocks x the saving per block at that
 * size (copy-block.file).  Each copy is the first a child forked for it
 * makes, as in a program (the code and memory of the loop engine and the
 * probes paged in on the way: a warm context's copy paid 11 us of the
 * 17 us a fresh one pays on the 2-CPU VM); the fused child makes its
 * context first, untimed (first_fusion_context).  The least of the runs of
 * each, interleaved, as in copy-block.file.  Never below 0. */
#define FIXED_BLOCK 8192u
#define FIXED_BLOCKS 4u

static double fixed_copy_once(struct mc_ctx *ctx, int in, int out)
{
	struct mc_call body[2];
	const struct mc_loop loop = { 1, MC_WHILE_GT, 0, 1UL << 40 };
	char *buf = scratch + 65536;
	struct stat st;
	unsigned long it;
	double t0;
	long n;

	lseek(in, 0, SEEK_SET);
	if (ftruncate(out, 0) == 0)
		lseek(out, 0, SEEK_SET);
	t0 = now_ns();
	n = read(in, buf, FIXED_BLOCK);
	if (!ctx) {
		do {
			if (write(out, buf, (size_t)n) != n)
				break;
			n = read(in, buf, FIXED_BLOCK);
		} while (n > 0);
	} else if (fstat(in, &st) == 0 && lseek(in, 0, SEEK_CUR) >= 0 && fstat(out, &st) == 0) {
		mc_prep_write(&body[0], out, buf, 0);
		mc_set_ref(&body[0], 2, 1);
		mc_set_check(&body[0]);
		mc_prep_read(&body[1], in, buf, FIXED_BLOCK);
		mc_set_check(&body[1]);
		body[1].result = n;
		mc_run_loop(ctx, body, 2, &loop, &it);
	}
	t0 = now_ns() - t0;
	if (fstat(out, &st) < 0 || st.st_size != (off_t)FIXED_BLOCK * FIXED_BLOCKS)
		die("fused_copy_fixed: the %s copy wrote %ld bytes, not %u", ctx ? "fused" : "direct",
		    (long)st.st_size, FIXED_BLOCK * FIXED_BLOCKS);
	return t0;
}

/* The figure fn(arg) gives in a child forked for it (what a fresh process
 * pays); NAN where it could not run. */
static double in_child(double (*fn)(const void *), const void *arg)
{
	int fd[2], st;
	double t = NAN;
	pid_t pid;

	if (pipe(fd) < 0)
		return NAN;
	pid = fork();
	if (pid == 0) {
		t = fn(arg);
		_exit(write(fd[1], &t, sizeof(t)) == sizeof(t) ? 0 : 1);
	}
	close(fd[1]);
	if (pid < 0 || read(fd[0], &t, sizeof(t)) != sizeof(t))
		t = NAN;
	close(fd[0]);
	if (pid > 0)
		waitpid(pid, &st, 0);
	return t;
}

struct fixed_copy { int fused, in, out; };

/* One copy, the first of its process (fused: after making its context,
 * untimed). */
static double fixed_copy_first(const void *arg)
{
	const struct fixed_copy *c = arg;
	struct mc_ctx *ctx = c->fused ? mc_ctx_new(MC_BACKEND_FUSION) : NULL;

	return c->fused && !ctx ? NAN : fixed_copy_once(ctx, c->in, c->out);
}

static double measure_copy_fixed(double saving)
{
	unsigned rounds = quick ? 3 : 7, reps = quick ? 3 : 6;
	char in_path[512], out_path[512];
	double best[2] = { INFINITY, INFINITY }, fixed;
	int in, out;

	if (isnan(saving))
		return NAN;
	snprintf(in_path, sizeof(in_path), "%s/mc-calibrate-in.%d", dir, (int)getpid());
	snprintf(out_path, sizeof(out_path), "%s/mc-calibrate-out.%d", dir, (int)getpid());
	in = open(in_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (in >= 0 && write(in, scratch, FIXED_BLOCK * FIXED_BLOCKS) != (ssize_t)(FIXED_BLOCK * FIXED_BLOCKS))
		die("%s: %s", in_path, strerror(errno));
	out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (in < 0 || out < 0)
		die("%s: %s", in < 0 ? in_path : out_path, strerror(errno));
	for (unsigned r = 0; r < rounds; r++)
		for (unsigned m = 0; m < 2; m++)
			for (unsigned i = 0; i < reps; i++) {
				struct fixed_copy c = { (int)m, in, out };
				double t = in_child(fixed_copy_first, &c);

				if (t < best[m])
					best[m] = t;
			}
	close(in);
	close(out);
	unlink(in_path);
	unlink(out_path);
	if (isinf(best[0]) || isinf(best[1]))
		return NAN;
	fixed = best[1] - best[0] + FIXED_BLOCKS * saving;
	return fixed > 0 ? fixed : 0;
}

/* What a program pays once, at its first context (the plugin's "never
 * slower" decision, docs/COMPILER.md): the context's memory and the
 * library's code paged in — only a fresh process has them to pay, so each
 * sample is a child forked before this process makes any context, timing
 * its first one.  For first_context an auto context without a calibration
 * file (MC_CALIBRATION_ENV=none) — plus reading the calibration, timed at
 * the end on the text written (load_ns).  For first_fusion_context the
 * fusion context a priced copy between two files gets
 * (llvm/runtime/write_read_loop.c, gate_ctx): it reads no calibration and
 * probes no /dev/multicall; the gate's fstat and lseek before it are the
 * plugin's probes (ProbeNs), not counted here.  The median of five
 * children: one sample is one preemption away from milliseconds on a
 * loaded machine. */
static double first_context_child(unsigned backend)
{
	struct mc_ctx *ctx;
	double t0, t;

	if (backend == MC_BACKEND_AUTO)
		setenv(MC_CALIBRATION_ENV, "none", 1);
	t0 = now_ns();
	ctx = mc_ctx_new(backend);
	t = now_ns() - t0;
	return ctx ? t : NAN;
}

static double first_context_of(const void *backend)
{
	return first_context_child(*(const unsigned *)backend);
}

static double first_context(unsigned backend)
{
	double v[5];
	unsigned n = 0;

	for (unsigned i = 0; i < 5; i++) {
		double t = in_child(first_context_of, &backend);

		if (!isnan(t))
			v[n++] = t;
	}
	return n ? median(v, n) : NAN;
}

/* Reading a calibration of this text as the library does: the machine's
 * identity, the parse, and the file's open, reads, close and buffer
 * (five crossings). */
static double load_ns(const char *text, size_t len, double crossing)
{
	char kernel[512], cpu[128];
	struct __mc_calib cal;
	double t0 = now_ns();

	__mc_machine_identity(kernel, sizeof(kernel), cpu, sizeof(cpu));
	__mc_calib_parse(&cal, text, len, kernel, cpu);
	return now_ns() - t0 + 5 * crossing; /* openat, two reads, close, the once's wake */
}

static __attribute__((noinline)) long fcall(long x)
{
	__asm__ volatile("" : : : "memory");
	return x + 1;
}

static double per_call(int which)
{
	unsigned n = quick ? 20000 : 200000, rounds = quick ? 3 : 7;
	double v[16];
	struct statx sx;
	struct statfs sf;
	int fd = open(dir, O_RDONLY | O_DIRECTORY), sv[2], ty;
	socklen_t sl = sizeof(ty);
	volatile long acc = 0;

	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	for (unsigned r = 0; r < rounds; r++) {
		double t0 = now_ns();

		for (unsigned i = 0; i < n; i++) {
			switch (which) {
			case 0:
				acc += __mc_sys6(SYS_getppid, 0, 0, 0, 0, 0, 0);
				break;
			case 1:
				acc += fcall((long)i);
				break;
			case 2:
				acc += __mc_sys6(SYS_statx, fd, (long)"", AT_EMPTY_PATH,
						 STATX_TYPE | STATX_MODE | STATX_INO | STATX_SIZE, (long)&sx, 0);
				break;
			case 3:
				acc += __mc_sys6(SYS_fstatfs, fd, (long)&sf, 0, 0, 0, 0);
				break;
			case 4:
				acc += __mc_sys6(SYS_fcntl, fd, F_GETFL, 0, 0, 0, 0);
				break;
			default:
				acc += __mc_sys6(SYS_getsockopt, sv[0], SOL_SOCKET, SO_TYPE, (long)&ty,
						 (long)&sl, 0);
				break;
			}
		}
		v[r] = (now_ns() - t0) / n;
	}
	close(fd);
	close(sv[0]);
	close(sv[1]);
	(void)acc;
	return median(v, rounds);
}

/* Smallest batch from which a beats direct.  Direct costs the same per
 * call at every run length, so its reference is the median over all of
 * them (one noisy point does not move it); a must win by the margin there
 * and at the next length, and at four in five of the longer ones (the
 * fused cost per call only falls as runs grow: a lone loss is noise).
 * 0: never. */
static unsigned threshold(const double *a, const double *d)
{
	double dv[NB], ref;
	int win[NB];

	for (unsigned i = 0; i < NB; i++)
		dv[i] = d[i];
	ref = median(dv, NB);
	for (unsigned i = 0; i < NB; i++)
		win[i] = !isnan(a[i]) && a[i] < ref * MARGIN;
	for (unsigned i = 0; i < NB; i++) {
		unsigned wins = 0;

		if (!win[i] || (i + 1 < NB && !win[i + 1]))
			continue;
		for (unsigned j = i; j < NB; j++)
			wins += (unsigned)win[j];
		if (wins * 5 >= (NB - i) * 4)
			return batches[i];
	}
	return 0;
}

static void jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
	}
	fputc('"', f);
}

static void jnum(FILE *f, double v)
{
	if (isnan(v))
		fputs("null", f);
	else
		fprintf(f, "%.1f", v);
}

static void mkdirs(const char *path)
{
	char tmp[512];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(tmp, 0755);
			*p = '/';
		}
}

static const char *default_path(char *buf, size_t len)
{
	const char *env = getenv(MC_CALIBRATION_ENV), *base;

	if (env && *env && strcmp(env, "none"))
		return env;
	base = getenv("XDG_CACHE_HOME");
	if (base && *base)
		snprintf(buf, len, "%s/syscluster/multicall-calibration.json", base);
	else if ((base = getenv("HOME")) && *base)
		snprintf(buf, len, "%s/.cache/syscluster/multicall-calibration.json", base);
	else
		die("no output path: set -o, %s, XDG_CACHE_HOME or HOME", MC_CALIBRATION_ENV);
	return buf;
}

static int check_file(const char *path, int verbose)
{
	char kernel[512], cpu[128];
	static char text[1 << 20];
	struct __mc_calib cal;
	size_t len;
	FILE *f = fopen(path, "r");
	int st;

	if (!f) {
		fprintf(stderr, "mc-calibrate: %s: %s\n", path, strerror(errno));
		return 1;
	}
	len = fread(text, 1, sizeof(text), f);
	fclose(f);
	__mc_machine_identity(kernel, sizeof(kernel), cpu, sizeof(cpu));
	st = __mc_calib_parse(&cal, text, len, kernel, cpu);
	if (verbose || st != MC_CALIB_FILE)
		printf("%s: %s\n", path,
		       st == MC_CALIB_FILE ? "valid for this machine" :
		       st == MC_CALIB_STALE ? "stale (another machine, kernel or format)" : "corrupt");
	return st == MC_CALIB_FILE ? 0 : 1;
}

/* The identity a calibration is tied to, as the file's "machine" object:
 * what syscluster compares its own identity of this machine with. */
static void print_machine(void)
{
	char kernel[512], cpu[128];

	__mc_machine_identity(kernel, sizeof(kernel), cpu, sizeof(cpu));
	printf("{\"kernel\": ");
	jstr(stdout, kernel);
	printf(", \"cpu\": ");
	jstr(stdout, cpu);
	printf("}\n");
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mc-calibrate [-o FILE | --stdout] [--dir DIR] [--quick]\n"
		"                    [--decisions=measured|eager|never] [--check FILE]\n"
		"                    [--machine]\n"
		"Measures this machine for libmulticall's auto backend and writes the\n"
		"calibration (default: $%s, else $XDG_CACHE_HOME or ~/.cache,\n"
		"syscluster/multicall-calibration.json).\n"
		"  -o FILE        write there\n"
		"  --stdout       print instead of writing\n"
		"  --dir DIR      directory on the filesystem to measure (default $TMPDIR or /tmp)\n"
		"  --quick        fewer repetitions (seconds instead of tens of seconds)\n"
		"  --decisions=K  measured (default); eager: every rule from 2 calls and io_uring\n"
		"                 from 2 (for tests of auto); never: no rule, no io_uring\n"
		"  --check FILE   say whether FILE is valid for this machine (exit 0) or not\n"
		"  --machine      print this machine's identity, as a calibration records it\n",
		MC_CALIBRATION_ENV);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' }, { "stdout", no_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' },    { "quick", no_argument, NULL, 'q' },
		{ "decisions", required_argument, NULL, 'D' }, { "check", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },         { "version", no_argument, NULL, 'V' },
		{ "machine", no_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out_path = NULL, *decisions = "measured";
	char pathbuf[512], tmp_path[600], kernel[512], cpu[128], created[64], fsname[32];
	double m[K_COUNT][NB][M_COUNT], loops[2][NB][2], blocks[NBS][2], costs[6], first_ctx = NAN, first_fusion = NAN, copy_fixed = NAN;
	char *text = NULL;
	size_t tlen = 0;
	unsigned short min_run[R_COUNT][FDC_COUNT][2], uring_min[U_COUNT];
	int to_stdout = 0, opt;
	struct statfs sf;
	time_t t = time(NULL);
	FILE *f;

	while ((opt = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			out_path = optarg;
			break;
		case 's':
			to_stdout = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'q':
			quick = 1;
			break;
		case 'D':
			decisions = optarg;
			if (strcmp(decisions, "measured") && strcmp(decisions, "eager") &&
			    strcmp(decisions, "never"))
				die("--decisions: unknown value '%s' (measured, eager, never)", decisions);
			break;
		case 'c':
			return check_file(optarg, 1);
		case 'M':
			print_machine();
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("mc-calibrate %s\n", TOOL_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		die("unexpected argument '%s'", argv[optind]);
	if (!dir)
		dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	if (statfs(dir, &sf) < 0)
		die("--dir %s: %s", dir, strerror(errno));
	snprintf(fsname, sizeof(fsname), "0x%lx", (unsigned long)sf.f_type);
	if (!to_stdout && !out_path)
		out_path = default_path(pathbuf, sizeof(pathbuf));
	for (size_t i = 0; i < sizeof(scratch); i++)
		scratch[i] = (char)i;

	memset(min_run, 0, sizeof(min_run));
	memset(uring_min, 0, sizeof(uring_min));
	for (unsigned k = 0; k < K_COUNT; k++)
		for (unsigned b = 0; b < NB; b++)
			for (unsigned x = 0; x < M_COUNT; x++)
				m[k][b][x] = NAN;
	for (unsigned b = 0; b < NB; b++)
		loops[0][b][0] = loops[0][b][1] = loops[1][b][0] = loops[1][b][1] = NAN;
	for (unsigned s = 0; s < NBS; s++)
		blocks[s][0] = blocks[s][1] = NAN;
	for (int c = 0; c < 6; c++)
		costs[c] = NAN;

	if (!strcmp(decisions, "measured")) {
		first_ctx = first_context(MC_BACKEND_AUTO);
		first_fusion = first_context(MC_BACKEND_FUSION);
		for (int c = 0; c < 6; c++)
			costs[c] = per_call(c);
		for (unsigned k = 0; k < K_COUNT; k++) {
			for (unsigned b = 0; b < NB; b++)
				measure(k, batches[b], m[k][b]);
			if (!to_stdout)
				fprintf(stderr, "mc-calibrate: %-20s done\n", kinds[k].name);
		}
		for (unsigned b = 0; b < NB; b++) {
			measure_loop(0, batches[b], loops[0][b]);
			measure_loop(1, batches[b], loops[1][b]);
		}
		measure_copy_blocks(blocks);
		for (unsigned s = 0; s < NBS; s++)
			if (block_sizes[s] == FIXED_BLOCK)
				copy_fixed = measure_copy_fixed(blocks[s][0] - blocks[s][1]);
		for (unsigned k = 0; k < K_COUNT; k++) {
			double d[NB], a[NB], ar[NB], u[NB];

			for (unsigned b = 0; b < NB; b++) {
				d[b] = m[k][b][M_DIRECT];
				a[b] = m[k][b][M_FUSION];
				ar[b] = m[k][b][M_FUSION_REG];
				u[b] = m[k][b][M_URING];
			}
			if (kinds[k].rule < R_COUNT) {
				min_run[kinds[k].rule][kinds[k].cls][0] = (unsigned short)threshold(a, d);
				min_run[kinds[k].rule][kinds[k].cls][1] = (unsigned short)threshold(ar, d);
			}
			if (kinds[k].ukind < U_COUNT)
				uring_min[kinds[k].ukind] = (unsigned short)threshold(u, d);
		}
		for (int s = 0; s < 2; s++) {
			double d[NB], a[NB];
			unsigned rule = s ? R_BATCH_SEND : R_COPY, cls = s ? FDC_DGRAM : FDC_FILE;

			for (unsigned b = 0; b < NB; b++) {
				d[b] = loops[s][b][0];
				a[b] = loops[s][b][1];
			}
			min_run[rule][cls][0] = min_run[rule][cls][1] = (unsigned short)threshold(a, d);
		}
	} else if (!strcmp(decisions, "eager")) {
		for (unsigned r = 0; r < R_COUNT; r++)
			for (unsigned c = 0; c < FDC_COUNT; c++)
				min_run[r][c][0] = min_run[r][c][1] = 2;
		for (unsigned u = 0; u < U_COUNT; u++)
			uring_min[u] = 2;
	}

	__mc_machine_identity(kernel, sizeof(kernel), cpu, sizeof(cpu));
	strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	/* The text is made in memory first: first_context includes reading it. */
	f = open_memstream(&text, &tlen);
	if (!f)
		die("out of memory");
	fprintf(f, "{\n  \"format_version\": %d,\n  \"tool\": \"mc-calibrate %s\",\n", SCL_MULTICALL_CALIBRATION_VERSION, TOOL_VERSION);
	fprintf(f, "  \"created\": \"%s\",\n  \"decisions_from\": \"%s\",\n", created, decisions);
	fprintf(f, "  \"machine\": {\"kernel\": ");
	jstr(f, kernel);
	fprintf(f, ", \"cpu\": ");
	jstr(f, cpu);
	fprintf(f, ", \"cpus\": %ld},\n", sysconf(_SC_NPROCESSORS_ONLN));
	fprintf(f, "  \"dir\": ");
	jstr(f, dir);
	fprintf(f, ", \"fs_type\": \"%s\",\n", fsname);
	fprintf(f, "  \"costs_ns\": {\"crossing\": ");
	jnum(f, costs[0]);
	fprintf(f, ", \"function_call\": ");
	jnum(f, costs[1]);
	fprintf(f, ", \"statx\": ");
	jnum(f, costs[2]);
	fprintf(f, ", \"fstatfs\": ");
	jnum(f, costs[3]);
	fprintf(f, ", \"fcntl\": ");
	jnum(f, costs[4]);
	fprintf(f, ", \"getsockopt\": ");
	jnum(f, costs[5]);
	/* Before first_context: its number is patched where FIRST_END follows. */
	fprintf(f, ", \"fused_copy_fixed\": ");
	jnum(f, copy_fixed);
	fprintf(f, ", \"first_fusion_context\": ");
	jnum(f, first_fusion);
	fprintf(f, ", \"first_context\": ");
	jnum(f, first_ctx);
	fprintf(f, "%s", FIRST_END);
	for (unsigned b = 0; b < NB; b++)
		fprintf(f, "%s%u", b ? ", " : "", batches[b]);
	fprintf(f, "],\n  \"measurements\": [\n");
	for (unsigned k = 0; k < K_COUNT; k++) {
		fprintf(f, "    {\"kind\": \"%s\"", kinds[k].name);
		for (unsigned x = 0; x < M_COUNT; x++) {
			fprintf(f, ", \"%s\": [", mech_key[x]);
			for (unsigned b = 0; b < NB; b++) {
				fprintf(f, "%s", b ? ", " : "");
				jnum(f, m[k][b][x]);
			}
			fprintf(f, "]");
		}
		fprintf(f, "},\n");
	}
	for (int s = 0; s < 2; s++) {
		fprintf(f, "    {\"kind\": \"%s\", \"unit\": \"ns per iteration, batch = blocks\"",
			s ? "read+sendto-loop.dgram" : "copy-loop.file");
		for (int x = 0; x < 2; x++) {
			fprintf(f, ", \"%s\": [", x ? "fusion_ns" : "direct_ns");
			for (unsigned b = 0; b < NB; b++) {
				fprintf(f, "%s", b ? ", " : "");
				jnum(f, loops[s][b][x]);
			}
			fprintf(f, "]");
		}
		fprintf(f, "},\n");
	}
	fprintf(f, "    {\"kind\": \"copy-block.file\", \"unit\": \"ns per block, least of the runs: fused, a %u-byte copy; "
		"direct, its first %lu blocks\", \"block_bytes\": [",
		COPY_BYTES, DIRECT_BLOCKS);
	for (unsigned s = 0; s < NBS; s++)
		fprintf(f, "%s%u", s ? ", " : "", block_sizes[s]);
	fprintf(f, "]");
	for (int x = 0; x < 2; x++) {
		fprintf(f, ", \"%s\": [", x ? "fusion_ns" : "direct_ns");
		for (unsigned s = 0; s < NBS; s++) {
			fprintf(f, "%s", s ? ", " : "");
			jnum(f, blocks[s][x]);
		}
		fprintf(f, "]");
	}
	fprintf(f, "}\n");
	fprintf(f, "  ],\n  \"decisions\": {\n    \"min_run\": {");
	{
		int first = 1;

		for (unsigned r = 0; r < R_COUNT; r++)
			for (unsigned c = 0; c < FDC_COUNT; c++) {
				if (!min_run[r][c][0] && !min_run[r][c][1])
					continue;
				fprintf(f, "%s\n      \"%s.%s\": [%u, %u]", first ? "" : ",", __mc_rule_name(r),
					__mc_fdclass_name(c), min_run[r][c][0], min_run[r][c][1]);
				first = 0;
			}
	}
	fprintf(f, "\n    },\n    \"uring_min\": {\"read.file\": %u, \"write.file\": %u, \"other\": %u}\n",
		uring_min[U_READ_FILE], uring_min[U_WRITE_FILE], uring_min[U_OTHER]);
	fprintf(f, "  }\n}\n");
	if (fclose(f) != 0)
		die("out of memory");
	if (!isnan(first_ctx)) {
		/* first_context += the load of this text (a number longer by a few
		 * digits reads in the same time). */
		char *at = strstr(text, FIRST_END), *num = at;
		char buf[64];

		while (num > text && num[-1] != ' ')
			num--;
		first_ctx += load_ns(text, tlen, costs[0]);
		snprintf(buf, sizeof(buf), "%.1f", first_ctx);
		if (!at || strlen(buf) > 24)
			die("internal: first_context");
		{
			size_t head = (size_t)(num - text);
			char *full = malloc(tlen + 32);

			if (!full)
				die("out of memory");
			memcpy(full, text, head);
			strcpy(full + head, buf);
			strcat(full + head, at);
			free(text);
			text = full;
			tlen = strlen(text);
		}
	}
	if (to_stdout) {
		fwrite(text, 1, tlen, stdout);
	} else {
		mkdirs(out_path);
		snprintf(tmp_path, sizeof(tmp_path), "%s.tmp.%d", out_path, (int)getpid());
		f = fopen(tmp_path, "w");
		if (!f)
			die("%s: %s", tmp_path, strerror(errno));
		if (fwrite(text, 1, tlen, f) != tlen || fclose(f) != 0 || rename(tmp_path, out_path) != 0)
			die("%s: %s", out_path, strerror(errno));
		if (check_file(out_path, 0))
			die("%s: written but does not read back", out_path);
		printf("mc-calibrate: wrote %s\n", out_path);
	}
	free(text);
	return 0;
}
