/* SPDX-License-Identifier: MIT */
/*
 * kmod-speed: what a multi-call through multicall.ko costs against the same
 * calls made one by one, in a guest where the module is loaded.  Run by
 * bench/kmod/speed.sh inside a stock Debian guest under KVM (never under
 * TCG: an emulated CPU's times say nothing about speed).
 *
 *   kmod-speed [--rounds N] [--iterations N]
 *
 * Each operation runs on direct and on kmod, interleaved in rounds; the
 * figure of each is its fastest round (the one other work disturbed
 * least), in ns per operation.  Prints one line per operation:
 *   KMOD-SPEED <operation> <calls> <direct ns> <kmod ns>
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <multicall.h>

static unsigned long iterations = 20000;
static unsigned rounds = 9;
static int null_fd, zero_fd, pipe_fd[2];
static char block[4096];

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* One operation: n calls as one multi-call on ctx. */
typedef int (*op_fn)(struct mc_ctx *ctx);

static int op_getpid(struct mc_ctx *ctx)
{
	struct mc_call c[1];

	mc_prep_syscall(&c[0], SYS_getpid, 0, 0, 0, 0, 0, 0);
	return mc_run(ctx, c, 1);
}

static int op_writes16(struct mc_ctx *ctx)
{
	struct mc_call c[16];

	for (int i = 0; i < 16; i++)
		mc_prep_write(&c[i], null_fd, "12345678", 8);
	return mc_run(ctx, c, 16);
}

/* The copy loop, 16 blocks of 4096 bytes from /dev/zero to /dev/null
 * (the module's value-specialized path). */
static int op_copy16(struct mc_ctx *ctx)
{
	struct mc_call body[2];
	struct mc_loop loop = { 0, MC_WHILE_GT, 0, 16 };
	unsigned long it;

	mc_prep_read(&body[0], zero_fd, block, sizeof(block));
	mc_prep_write(&body[1], null_fd, block, 0);
	mc_set_ref(&body[1], 2, 0);
	mc_set_check(&body[0]);
	mc_set_check(&body[1]);
	return mc_run_loop(ctx, body, 2, &loop, &it);
}

static int op_select_time(struct mc_ctx *ctx)
{
	struct timeval tv = { 0, 0 }, when;
	fd_set r;
	long res[2];

	FD_ZERO(&r);
	FD_SET(pipe_fd[0], &r);
	return mc_select_time(ctx, pipe_fd[0] + 1, &r, NULL, NULL, &tv, &when, res);
}

static const struct {
	const char *name;
	unsigned calls;
	op_fn fn;
} ops[] = {
	{ "getpid (one call)", 1, op_getpid },
	{ "16 writes of 8 bytes to /dev/null", 16, op_writes16 },
	{ "copy loop, 16 x 4096 bytes", 32, op_copy16 },
	{ "select + gettimeofday", 2, op_select_time },
};

static double run_round(struct mc_ctx *ctx, op_fn fn)
{
	double t0 = now_ns();

	for (unsigned long i = 0; i < iterations; i++)
		if (fn(ctx) < 0) {
			fprintf(stderr, "kmod-speed: an operation failed\n");
			exit(1);
		}
	return (now_ns() - t0) / (double)iterations;
}

int main(int argc, char *argv[])
{
	struct mc_ctx *direct, *kmod;
	int r;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--rounds") && atoi(argv[i + 1]) > 0)
			rounds = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--iterations") && atol(argv[i + 1]) > 0)
			iterations = (unsigned long)atol(argv[i + 1]);
		else {
			fprintf(stderr, "usage: kmod-speed [--rounds N] [--iterations N]\n");
			return 2;
		}
	}
	r = mc_ctx_init(&direct, MC_BACKEND_DIRECT);
	if (r == 0)
		r = mc_ctx_init(&kmod, MC_BACKEND_KMOD);
	if (r < 0) {
		fprintf(stderr, "kmod-speed: %s (is multicall.ko loaded?)\n", strerror(-r));
		return 1;
	}
	null_fd = open("/dev/null", O_WRONLY);
	zero_fd = open("/dev/zero", O_RDONLY);
	if (null_fd < 0 || zero_fd < 0 || pipe(pipe_fd) || write(pipe_fd[1], "x", 1) != 1) {
		perror("kmod-speed: setup");
		return 1;
	}
	for (unsigned k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		double best[2] = { 1e300, 1e300 };

		for (unsigned round = 0; round < rounds; round++) {
			double d = run_round(direct, ops[k].fn), m = run_round(kmod, ops[k].fn);

			best[0] = d < best[0] ? d : best[0];
			best[1] = m < best[1] ? m : best[1];
		}
		printf("KMOD-SPEED %s|%u|%.1f|%.1f\n", ops[k].name, ops[k].calls, best[0], best[1]);
	}
	mc_ctx_free(direct);
	mc_ctx_free(kmod);
	return 0;
}
