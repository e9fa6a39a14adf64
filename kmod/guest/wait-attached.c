/* SPDX-License-Identifier: MIT */
/*
 * wait-attached READY PROGRAM [ARG...]: for kmod/guest/record.sh.  Creates
 * the file READY (the recorded command has started), then waits, at most
 * 60 s, until its parent -- the recorder -- holds a BPF link on the
 * tracepoint multicall:mc_enter (its /proc/PID/fdinfo says "tp_name:
 * mc_enter") and /dev/multicall is there, then execs PROGRAM.  It reads
 * with pread, lists with getdents64 and sleeps with nanosleep: a profile
 * keyed by name counts no read or write of its own, only PROGRAM's.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Whether one of process pid's descriptors is a link on mc_enter. */
static int attached(pid_t pid)
{
	char path[300], b[512];
	struct dirent *e;
	int found = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)pid);
	d = opendir(path);
	while (d && !found && (e = readdir(d))) {
		int fd;
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", (int)pid, e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? pread(fd, b, sizeof(b) - 1, 0) : -1;
		if (fd >= 0)
			close(fd);
		if (n > 0) {
			b[n] = 0;
			found = strstr(b, "tp_name:\tmc_enter") != NULL;
		}
	}
	if (d)
		closedir(d);
	return found;
}

int main(int argc, char *argv[])
{
	struct timespec tick = { 0, 100 * 1000 * 1000 };
	pid_t recorder = getppid();
	int ready;

	if (argc < 3) {
		fprintf(stderr, "usage: wait-attached READY PROGRAM [ARG...]\n");
		return 2;
	}
	ready = open(argv[1], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (ready < 0) {
		perror(argv[1]);
		return 1;
	}
	close(ready);
	for (int i = 0; i < 600; i++) {
		/* devtmpfs makes the device node after the module loads */
		if (attached(recorder) && access("/dev/multicall", F_OK) == 0)
			break;
		nanosleep(&tick, NULL);
	}
	execv(argv[2], argv + 2);
	perror(argv[2]);
	return 127;
}
