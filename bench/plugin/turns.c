/* turns: whole-process times of copy programs run in turn, so that a
 * machine whose speed drifts (other jobs) moves them alike.  The order
 * goes through every permutation, one per round (A B C, A C B, B A C,
 * ...): a program run right after one that wrote a file block by block
 * pays for some of that file's writing-back and removal (~10 % at 925 KiB
 * here), and so each program follows each other equally often (a mere
 * rotation would keep B after A).
 *   turns RUNS IN OUT PROG...
 * Each run: OUT removed, then PROG IN OUT forked, exec'd and reaped (wall
 * time from before the fork to after the reaping; CPU from wait4's rusage).
 * Five rounds of warm-up are not counted.  Prints one line per program:
 *   PROG median-wall-us min-wall-us median-cpu-us paired-ratio
 * where paired-ratio is the median over rounds of this program's wall time
 * divided by the LAST program's in the same round.  A program that fails
 * (exit status not 0) stops the measurement with a message. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double us(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e6 + (double)(b->tv_nsec - a->tv_nsec) / 1e3;
}

/* The index-th permutation of 0..n-1 (index modulo n!), by its factorial
 * digits. */
static void permutation(int *order, int n, unsigned long index)
{
	int left[n];

	for (int k = 0; k < n; k++)
		left[k] = k;
	for (int k = 0, m = n; k < n; k++, m--) {
		int d = (int)(index % (unsigned long)m);

		index /= (unsigned long)m;
		order[k] = left[d];
		for (int j = d; j < m - 1; j++)
			left[j] = left[j + 1];
	}
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 0, np = argc - 4;
	double *wall, *cpu, *ratio;
	int first = 1;

	if (runs < 1 || np < 1) {
		fprintf(stderr, "usage: turns RUNS IN OUT PROG...\n");
		return 2;
	}
	wall = calloc((size_t)(np * runs), sizeof(double));
	cpu = calloc((size_t)(np * runs), sizeof(double));
	ratio = calloc((size_t)(np * runs), sizeof(double));
	if (!wall || !cpu || !ratio) {
		fprintf(stderr, "turns: out of memory\n");
		return 1;
	}
	for (int i = -5; i < runs; i++) {
		int order[np];

		permutation(order, np, (unsigned long)(i + 5));
		for (int k = 0; k < np; k++) {
			int p = order[k];
			const char *prog = argv[4 + p];
			struct timespec a, b;
			struct rusage ru;
			int status;
			pid_t pid;

			/* Every run but the very first leaves OUT behind. */
			if (unlink(argv[3]) < 0 && !first) {
				perror("turns: the output was not written");
				return 1;
			}
			first = 0;
			clock_gettime(CLOCK_MONOTONIC, &a);
			pid = fork();
			if (pid == 0) {
				execl(prog, prog, argv[2], argv[3], (char *)NULL);
				_exit(127);
			}
			if (pid < 0 || wait4(pid, &status, 0, &ru) != pid) {
				perror("turns: fork");
				return 1;
			}
			clock_gettime(CLOCK_MONOTONIC, &b);
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				fprintf(stderr, "turns: %s failed (status %d)\n", prog, status);
				return 1;
			}
			if (i < 0)
				continue;
			wall[p * runs + i] = us(&a, &b);
			cpu[p * runs + i] = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
					    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
		}
	}
	/* The ratios first: median() sorts what it is given. */
	for (int p = 0; p < np; p++)
		for (int i = 0; i < runs; i++)
			ratio[p * runs + i] = wall[p * runs + i] / wall[(np - 1) * runs + i];
	for (int p = 0; p < np; p++) {
		double lo = wall[p * runs];

		for (int i = 1; i < runs; i++)
			if (wall[p * runs + i] < lo)
				lo = wall[p * runs + i];
		printf("%s %.0f %.0f %.0f %.3f\n", argv[4 + p], median(wall + p * runs, runs), lo,
		       median(cpu + p * runs, runs), median(ratio + p * runs, runs));
	}
	return 0;
}
