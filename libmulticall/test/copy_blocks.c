/* SPDX-License-Identifier: MIT */
/*
 * Description: mc-calibrate's copy-block.file, the fused copy's cost per
 * block at each block size (what the compiler plugin prices a copy loop
 * by): measured by a quick calibration, every figure is there and positive,
 * the sizes ascend and include 4, 8 and 16 KiB, and a block of 16 times
 * the bytes costs more per block, read+write and fused alike (the bytes
 * move once or twice more; a crossing is not worth 15 blocks' bytes).  No
 * figure is compared with a time.  And costs_ns.first_fusion_context, the
 * first context of a priced copy between two files: there, positive and
 * below first_context (an auto context, which also reads the calibration
 * and probes /dev/multicall).  And costs_ns.fused_copy_fixed, the fused
 * copy's fixed cost beyond its saving per block (the gate, the probes, the
 * read taken back, the buffer refilled): there, measured (a number, not
 * null) and not negative.  The scratch files it copies are gone
 * afterwards.  Needs build/mc-calibrate (MC_BUILD names the build directory).
 */
#include "harness.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 32

/* The numbers of the array KEY in the object starting at obj ("null" is
 * NaN); -1 when it is not there. */
static int numbers(const char *obj, const char *key, double *out)
{
	char want[64];
	const char *p, *end = strchr(obj, '}');
	int n = 0;

	snprintf(want, sizeof(want), "\"%s\": [", key);
	p = strstr(obj, want);
	if (!p || !end || p > end)
		return -1;
	p += strlen(want);
	while (*p != ']' && n < MAXN) {
		char *e;

		while (*p == ' ' || *p == ',')
			p++;
		if (!strncmp(p, "null", 4)) {
			out[n++] = -1;
			p += 4;
			continue;
		}
		out[n++] = strtod(p, &e);
		if (e == p)
			return -1;
		p = e;
	}
	return n;
}

int main(void)
{
	char tool[512], dir[] = "/tmp/mc-blocks-XXXXXX", cmd[1400], path[600];
	static char text[1 << 20];
	double bytes[MAXN], direct[MAXN], fused[MAXN];
	int n, nd, nf, has4 = 0, has8 = 0, has16 = 0;
	struct dirent *e;
	const char *obj;
	size_t len;
	FILE *f;
	DIR *d;

	t_mc_calibrate(tool, sizeof(tool));
	if (!mkdtemp(dir))
		return T_EXIT_FAIL;
	snprintf(path, sizeof(path), "%s/measured.json", dir);
	snprintf(cmd, sizeof(cmd), "%s --quick --dir %s -o %s >/dev/null 2>&1", tool, dir, path);
	T_ASSERT(system(cmd) == 0, "mc-calibrate --quick failed (it checks the file it wrote)");
	f = fopen(path, "r");
	T_ASSERT(f != NULL, "no %s", path);
	len = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
	if (f)
		fclose(f);
	text[len] = 0;
	{
		const char *ff = strstr(text, "\"first_fusion_context\": "), *fc = strstr(text, "\"first_context\": ");
		double fusion = ff ? strtod(ff + strlen("\"first_fusion_context\": "), NULL) : 0;
		double first = fc ? strtod(fc + strlen("\"first_context\": "), NULL) : 0;

		T_ASSERT(ff && fc, "costs_ns lacks first_fusion_context or first_context");
		T_ASSERT(fusion > 0 && first > 0, "first_fusion_context %.1f, first_context %.1f ns (not measured?)",
			 fusion, first);
		T_ASSERT(fusion < first, "a fusion context (%.1f ns) costs no less than an auto one (%.1f ns)", fusion,
			 first);
	}
	{
		const char *fx = strstr(text, "\"fused_copy_fixed\": ");
		const char *num = fx ? fx + strlen("\"fused_copy_fixed\": ") : NULL;
		char *end = NULL;
		double fixed = num ? strtod(num, &end) : -1;

		T_ASSERT(fx != NULL, "costs_ns lacks fused_copy_fixed");
		T_ASSERT(num && end != num, "fused_copy_fixed is not a number (not measured?)");
		T_ASSERT(fixed >= 0, "fused_copy_fixed %.1f ns is negative", fixed);
	}
	obj = strstr(text, "{\"kind\": \"copy-block.file\"");
	T_ASSERT(obj != NULL, "no copy-block.file measurement");
	if (obj) {
		n = numbers(obj, "block_bytes", bytes);
		nd = numbers(obj, "direct_ns", direct);
		nf = numbers(obj, "fusion_ns", fused);
		T_ASSERT(n >= 6 && nd == n && nf == n, "block_bytes %d, direct_ns %d, fusion_ns %d numbers", n, nd, nf);
		for (int i = 0; i < n && nd == n && nf == n; i++) {
			T_ASSERT(direct[i] > 0 && fused[i] > 0, "%.0f B: direct %.1f, fused %.1f ns (not measured?)",
				 bytes[i], direct[i], fused[i]);
			T_ASSERT(i == 0 || bytes[i] > bytes[i - 1], "block_bytes not ascending at %.0f", bytes[i]);
			has4 |= bytes[i] == 4096;
			has8 |= bytes[i] == 8192;
			has16 |= bytes[i] == 16384;
			for (int j = i + 1; j < n; j++)
				if (bytes[j] >= 16 * bytes[i]) {
					T_ASSERT(direct[j] > direct[i], "read+write: %.0f B %.1f ns, %.0f B %.1f ns per block",
						 bytes[i], direct[i], bytes[j], direct[j]);
					T_ASSERT(fused[j] > fused[i], "fused: %.0f B %.1f ns, %.0f B %.1f ns per block",
						 bytes[i], fused[i], bytes[j], fused[j]);
				}
		}
		T_ASSERT(has4 && has8 && has16, "4096, 8192 or 16384 B not measured");
	}
	/* Only the file written is left: the copies' scratch files are gone. */
	d = opendir(dir);
	T_ASSERT(d != NULL, "opendir %s", dir);
	while (d && (e = readdir(d)))
		T_ASSERT(e->d_name[0] == '.' || !strcmp(e->d_name, "measured.json"), "%s left in %s", e->d_name,
			 dir);
	if (d)
		closedir(d);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		t_fail("cleanup");
	return t_finish();
}
