/* The spawn of tests/plugin/seek_read.c, in a translation unit of its own
 * (the plugin refuses the pair in a module that starts programs): a shell
 * reads 16 bytes from descriptor 3 — seek_read's file, opened first —
 * where the position is, and prints them; "closed" where the descriptor
 * is close-on-exec.  What an exec from a library would see. */
#include <err.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>

extern char **environ;

void spawn_reader(void);

void spawn_reader(void)
{
	char *argv[] = {"sh", "-c", "head -c 16 <&3 2>/dev/null | od -An -tx1 || echo closed", NULL};
	pid_t child;
	int status;

	fflush(stdout);
	if (posix_spawnp(&child, "sh", NULL, NULL, argv, environ) != 0)
		errx(4, "posix_spawnp sh");
	waitpid(child, &status, 0);
}
