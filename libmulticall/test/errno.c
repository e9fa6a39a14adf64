/* SPDX-License-Identifier: MIT */
/*
 * Description: no public function touches errno, on success or on
 * failure, on any backend: context creation (also the io_uring setup and
 * the calibration load, here from a corrupt file), runs with failing
 * calls, loops, explain, registration, stats, the specialized calls.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#define KEEP(expr)                                                                      \
	do {                                                                            \
		errno = 31337;                                                          \
		(void)(expr);                                                           \
		T_ASSERT(errno == 31337, "%s changed errno to %d", #expr, errno);       \
	} while (0)

int main(void)
{
	char path[] = "/tmp/mc-errno-XXXXXX", buf[4096];
	int fd = mkstemp(path), p[2];
	struct mc_call c[8];
	struct mc_loop loop = { 0, MC_WHILE_GT, 0, 100 };
	struct mc_step steps[8];
	struct mc_stats st;
	struct mc_info info;
	unsigned long it;
	long res[2];
	struct timeval tv = { 0, 0 }, now;

	/* A corrupt calibration: the first auto context loads it. */
	if (fd < 0 || write(fd, "{ not json", 10) != 10 || pipe(p) < 0)
		return T_EXIT_FAIL;
	setenv(MC_CALIBRATION_ENV, path, 1);
	for (unsigned b = 0; b < t_nbackends; b++) {
		struct mc_ctx *ctx;

		errno = 31337;
		ctx = mc_ctx_new(t_backends[b]);
		T_ASSERT(errno == 31337, "mc_ctx_new(%s) changed errno", mc_backend_name(t_backends[b]));
		if (!ctx)
			continue;
		for (int i = 0; i < 8; i++)
			mc_prep_write(&c[i], i == 3 ? 999 : fd, "12345678", 8);
		KEEP(mc_run(ctx, c, 8));
		mc_set_check(&c[3]);
		KEEP(mc_run(ctx, c, 8));
		KEEP(mc_run(ctx, c, MC_MAX_CALLS + 1));
		KEEP(mc_explain(ctx, c, 8, steps, 8));
		lseek(fd, 0, SEEK_SET);
		mc_prep_read(&c[0], fd, buf, 100);
		mc_prep_write(&c[1], 999, buf, 0);
		mc_set_ref(&c[1], 2, 0);
		KEEP(mc_run_loop(ctx, c, 2, &loop, &it));
		KEEP(mc_copy(ctx, fd, 999, buf, 512, 10, res, &it));
		KEEP(mc_read_sendto(ctx, fd, buf, 512, 999, 0, NULL, 0, 10, res, &it));
		KEEP(mc_select_time(ctx, 1001, NULL, NULL, NULL, &tv, &now, res));
		KEEP(mc_fd_register(ctx, 999));
		KEEP(mc_fd_register(ctx, fd));
		KEEP(mc_fd_unregister(ctx, fd));
		KEEP(mc_fd_unregister(ctx, fd));
		KEEP(mc_ctx_stats(ctx, &st));
		KEEP(mc_ctx_info(ctx, &info));
		if (t_backends[b] == MC_BACKEND_AUTO)
			T_ASSERT(info.calibration == MC_CALIB_CORRUPT, "corrupt calibration status %u",
				 info.calibration);
		KEEP(mc_ctx_free(ctx));
	}
	KEEP(mc_ctx_new(MC_BACKEND_KMOD));
	KEEP(mc_ctx_new(99));
	unlink(path);
	return t_finish();
}
