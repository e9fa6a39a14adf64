/* SPDX-License-Identifier: MIT */
/*
 * Description: several threads, one context each, all backends at once:
 * each thread runs fused writes to its own file, reads it back with a
 * fused readv, and sends through a shared pipe; every result and every
 * file must be exact, and the pipe must carry every byte.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define THREADS 8
#define ROUNDS 200

static char dir[] = "/tmp/mc-threads-XXXXXX";
static int shared[2];
static int bad[THREADS];

static void *worker(void *arg)
{
	long id = (long)arg;
	unsigned backend = t_backends[id % t_nbackends];
	struct mc_ctx *ctx = mc_ctx_new(backend);
	struct mc_call c[32];
	char path[256], line[16], back[16][8];
	int fd;

	if (!ctx)
		return NULL; /* unavailable backend: reported by t_ctx in main */
	snprintf(path, sizeof(path), "%s/t%ld", dir, id);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	snprintf(line, sizeof(line), "t%02ld.....", id);
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < 16; i++)
			mc_prep_write(&c[i], fd, line, 8);
		mc_prep_write(&c[16], shared[1], line, 8);
		mc_prep_write(&c[17], shared[1], line, 8);
		mc_prep_lseek(&c[18], fd, -128, SEEK_CUR);
		for (int i = 0; i < 13; i++)
			mc_prep_read(&c[19 + i], fd, back[i], 8);
		if (mc_run(ctx, c, 32) != 32)
			bad[id] = 1;
		for (int i = 0; i < 32; i++)
			if (c[i].result != (i == 18 ? (long)r * 128 : 8))
				bad[id] = 1;
		for (int i = 0; i < 13; i++)
			if (memcmp(back[i], line, 8))
				bad[id] = 1;
		lseek(fd, 0, SEEK_END);
	}
	close(fd);
	mc_ctx_free(ctx);
	return NULL;
}

static void *drain(void *arg)
{
	long *total = arg;
	char b[4096];
	ssize_t r;

	while ((r = read(shared[0], b, sizeof(b))) > 0)
		*total += r;
	return NULL;
}

int main(void)
{
	pthread_t th[THREADS], dr;
	long total = 0;
	int ran = 0;

	if (!mkdtemp(dir) || pipe(shared) < 0)
		return T_EXIT_FAIL;
	for (unsigned b = 0; b < t_nbackends; b++) {
		struct mc_ctx *c = t_ctx(t_backends[b]); /* reports the unavailable ones once */

		if (c)
			mc_ctx_free(c);
	}
	pthread_create(&dr, NULL, drain, &total);
	for (long i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (long i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	close(shared[1]);
	pthread_join(dr, NULL);
	for (long i = 0; i < THREADS; i++) {
		char path[256];
		struct stat st;
		unsigned backend = t_backends[i % t_nbackends];
		struct mc_ctx *probe = mc_ctx_new(backend);

		if (!probe)
			continue;
		ran++;
		mc_ctx_free(probe);
		snprintf(path, sizeof(path), "%s/t%ld", dir, i);
		T_ASSERT(!bad[i], "thread %ld (%s): wrong results", i, mc_backend_name(backend));
		T_ASSERT(stat(path, &st) == 0 && st.st_size == ROUNDS * 128, "thread %ld: file size",
			 i);
		unlink(path);
	}
	T_ASSERT(total == (long)ran * ROUNDS * 16, "pipe carried %ld bytes, want %ld", total,
		 (long)ran * ROUNDS * 16);
	rmdir(dir);
	return t_finish();
}
