/* SPDX-License-Identifier: MIT */
/*
 * copy-loop: the same copy program with the whole loop as one looped
 * multi-call (seed 000 §3.4): the body is the rotated write-read cluster,
 * the write's count is the previous iteration's read (a loop-carried
 * reference), and the loop goes on while the read returns more than 0.
 * Between regular files the library turns it into copy_file_range.
 *
 *   copy-loop [-b auto|direct|fusion|uring] [-s BLOCK] IN OUT
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <multicall.h>

static unsigned backend_named(const char *s)
{
	for (unsigned b = 0; b < MC_BACKEND_COUNT; b++)
		if (mc_backend_name(b) && !strcmp(s, mc_backend_name(b)))
			return b;
	fprintf(stderr, "copy-loop: unknown backend '%s'\n", s);
	exit(2);
}

int main(int argc, char *argv[])
{
	unsigned backend = MC_BACKEND_AUTO;
	size_t size = 4096;
	struct mc_call body[2];
	struct mc_loop loop = { 1, MC_WHILE_GT, 0, (unsigned long)-1 };
	struct mc_ctx *ctx;
	unsigned long it;
	char *buff;
	long n;
	int inp, out, opt, r;

	while ((opt = getopt(argc, argv, "b:s:")) != -1) {
		if (opt == 'b')
			backend = backend_named(optarg);
		else if (opt == 's' && atol(optarg) > 0)
			size = (size_t)atol(optarg);
		else {
			fprintf(stderr, "usage: copy-loop [-b auto|direct|fusion|uring] [-s BLOCK] IN OUT\n");
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: copy-loop [-b auto|direct|fusion|uring] [-s BLOCK] IN OUT\n");
		return 2;
	}
	r = mc_ctx_init(&ctx, backend);
	if (r < 0) {
		fprintf(stderr, "copy-loop: %s backend: %s\n", mc_backend_name(backend), strerror(-r));
		return 1;
	}
	buff = malloc(size);
	inp = open(argv[optind], O_RDONLY);
	if (!buff || inp < 0) {
		fprintf(stderr, "copy-loop: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	out = creat(argv[optind + 1], 0666);
	if (out < 0) {
		fprintf(stderr, "copy-loop: %s: %s\n", argv[optind + 1], strerror(errno));
		return 1;
	}
	n = read(inp, buff, size);
	if (n < 0) {
		perror("read");
		return 1;
	}
	if (n > 0) {
		mc_prep_write(&body[0], out, buff, 0);
		mc_set_ref(&body[0], 2, 1); /* n: the read of the previous iteration */
		mc_set_check(&body[0]);
		mc_prep_read(&body[1], inp, buff, size);
		mc_set_check(&body[1]);
		body[1].result = n; /* what the header read */
		r = mc_run_loop(ctx, body, 2, &loop, &it);
		if (r == 0) {
			fprintf(stderr, "write: %s\n", strerror((int)-body[0].result));
			return 1;
		} else if (r == 1) {
			fprintf(stderr, "read: %s\n", strerror((int)-body[1].result));
			return 1;
		}
	}
	free(buff);
	mc_ctx_free(ctx);
	return 0;
}
