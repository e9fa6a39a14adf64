/* SPDX-License-Identifier: MIT */
/*
 * copy: the copy program of seed 000 (fig. 5), rewritten with the library
 * as fig. 3 rewrites a cluster: the loop is rotated (§3.3.3) so that each
 * iteration is a write followed by a read, and that pair is one multi-call
 * whose return value says which call failed, so the original error
 * handling stays where it was.
 *
 *   copy [-b auto|direct|fusion|uring] [-s BLOCK] IN OUT
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <multicall.h>

#define N 4096

static unsigned backend_named(const char *s)
{
	for (unsigned b = 0; b < MC_BACKEND_COUNT; b++)
		if (mc_backend_name(b) && !strcmp(s, mc_backend_name(b)))
			return b;
	fprintf(stderr, "copy: unknown backend '%s'\n", s);
	exit(2);
}

int main(int argc, char *argv[])
{
	unsigned backend = MC_BACKEND_AUTO;
	size_t size = N;
	struct mc_call args[2];
	struct mc_ctx *ctx;
	char *buff;
	long n;
	int inp, out, opt, r;

	while ((opt = getopt(argc, argv, "b:s:")) != -1) {
		if (opt == 'b')
			backend = backend_named(optarg);
		else if (opt == 's' && atol(optarg) > 0)
			size = (size_t)atol(optarg);
		else {
			fprintf(stderr, "usage: copy [-b auto|direct|fusion|uring] [-s BLOCK] IN OUT\n");
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: copy [-b auto|direct|fusion|uring] [-s BLOCK] IN OUT\n");
		return 2;
	}
	r = mc_ctx_init(&ctx, backend);
	if (r < 0) {
		fprintf(stderr, "copy: %s backend: %s\n", mc_backend_name(backend), strerror(-r));
		return 1;
	}
	buff = malloc(size);
	inp = open(argv[optind], O_RDONLY);
	if (!buff || inp < 0) {
		fprintf(stderr, "copy: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	out = creat(argv[optind + 1], 0666);
	if (out < 0) {
		fprintf(stderr, "copy: %s: %s\n", argv[optind + 1], strerror(errno));
		return 1;
	}

	/* The loop header, as §3.3.3 rotates it: the first read stays out. */
	n = read(inp, buff, size);
	if (n < 0) {
		perror("read");
		return 1;
	}
	while (n > 0) {
		/* fig. 3: the write-read cluster as one multi-call */
		mc_prep_write(&args[0], out, buff, (size_t)n);
		mc_set_check(&args[0]);
		mc_prep_read(&args[1], inp, buff, size);
		mc_set_check(&args[1]);
		r = mc_run(ctx, args, 2);
		if (r == 0) {
			fprintf(stderr, "write: %s\n", strerror((int)-args[0].result));
			return 1;
		} else if (r == 1) {
			fprintf(stderr, "read: %s\n", strerror((int)-args[1].result));
			return 1;
		}
		n = args[1].result;
	}
	free(buff);
	mc_ctx_free(ctx);
	return 0;
}
