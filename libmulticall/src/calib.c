/* SPDX-License-Identifier: MIT */
/* The calibration behind auto: read once per process from the file
 * mc-calibrate wrote for this machine, or conservative built-in choices
 * (fusion only where it cannot lose, never io_uring) when the file is
 * missing, stale or corrupt. */
#include "internal.h"
#include "formats.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <unistd.h>

#define CALIB_FORMAT SCL_MULTICALL_CALIBRATION_VERSION
#define CALIB_MAX_BYTES (1 << 20)

/* The names the file uses, shared with the Rust reader (data/formats.tsv). */
static const char *const rule_names[R_COUNT] = { SCL_MC_RULE_NAMES };
_Static_assert(SCL_MC_RULE_COUNT == R_COUNT, "data/formats.tsv's mc_rule names are enum __mc_rule's");

static const char *const ukind_names[U_COUNT] = { SCL_MC_URING_KIND_NAMES };
_Static_assert(SCL_MC_URING_KIND_COUNT == U_COUNT, "data/formats.tsv's mc_uring_kind names are enum __mc_ukind's");

const char *__mc_rule_name(unsigned rule)
{
	return rule < R_COUNT ? rule_names[rule] : "?";
}

/* ---- built-in choices ----
 * Without a calibration, a rule is used only where the crossings it saves
 * outweigh the classification it needs even when every crossing is as cheap
 * as the cheapest one measured (a write to /dev/null): eight calls for a
 * descriptor classified in the run (up to three probes, each dearer than a
 * small write), two for a registered one (one fused call for two). */
void __mc_calib_builtin(struct __mc_calib *c)
{
	static const struct {
		unsigned rule, cls, unreg, reg;
	} t[] = {
		{ R_WRITEV, FDC_FILE, 8, 2 },    { R_WRITEV, FDC_PIPE, 8, 2 },
		{ R_WRITEV, FDC_NULL, 8, 2 },
		{ R_WRITEV, FDC_USTREAM, 8, 2 },
		{ R_READV, FDC_FILE, 8, 2 },     { R_PREADV, FDC_FILE, 8, 2 },
		{ R_PWRITEV, FDC_FILE, 8, 2 },   { R_SEEK_PREAD, FDC_FILE, 8, 3 },
		{ R_SENDMMSG, FDC_DGRAM, 8, 2 }, { R_RECVMMSG, FDC_DGRAM, 8, 2 },
		{ R_COPY, FDC_FILE, 8, 8 },      { R_BATCH_SEND, FDC_DGRAM, 8, 8 },
	};
	unsigned i;

	memset(c->min_run, 0, sizeof(c->min_run));
	memset(c->uring_min, 0, sizeof(c->uring_min));
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		c->min_run[t[i].rule][t[i].cls][0] = (unsigned short)t[i].unreg;
		c->min_run[t[i].rule][t[i].cls][1] = (unsigned short)t[i].reg;
	}
	__mc_calib_finish(c);
}

void __mc_calib_finish(struct __mc_calib *c)
{
	unsigned r, k, g, u;

	for (r = 0; r < R_COUNT; r++)
		for (g = 0; g < 2; g++) {
			unsigned m = 0;

			for (k = 0; k < FDC_COUNT; k++)
				if (c->min_run[r][k][g] && (!m || c->min_run[r][k][g] < m))
					m = c->min_run[r][k][g];
			c->min_any[r][g] = (unsigned short)m;
		}
	c->any_uring = 0;
	for (u = 0; u < U_COUNT; u++)
		if (c->uring_min[u])
			c->any_uring = 1;
}

/* ---- machine identity: kernel release and version, CPU brand ---- */
static void cpu_brand(char *cpu, size_t len)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned regs[12];
	unsigned leaf, max;
	char brand[49];
	char *s, *e;

	__asm__ volatile("cpuid" : "=a"(max) : "a"(0x80000000u) : "ebx", "ecx", "edx");
	if (max >= 0x80000004u) {
		for (leaf = 0; leaf < 3; leaf++)
			__asm__ volatile("cpuid"
					 : "=a"(regs[leaf * 4]), "=b"(regs[leaf * 4 + 1]),
					   "=c"(regs[leaf * 4 + 2]), "=d"(regs[leaf * 4 + 3])
					 : "a"(0x80000002u + leaf));
		memcpy(brand, regs, 48);
		brand[48] = 0;
		for (s = brand; *s == ' '; s++)
			;
		e = s + strlen(s);
		while (e > s && (e[-1] == ' ' || e[-1] == 0))
			*--e = 0;
		snprintf(cpu, len, "%s", s);
		return;
	}
#endif
	/* Elsewhere: the first "model name" or "CPU part" of /proc/cpuinfo. */
	{
		FILE *f = fopen("/proc/cpuinfo", "re");
		char line[256];

		snprintf(cpu, len, "unknown");
		if (!f)
			return;
		while (fgets(line, sizeof(line), f)) {
			char *colon = strchr(line, ':');

			if (!colon)
				continue;
			if (!strncmp(line, "model name", 10) || !strncmp(line, "CPU part", 8)) {
				colon++;
				while (*colon == ' ' || *colon == '\t')
					colon++;
				colon[strcspn(colon, "\n")] = 0;
				snprintf(cpu, len, "%s", colon);
				break;
			}
		}
		fclose(f);
	}
}

void __mc_machine_identity(char *kernel, size_t klen, char *cpu, size_t clen)
{
	struct utsname u;

	/* Raw system calls here and below: an LD_PRELOAD runtime that wraps
	 * open/read/close may be what is making this context. */
	if (__mc_sys6(SYS_uname, (long)&u, 0, 0, 0, 0, 0) == 0)
		snprintf(kernel, klen, "%s %s %s", u.sysname, u.release, u.version);
	else
		snprintf(kernel, klen, "unknown");
	cpu_brand(cpu, clen);
}

/* ---- a small strict JSON reader ---- */
enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jnode {
	int type;
	double num;
	const char *s; /* string value or key, not terminated */
	size_t slen;
	const char *key;
	size_t klen;
	int child, next; /* indices, -1 for none */
};

struct jparser {
	const char *p, *end;
	struct jnode *nodes;
	int n, cap;
	int depth;
	int skip; /* > 0: inside a value nobody reads (checked, not kept) */
};

/* Node 0 is scratch: every node of a skipped value is made there, so the
 * measurements (most of the file, ~700 nodes) are checked for syntax but
 * cost no memory — a program pays for its first context, and a node
 * array of 4096 was 229 KiB, an mmap and a page fault per 4 KiB filled. */
#define J_SCRATCH 0
#define J_MAX_NODES 4096

/* The members of the top-level object the library reads; the others
 * (costs, measurements, ...) are for syscluster and people. */
static int jneeded(const char *key, size_t klen)
{
	static const char *const keys[] = { "format_version", "machine", "decisions" };

	for (unsigned i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strlen(keys[i]) == klen && !memcmp(keys[i], key, klen))
			return 1;
	return 0;
}

static void jws(struct jparser *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
		j->p++;
}

static int jnew(struct jparser *j, int type)
{
	int id = j->skip ? J_SCRATCH : j->n;

	if (id == j->cap) {
		/* Grown as needed, up to 4096 nodes: a file mc-calibrate wrote
		 * keeps ~60, and a small array comes from the heap malloc has. */
		struct jnode *grown = j->cap < J_MAX_NODES ? realloc(j->nodes, sizeof(*grown) * (size_t)j->cap * 2) : NULL;

		if (!grown)
			return -1;
		j->nodes = grown;
		j->cap *= 2;
	}
	memset(&j->nodes[id], 0, sizeof(j->nodes[0]));
	j->nodes[id].type = type;
	j->nodes[id].child = -1;
	j->nodes[id].next = -1;
	if (!j->skip)
		j->n++;
	return id;
}

static int jstring(struct jparser *j, const char **s, size_t *len)
{
	const char *start;

	if (j->p >= j->end || *j->p != '"')
		return -1;
	start = ++j->p;
	while (j->p < j->end && *j->p != '"') {
		if ((unsigned char)*j->p < 0x20)
			return -1;
		if (*j->p == '\\') {
			j->p++;
			if (j->p >= j->end || !strchr("\"\\/bfnrtu", *j->p))
				return -1;
		}
		j->p++;
	}
	if (j->p >= j->end)
		return -1;
	*s = start;
	*len = (size_t)(j->p - start);
	j->p++;
	return 0;
}

static int jvalue(struct jparser *j);

/* A JSON number, by hand: strtod would follow the program's locale. */
static int jnumber(struct jparser *j)
{
	const char *p = j->p;
	double v = 0, scale = 1;
	int neg = 0, digits = 0, id, e = 0, eneg = 0;

	if (p < j->end && *p == '-') {
		neg = 1;
		p++;
	}
	while (p < j->end && *p >= '0' && *p <= '9') {
		v = v * 10 + (*p++ - '0');
		digits++;
	}
	if (p < j->end && *p == '.') {
		p++;
		while (p < j->end && *p >= '0' && *p <= '9') {
			scale /= 10;
			v += (*p++ - '0') * scale;
			digits++;
		}
	}
	if (!digits)
		return -1;
	if (p < j->end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < j->end && (*p == '+' || *p == '-'))
			eneg = *p++ == '-';
		if (p >= j->end || *p < '0' || *p > '9')
			return -1;
		while (p < j->end && *p >= '0' && *p <= '9' && e < 400)
			e = e * 10 + (*p++ - '0');
		while (e--)
			v = eneg ? v / 10 : v * 10;
	}
	id = jnew(j, J_NUM);
	if (id < 0)
		return -1;
	j->nodes[id].num = neg ? -v : v;
	j->p = p;
	return id;
}

static int jcontainer(struct jparser *j, int obj)
{
	int id = jnew(j, obj ? J_OBJ : J_ARR), last = -1;
	char close = obj ? '}' : ']';

	if (id < 0 || ++j->depth > 32)
		return -1;
	j->p++;
	jws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		j->depth--;
		return id;
	}
	for (;;) {
		const char *key = NULL;
		size_t klen = 0;
		int v;

		jws(j);
		if (obj) {
			if (jstring(j, &key, &klen) < 0)
				return -1;
			jws(j);
			if (j->p >= j->end || *j->p != ':')
				return -1;
			j->p++;
		}
		/* A member of the top-level object nobody reads: parsed into
		 * the scratch node and left out of the object. */
		if (obj && j->depth == 1 && !j->skip && !jneeded(key, klen)) {
			j->skip++;
			v = jvalue(j);
			j->skip--;
			if (v < 0)
				return -1;
			goto next;
		}
		v = jvalue(j);
		if (v < 0)
			return -1;
		j->nodes[v].key = key;
		j->nodes[v].klen = klen;
		if (last < 0)
			j->nodes[id].child = v;
		else
			j->nodes[last].next = v;
		last = v;
next:
		jws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == close) {
			j->p++;
			j->depth--;
			return id;
		}
		return -1;
	}
}

static int jvalue(struct jparser *j)
{
	int id;

	jws(j);
	if (j->p >= j->end)
		return -1;
	switch (*j->p) {
	case '{':
		return jcontainer(j, 1);
	case '[':
		return jcontainer(j, 0);
	case '"':
		id = jnew(j, J_STR);
		if (id < 0 || jstring(j, &j->nodes[id].s, &j->nodes[id].slen) < 0)
			return -1;
		return id;
	case 't':
	case 'f':
	case 'n': {
		static const char *const words[] = { "true", "false", "null" };
		for (int w = 0; w < 3; w++) {
			size_t l = strlen(words[w]);

			if ((size_t)(j->end - j->p) >= l && !memcmp(j->p, words[w], l)) {
				id = jnew(j, w == 2 ? J_NULL : J_BOOL);
				if (id < 0)
					return -1;
				j->nodes[id].num = w == 0;
				j->p += l;
				return id;
			}
		}
		return -1;
	}
	default:
		return jnumber(j);
	}
}

static int jget(const struct jparser *j, int obj, const char *key)
{
	size_t kl = strlen(key);
	int c;

	if (obj < 0 || j->nodes[obj].type != J_OBJ)
		return -1;
	for (c = j->nodes[obj].child; c >= 0; c = j->nodes[c].next)
		if (j->nodes[c].klen == kl && !memcmp(j->nodes[c].key, key, kl))
			return c;
	return -1;
}

static int jstreq(const struct jparser *j, int id, const char *s)
{
	/* Compares the raw text: the identity strings are written unescaped
	 * except for quotes and backslashes, which are compared escaped. */
	char esc[512];
	size_t o = 0;

	for (; *s && o + 2 < sizeof(esc); s++) {
		if (*s == '"' || *s == '\\')
			esc[o++] = '\\';
		esc[o++] = *s;
	}
	esc[o] = 0;
	return id >= 0 && j->nodes[id].type == J_STR && j->nodes[id].slen == o &&
	       !memcmp(j->nodes[id].s, esc, o);
}

static int jint(const struct jparser *j, int id, unsigned max, unsigned short *out)
{
	double v;

	if (id < 0 || j->nodes[id].type != J_NUM)
		return -1;
	v = j->nodes[id].num;
	if (v < 0 || v > max || v != (double)(unsigned)v)
		return -1;
	*out = (unsigned short)v;
	return 0;
}

/* Returns MC_CALIB_FILE, _STALE or _CORRUPT and fills c on FILE. */
int __mc_calib_parse(struct __mc_calib *c, const char *text, size_t len, const char *kernel,
		     const char *cpu)
{
	/* Node 0 is scratch (above). */
	struct jparser j = { text, text + len, NULL, J_SCRATCH + 1, 128, 0, 0 };
	struct __mc_calib tmp;
	int root, v, machine, dec, mr, um, ret = MC_CALIB_CORRUPT;
	unsigned short fmt;
	unsigned r, k;

	j.nodes = malloc(sizeof(*j.nodes) * (size_t)j.cap);
	if (!j.nodes)
		return MC_CALIB_CORRUPT;
	root = jvalue(&j);
	jws(&j);
	if (root < 0 || j.p != j.end || j.nodes[root].type != J_OBJ)
		goto out;
	if (jint(&j, jget(&j, root, "format_version"), 1000, &fmt) < 0)
		goto out;
	if (fmt != CALIB_FORMAT) {
		ret = MC_CALIB_STALE;
		goto out;
	}
	machine = jget(&j, root, "machine");
	if (machine < 0)
		goto out;
	v = jget(&j, machine, "kernel");
	if (v < 0 || j.nodes[v].type != J_STR || jget(&j, machine, "cpu") < 0)
		goto out;
	if (!jstreq(&j, v, kernel) || !jstreq(&j, jget(&j, machine, "cpu"), cpu)) {
		ret = MC_CALIB_STALE;
		goto out;
	}
	dec = jget(&j, root, "decisions");
	mr = jget(&j, dec, "min_run");
	um = jget(&j, dec, "uring_min");
	/* min_run an object: anything else (a number, an array) used to pass
	 * as "no rule", where syscluster's reader refuses it. */
	if (mr < 0 || um < 0 || j.nodes[mr].type != J_OBJ)
		goto out;
	memset(&tmp, 0, sizeof(tmp));
	/* Every entry "rule.class": [unregistered, registered]; absent pairs
	 * mean never. */
	for (v = j.nodes[mr].child; v >= 0; v = j.nodes[v].next) {
		char name[64];
		const char *dot;
		int e0, e1;

		if (j.nodes[v].klen >= sizeof(name) || j.nodes[v].type != J_ARR)
			goto out;
		memcpy(name, j.nodes[v].key, j.nodes[v].klen);
		name[j.nodes[v].klen] = 0;
		dot = strchr(name, '.');
		if (!dot)
			goto out;
		for (r = 0; r < R_COUNT; r++)
			if (strlen(rule_names[r]) == (size_t)(dot - name) &&
			    !strncmp(name, rule_names[r], (size_t)(dot - name)))
				break;
		for (k = 0; k < FDC_COUNT; k++)
			if (!strcmp(dot + 1, __mc_fdclass_name(k)))
				break;
		if (r == R_COUNT || k == FDC_COUNT)
			goto out;
		e0 = j.nodes[v].child;
		e1 = e0 >= 0 ? j.nodes[e0].next : -1;
		if (e1 < 0 || j.nodes[e1].next >= 0 ||
		    jint(&j, e0, 65535, &tmp.min_run[r][k][0]) < 0 ||
		    jint(&j, e1, 65535, &tmp.min_run[r][k][1]) < 0)
			goto out;
	}
	for (k = 0; k < U_COUNT; k++)
		if (jint(&j, jget(&j, um, ukind_names[k]), 65535, &tmp.uring_min[k]) < 0)
			goto out;
	memcpy(c->min_run, tmp.min_run, sizeof(tmp.min_run));
	memcpy(c->uring_min, tmp.uring_min, sizeof(tmp.uring_min));
	__mc_calib_finish(c);
	ret = MC_CALIB_FILE;
out:
	free(j.nodes);
	return ret;
}

/* ---- loading, once per process ---- */
static pthread_once_t calib_once = PTHREAD_ONCE_INIT;
static struct __mc_calib calib;

static void calib_path(char *path, size_t len)
{
	const char *env = secure_getenv(MC_CALIBRATION_ENV);
	const char *base;

	if (env) {
		snprintf(path, len, "%s", env);
		return;
	}
	base = secure_getenv("XDG_CACHE_HOME");
	if (base && *base) {
		snprintf(path, len, "%s/syscluster/multicall-calibration.json", base);
		return;
	}
	base = secure_getenv("HOME");
	if (base && *base)
		snprintf(path, len, "%s/.cache/syscluster/multicall-calibration.json", base);
	else
		path[0] = 0;
}

static void calib_load(void)
{
	char kernel[512], cpu[128];
	char *text;
	ssize_t r;
	size_t len = 0, cap = 16384;
	int fd, full = 0;

	__mc_calib_builtin(&calib);
	calib.status = MC_CALIB_BUILTIN;
	calib_path(calib.path, sizeof(calib.path));
	if (!calib.path[0] || !strcmp(calib.path, "none"))
		return;
	fd = (int)__mc_sys6(SYS_openat, AT_FDCWD, (long)calib.path, O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0) {
		if (fd != -ENOENT && fd != -ENOTDIR)
			calib.status = MC_CALIB_CORRUPT;
		return;
	}
	/* A buffer the size of a file mc-calibrate writes (~6 KiB), doubled
	 * while it fills, up to the limit: a 1 MiB one at once was an mmap,
	 * an munmap and their page faults in every program's first context. */
	text = malloc(cap);
	while (text) {
		r = __mc_sys6(SYS_read, fd, (long)(text + len), (long)(cap - len), 0, 0, 0);
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == cap) {
			char *t = cap < CALIB_MAX_BYTES ? realloc(text, cap * 2) : NULL;

			if (!t) {
				full = 1; /* at the limit, or out of memory: corrupt */
				break;
			}
			text = t;
			cap *= 2;
		}
	}
	__mc_sys6(SYS_close, fd, 0, 0, 0, 0, 0);
	if (!text || full) {
		calib.status = MC_CALIB_CORRUPT;
	} else {
		__mc_machine_identity(kernel, sizeof(kernel), cpu, sizeof(cpu));
		calib.status = (unsigned)__mc_calib_parse(&calib, text, len, kernel, cpu);
		if (calib.status != MC_CALIB_FILE)
			__mc_calib_builtin(&calib);
	}
	free(text);
}

const struct __mc_calib *__mc_calibration(void)
{
	int saved = errno;

	pthread_once(&calib_once, calib_load);
	errno = saved;
	return &calib;
}
