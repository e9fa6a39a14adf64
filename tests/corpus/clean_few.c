/* clean_few: a clean program for the advisor (no recommendation is
 * expected): a few unrelated calls, each once.
 *   clean_few
 * Known calls after start-up: getcwd, uname, getpid, newfstatat("/"),
 * clock_gettime through the vDSO (no system call), one write(1). */
#include <stdio.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
    char cwd[4096];
    struct utsname u;
    struct stat st;
    struct timespec ts;
    if (!getcwd(cwd, sizeof cwd) || uname(&u) != 0 || stat("/", &st) != 0 || clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 1;
    char line[256];
    int n = snprintf(line, sizeof line, "pid %d on %s\n", (int)getpid(), u.sysname);
    return write(1, line, (size_t)n) == n ? 0 : 1;
}
