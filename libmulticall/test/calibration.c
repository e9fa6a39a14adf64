/* SPDX-License-Identifier: MIT */
/*
 * Description: the calibration behind auto.  A file written by
 * mc-calibrate for this machine is used (the plan of a short run of writes
 * follows its decisions); a missing file, a corrupt one (not JSON, cut
 * short, wrong types, an unknown rule), a stale one (another kernel or
 * CPU, another format version) fall back to the built-in choices, and
 * mc_ctx_info says which.  The file is read once per process, so each case
 * runs in a child.  Needs build/mc-calibrate (MC_BUILD names the build
 * directory).
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tool[512], dir[] = "/tmp/mc-calib-XXXXXX";

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f))
		t_fail("write %s", path);
}

static char *read_text(const char *path)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = 0;
	return buf;
}

/* The eager file's text copied into text, for a case to edit: where needle
 * stands in it.  A file without the needle fails the test rather than
 * leaving the case it was for untried. */
static char *eager_at(char *text, size_t size, const char *eager, const char *needle)
{
	char *p;

	snprintf(text, size, "%s", read_text(eager));
	p = strstr(text, needle);
	T_ASSERT(p != NULL, "no %s in the eager file", needle);
	return p;
}

/* In a child: the status auto sees, and the mechanism it plans for n
 * writes of 8 bytes to a fresh file.  Encoded as status * 100 + mech. */
static int probe(const char *env_name, const char *env_value, unsigned n)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		struct mc_ctx *ctx;
		struct mc_info info;
		struct mc_call c[16];
		struct mc_step s[16];
		char path[600];
		int fd;

		unsetenv(MC_CALIBRATION_ENV);
		if (env_name)
			setenv(env_name, env_value, 1);
		ctx = mc_ctx_new(MC_BACKEND_AUTO);
		snprintf(path, sizeof(path), "%s/probe", dir);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (!ctx || fd < 0)
			_exit(255);
		for (unsigned i = 0; i < n; i++)
			mc_prep_write(&c[i], fd, "12345678", 8);
		if (mc_explain(ctx, c, n, s, 16) < 1 || mc_ctx_info(ctx, &info) < 0)
			_exit(254);
		_exit((int)(info.calibration * 100 + s[0].mech) & 0xff);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int run_tool(const char *args)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "%s %s >/dev/null 2>&1", tool, args);
	return system(cmd);
}

#define CODE(status, mech) ((int)((status) * 100 + (mech)) & 0xff)

int main(void)
{
	char path[1400], eager[600], never[600], text[1 << 16], *p;

	t_mc_calibrate(tool, sizeof(tool));
	if (!mkdtemp(dir))
		return T_EXIT_FAIL;
	snprintf(eager, sizeof(eager), "%s/eager.json", dir);
	snprintf(never, sizeof(never), "%s/never.json", dir);
	snprintf(path, sizeof(path), "-o %s --decisions=eager", eager);
	T_ASSERT(run_tool(path) == 0, "mc-calibrate --decisions=eager failed");
	snprintf(path, sizeof(path), "-o %s --decisions=never", never);
	T_ASSERT(run_tool(path) == 0, "mc-calibrate --decisions=never failed");
	snprintf(path, sizeof(path), "--check %s", eager);
	T_ASSERT(run_tool(path) == 0, "--check rejects the file it wrote");

	/* built-in: two writes stay two writes, sixteen become a writev */
	T_ASSERT(probe(MC_CALIBRATION_ENV, "none", 2) == CODE(MC_CALIB_BUILTIN, MC_MECH_DIRECT),
		 "none/2");
	T_ASSERT(probe(MC_CALIBRATION_ENV, "none", 16) == CODE(MC_CALIB_BUILTIN, MC_MECH_WRITEV),
		 "none/16");
	snprintf(path, sizeof(path), "%s/absent.json", dir);
	T_ASSERT(probe(MC_CALIBRATION_ENV, path, 2) == CODE(MC_CALIB_BUILTIN, MC_MECH_DIRECT),
		 "missing file");
	/* a file for this machine is followed */
	T_ASSERT(probe(MC_CALIBRATION_ENV, eager, 2) == CODE(MC_CALIB_FILE, MC_MECH_WRITEV),
		 "eager/2");
	T_ASSERT(probe(MC_CALIBRATION_ENV, never, 16) == CODE(MC_CALIB_FILE, MC_MECH_DIRECT),
		 "never/16");
	/* the default place: $XDG_CACHE_HOME/syscluster/ */
	snprintf(path, sizeof(path), "mkdir -p %s/xdg/syscluster && cp %s %s/xdg/syscluster/multicall-calibration.json",
		 dir, eager, dir);
	T_ASSERT(system(path) == 0, "copy");
	snprintf(path, sizeof(path), "%s/xdg", dir);
	T_ASSERT(probe("XDG_CACHE_HOME", path, 2) == CODE(MC_CALIB_FILE, MC_MECH_WRITEV),
		 "XDG_CACHE_HOME");

	/* corrupt files */
	{
		static const char *const bad[] = {
			"",
			"{ not json",
			"[1, 2, 3]",
			"{\"format_version\": \"one\"}",
			"{\"format_version\": 1}",
		};

		for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			snprintf(path, sizeof(path), "%s/bad%u.json", dir, i);
			write_text(path, bad[i]);
			T_ASSERT(probe(MC_CALIBRATION_ENV, path, 16) ==
					 CODE(MC_CALIB_CORRUPT, MC_MECH_WRITEV),
				 "corrupt file %u accepted", i);
		}
	}
	snprintf(text, sizeof(text), "%s", read_text(eager));
	/* cut short */
	text[strlen(text) / 2] = 0;
	snprintf(path, sizeof(path), "%s/cut.json", dir);
	write_text(path, text);
	T_ASSERT(probe(MC_CALIBRATION_ENV, path, 2) == CODE(MC_CALIB_CORRUPT, MC_MECH_DIRECT), "cut");
	/* an unknown rule */
	p = eager_at(text, sizeof(text), eager, "\"writev.file\"");
	if (p) {
		memcpy(p + 1, "wrxtev", 6);
		snprintf(path, sizeof(path), "%s/rule.json", dir);
		write_text(path, text);
		T_ASSERT(probe(MC_CALIBRATION_ENV, path, 2) == CODE(MC_CALIB_CORRUPT, MC_MECH_DIRECT),
			 "unknown rule accepted");
	}
	/* a negative threshold */
	p = eager_at(text, sizeof(text), eager, "[2, 2]");
	if (p) {
		memcpy(p, "[-2,2]", 6);
		snprintf(path, sizeof(path), "%s/neg.json", dir);
		write_text(path, text);
		T_ASSERT(probe(MC_CALIBRATION_ENV, path, 2) == CODE(MC_CALIB_CORRUPT, MC_MECH_DIRECT),
			 "negative threshold accepted");
	}
	/* stale: another kernel; another format */
	p = eager_at(text, sizeof(text), eager, "\"kernel\": \"");
	if (p) {
		p[11] = p[11] == 'X' ? 'Y' : 'X';
		snprintf(path, sizeof(path), "%s/stale.json", dir);
		write_text(path, text);
		T_ASSERT(probe(MC_CALIBRATION_ENV, path, 2) == CODE(MC_CALIB_STALE, MC_MECH_DIRECT),
			 "another kernel accepted");
		snprintf(path, sizeof(path), "--check %s/stale.json", dir);
		T_ASSERT(run_tool(path) != 0, "--check accepts a stale file");
	}
	p = eager_at(text, sizeof(text), eager, "\"format_version\": 1");
	if (p) {
		p[18] = '2';
		snprintf(path, sizeof(path), "%s/v2.json", dir);
		write_text(path, text);
		T_ASSERT(probe(MC_CALIBRATION_ENV, path, 2) == CODE(MC_CALIB_STALE, MC_MECH_DIRECT),
			 "format 2 accepted");
	}
	/* bad tool input: one line, non-zero exit */
	T_ASSERT(run_tool("--decisions=sometimes") != 0, "bad --decisions accepted");
	T_ASSERT(run_tool("--dir /nonexistent/x --stdout") != 0, "bad --dir accepted");
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	if (system(path) != 0)
		t_fail("cleanup");
	return t_finish();
}
