/* SPDX-License-Identifier: MIT */
/*
 * Description: contexts across fork.  A context made and used before
 * fork keeps working in the child (its io_uring, inherited from the
 * parent, is left alone and a new one is made) and in the parent, also
 * with the two running at once, and in a grandchild.  Each process writes
 * its own file through the same context and the files must be exact.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int work(struct mc_ctx *ctx, const char *path, int tag)
{
	struct mc_call c[40];
	char line[32];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644), ret, bad = 0;

	if (fd < 0)
		return 1;
	snprintf(line, sizeof(line), "tag %d..", tag);
	for (int round = 0; round < 50; round++) {
		for (int i = 0; i < 16; i++)
			mc_prep_write(&c[i], fd, line, 8);
		mc_prep_syscall(&c[16], SYS_getpid, 0, 0, 0, 0, 0, 0);
		mc_prep_syscall(&c[17], SYS_fsync, fd, 0, 0, 0, 0, 0);
		ret = mc_run(ctx, c, 18);
		if (ret != 18 || c[16].result != getpid())
			bad = 1;
		for (int i = 0; i < 16; i++)
			if (c[i].result != 8)
				bad = 1;
	}
	if (lseek(fd, 0, SEEK_CUR) != 50 * 16 * 8)
		bad = 1;
	close(fd);
	return bad;
}

int main(void)
{
	char dir[] = "/tmp/mc-fork-XXXXXX", path[256];

	if (!mkdtemp(dir))
		return T_EXIT_FAIL;
	for (unsigned b = 0; b < t_nbackends; b++) {
		struct mc_ctx *ctx = t_ctx(t_backends[b]);
		const char *name = mc_backend_name(t_backends[b]);
		pid_t pid;
		int status;

		if (!ctx)
			continue;
		snprintf(path, sizeof(path), "%s/parent", dir);
		T_ASSERT(work(ctx, path, 1) == 0, "%s: parent before fork", name);
		pid = fork();
		if (pid == 0) {
			pid_t g;
			int st2, bad;

			snprintf(path, sizeof(path), "%s/child", dir);
			bad = work(ctx, path, 2);
			g = fork();
			if (g == 0) {
				snprintf(path, sizeof(path), "%s/grandchild", dir);
				_exit(work(ctx, path, 3));
			}
			waitpid(g, &st2, 0);
			bad |= !WIFEXITED(st2) || WEXITSTATUS(st2);
			mc_ctx_free(ctx);
			_exit(bad);
		}
		snprintf(path, sizeof(path), "%s/parent2", dir);
		T_ASSERT(work(ctx, path, 4) == 0, "%s: parent while the child runs", name);
		waitpid(pid, &status, 0);
		T_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			 "%s: child or grandchild failed (status %d)", name, status);
		snprintf(path, sizeof(path), "%s/parent3", dir);
		T_ASSERT(work(ctx, path, 5) == 0, "%s: parent after the child", name);
		mc_ctx_free(ctx);
	}
	for (const char *n = "parent\0parent2\0parent3\0child\0grandchild\0"; *n; n += strlen(n) + 1) {
		snprintf(path, sizeof(path), "%s/%s", dir, n);
		unlink(path);
	}
	rmdir(dir);
	return t_finish();
}
