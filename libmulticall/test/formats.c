/* SPDX-License-Identifier: MIT */
/*
 * Description: libmulticall reads its calibration as syscluster's Rust
 * reader does.  Every fixture of tests/fixtures/formats/multicall-calibration
 * (the Rust test crates/advise/tests/formats.rs reads the same files), with
 * this machine's identity put in for @KERNEL@ and @CPU@, is checked with
 * mc-calibrate --check (the library's own parser): a file whose .expect
 * says valid must be valid here, stale ones stale, corrupt ones corrupt.
 * Needs build/mc-calibrate (MC_BUILD names the build directory).
 */
#include "harness.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIXTURES "../tests/fixtures/formats/multicall-calibration"

static char tool[512];

static size_t slurp(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f) {
		t_fail("cannot open %s", path);
		buf[0] = 0;
		return 0;
	}
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = 0;
	return n;
}

/* The JSON string after "key": in text, quotes and escapes kept. */
static void json_string(const char *text, const char *key, char *out, size_t size)
{
	const char *p = strstr(text, key), *e;

	T_ASSERT(p && (p = strchr(p + strlen(key), '"')) != NULL, "no %s in %s", key, text);
	for (e = p + 1; *e && *e != '"'; e++)
		if (*e == '\\' && e[1])
			e++;
	T_ASSERT(*e == '"' && (size_t)(e - p + 1) < size, "bad %s in %s", key, text);
	memcpy(out, p, (size_t)(e - p + 1));
	out[e - p + 1] = 0;
}

/* text with every occurrence of from replaced by to, into out. */
static void replace(const char *text, const char *from, const char *to, char *out, size_t size)
{
	size_t fl = strlen(from), tl = strlen(to), o = 0;

	while (*text) {
		if (!strncmp(text, from, fl)) {
			T_ASSERT(o + tl < size, "fixture too large");
			memcpy(out + o, to, tl);
			o += tl;
			text += fl;
		} else {
			T_ASSERT(o + 1 < size, "fixture too large");
			out[o++] = *text++;
		}
	}
	out[o] = 0;
}

/* mc-calibrate --check's verdict on path: valid, stale or corrupt. */
static const char *verdict(const char *path)
{
	static char line[1024];
	char cmd[1200];
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s --check %s 2>&1", tool, path);
	p = popen(cmd, "r");
	T_ASSERT(p != NULL, "popen %s", cmd);
	if (!p)
		return "?";
	if (!fgets(line, sizeof(line), p))
		line[0] = 0;
	st = pclose(p);
	if (strstr(line, ": valid for this machine") && st == 0)
		return "valid";
	if (strstr(line, ": stale") && st != 0)
		return "stale";
	if (strstr(line, ": corrupt") && st != 0)
		return "corrupt";
	t_fail("mc-calibrate --check %s said %s", path, line);
	return "?";
}

int main(void)
{
	const char *build = getenv("MC_BUILD");
	static char machine[2048], kernel[600], cpu[300], text[1 << 16], a[1 << 16], b[1 << 16], expect[1024];
	char dir[] = "/tmp/mc-formats-XXXXXX", path[1200], tmp[600];
	struct dirent *d;
	struct stat st;
	FILE *p;
	DIR *dp;
	int n = 0;

	if (!build)
		build = "build";
	snprintf(tool, sizeof(tool), "%s/mc-calibrate", build);
	T_ASSERT(stat(tool, &st) == 0, "%s is not built", tool);
	snprintf(path, sizeof(path), "%s --machine", tool);
	p = popen(path, "r");
	T_ASSERT(p && fgets(machine, sizeof(machine), p), "mc-calibrate --machine");
	if (p)
		pclose(p);
	if (t_failures)
		return T_EXIT_FAIL;
	json_string(machine, "\"kernel\":", kernel, sizeof(kernel));
	json_string(machine, "\"cpu\":", cpu, sizeof(cpu));
	T_ASSERT(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(tmp, sizeof(tmp), "%s/calibration.json", dir);
	dp = opendir(FIXTURES);
	T_ASSERT(dp != NULL, "cannot open %s", FIXTURES);
	if (t_failures)
		return T_EXIT_FAIL;
	while ((d = readdir(dp))) {
		size_t l = strlen(d->d_name);
		const char *got;
		FILE *f;

		if (l < 6 || strcmp(d->d_name + l - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", FIXTURES, d->d_name);
		slurp(path, text, sizeof(text));
		replace(text, "\"@KERNEL@\"", kernel, a, sizeof(a));
		replace(a, "\"@CPU@\"", cpu, b, sizeof(b));
		f = fopen(tmp, "w");
		T_ASSERT(f && fputs(b, f) >= 0 && fclose(f) == 0, "write %s", tmp);
		snprintf(path + strlen(path) - 5, 8, ".expect");
		slurp(path, expect, sizeof(expect));
		got = verdict(tmp);
		if (strncmp(expect, got, strlen(got)) || (expect[strlen(got)] != ':' && expect[strlen(got)] != '\n'))
			t_fail("%s: libmulticall finds it %s, the fixture says %s", d->d_name, got, expect);
		n++;
	}
	closedir(dp);
	unlink(tmp);
	rmdir(dir);
	T_ASSERT(n >= 20, "only %d fixtures in %s", n, FIXTURES);
	return t_failures ? T_EXIT_FAIL : T_EXIT_PASS;
}
