/* SPDX-License-Identifier: MIT */
/* Tests that fail closed, for every C test of the tree (libmulticall's
 * harness, libmulticall/test/harness.h, and so the kernel module's tests);
 * tests/lib/require.sh is the same for shell tests (the preload library's
 * among them), docs/TESTING.md the convention.
 *
 * Exit codes as liburing's tests: 0 pass, 1 fail, 77 skip.  A test skips
 * only for a capability this machine lacks, and names it on its first
 * line ("SKIP CAP: why"); where the capability is required -- named in
 * SYSCLUSTER_REQUIRE (comma-separated) or CI=true, where every capability
 * is -- it fails instead ("FAIL CAP required: why"). */
#ifndef SC_TEST_REQUIRE_H
#define SC_TEST_REQUIRE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T_EXIT_PASS 0
#define T_EXIT_FAIL 1
#define T_EXIT_SKIP 77

/* Is what one of the names of a comma-separated list? */
static inline int t_in_list(const char *list, const char *what)
{
	size_t len = strlen(what);

	while (list && *list) {
		const char *end = strchr(list, ',');
		size_t n = end ? (size_t)(end - list) : strlen(list);

		if (n == len && !strncmp(list, what, n))
			return 1;
		list = end ? end + 1 : NULL;
	}
	return 0;
}

/* Is this capability named in SYSCLUSTER_REQUIRE? */
static inline int t_required(const char *cap)
{
	return t_in_list(getenv("SYSCLUSTER_REQUIRE"), cap);
}

/* Does this run require every capability a test names (CI=true)? */
static inline int t_ci(void)
{
	const char *ci = getenv("CI");

	return ci && !strcmp(ci, "true");
}

/* A capability the test needs is missing: skip (77), or fail (1) where it
 * is required. */
__attribute__((format(printf, 2, 3), noreturn)) static inline void t_need(const char *cap, const char *fmt, ...)
{
	va_list ap;
	int req = t_required(cap) || t_ci();

	printf(req ? "FAIL %s required: " : "SKIP %s: ", cap);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	exit(req ? T_EXIT_FAIL : T_EXIT_SKIP);
}

#endif
