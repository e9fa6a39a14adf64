/* SPDX-License-Identifier: MIT */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int t_failures;

const unsigned t_backends[] = {
	MC_BACKEND_DIRECT, MC_BACKEND_FUSION, MC_BACKEND_URING, MC_BACKEND_AUTO, MC_BACKEND_KMOD,
};
const unsigned t_nbackends = sizeof(t_backends) / sizeof(t_backends[0]);

void t_fail(const char *fmt, ...)
{
	va_list ap;

	t_failures++;
	fprintf(stderr, "FAIL ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (fmt[strlen(fmt) - 1] != ' ')
		fputc('\n', stderr);
}

int t_finish(void)
{
	return t_failures ? T_EXIT_FAIL : T_EXIT_PASS;
}

struct mc_ctx *t_ctx(unsigned backend)
{
	static int warned[MC_BACKEND_COUNT];
	struct mc_ctx *ctx;
	int r = mc_ctx_init(&ctx, backend);

	if (r < 0) {
		if (!warned[backend]) {
			/* io_uring can be disabled (io_uring_disabled sysctl, seccomp),
			 * the kernel module is only in the guest: such a backend is not
			 * compared, and says so -- unless it is required here. */
			if (t_required(mc_backend_name(backend)))
				t_fail("backend %s is required (SYSCLUSTER_REQUIRE) but unavailable: %s",
				       mc_backend_name(backend), strerror(-r));
			else
				printf("note: backend %s unavailable here (%s); not compared\n",
				       mc_backend_name(backend), strerror(-r));
			warned[backend] = 1;
		}
		return NULL;
	}
	return ctx;
}

unsigned t_backend_of(struct mc_ctx *ctx)
{
	struct mc_info info;

	mc_ctx_info(ctx, &info);
	return info.backend;
}

struct mc_stats t_stats(struct mc_ctx *ctx)
{
	struct mc_stats s;

	mc_ctx_stats(ctx, &s);
	return s;
}

/* Loopback delivers in a softirq, which a busy kernel (the module's TCG
 * guest) can leave to ksoftirqd: what tx sent must be queued before a
 * program runs and before a queue is drained, on every backend alike.  A
 * datagram to another socket, delivered after the others, says when. */
void t_udp_settle(int tx, const struct sockaddr *to, socklen_t tolen)
{
	struct sockaddr_storage ba;
	socklen_t bl = tolen;
	int barrier;
	struct pollfd pf;

	if (to->sa_family != AF_INET || tolen > sizeof(ba))
		return; /* AF_UNIX delivers in the sendto itself */
	memcpy(&ba, to, tolen);
	((struct sockaddr_in *)&ba)->sin_port = 0;
	barrier = socket(AF_INET, SOCK_DGRAM, 0);
	bind(barrier, (struct sockaddr *)&ba, bl);
	getsockname(barrier, (struct sockaddr *)&ba, &bl);
	sendto(tx, "", 0, 0, (struct sockaddr *)&ba, bl);
	pf = (struct pollfd){ barrier, POLLIN, 0 };
	poll(&pf, 1, 2000);
	close(barrier);
}

uint64_t t_hash(const void *p, size_t len)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 1099511628211ULL;
	}
	return h ^ len;
}

void t_rec(struct t_outcome *o, const char *label, long long v)
{
	if (o->nvalues == T_MAX_VALUES) {
		t_fail("outcome full at %s", label);
		return;
	}
	snprintf(o->label[o->nvalues], sizeof(o->label[0]), "%s", label);
	o->value[o->nvalues++] = v;
}

void t_rec_calls(struct t_outcome *o, const char *label, const struct mc_call *c, unsigned n)
{
	char l[48];

	for (unsigned i = 0; i < n; i++) {
		snprintf(l, sizeof(l), "%s[%u].result", label, i);
		t_rec(o, l, c[i].result);
	}
}

void t_rec_file(struct t_outcome *o, const char *label, const char *path)
{
	char l[48];
	int fd = open(path, O_RDONLY);
	char *buf;
	size_t len = 0, cap = 1 << 16;
	ssize_t r;

	snprintf(l, sizeof(l), "%s.size", label);
	if (fd < 0) {
		t_rec(o, l, -errno);
		return;
	}
	buf = malloc(cap);
	while ((r = read(fd, buf + len, cap - len)) > 0) {
		len += (size_t)r;
		if (len == cap)
			buf = realloc(buf, cap *= 2);
	}
	close(fd);
	t_rec(o, l, (long long)len);
	snprintf(l, sizeof(l), "%s.hash", label);
	t_rec(o, l, (long long)t_hash(buf, len));
	free(buf);
}

void t_rec_fd_offset(struct t_outcome *o, const char *label, int fd)
{
	off_t off = lseek(fd, 0, SEEK_CUR);

	t_rec(o, label, off < 0 ? -errno : (long long)off);
}

void t_rec_mem(struct t_outcome *o, const char *label, const void *p, size_t len)
{
	t_rec(o, label, (long long)t_hash(p, len));
}

void t_rec_drain(struct t_outcome *o, const char *label, int fd)
{
	char buf[65536], l[48];
	uint64_t h = 0;
	long total = 0, pieces = 0;
	int fl = fcntl(fd, F_GETFL);
	ssize_t r;

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		h = h * 31 + t_hash(buf, (size_t)r);
		total += r;
		pieces++;
	}
	fcntl(fd, F_SETFL, fl);
	snprintf(l, sizeof(l), "%s.bytes", label);
	t_rec(o, l, total);
	snprintf(l, sizeof(l), "%s.hash", label);
	t_rec(o, l, (long long)h);
	(void)pieces;
}

char *t_path(const char *dir, const char *name)
{
	static char bufs[8][512];
	static unsigned k;
	char *b = bufs[k++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s", dir, name);
	return b;
}

void t_mc_calibrate(char *path, size_t len)
{
	const char *build = getenv("MC_BUILD");
	struct stat st;

	snprintf(path, len, "%s/mc-calibrate", build ? build : "build");
	if (stat(path, &st) < 0)
		t_need("mc-calibrate", "%s not built", path);
}

void t_write_file(const char *path, size_t size, unsigned seed)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char buf[4096];
	size_t done = 0;

	if (fd < 0) {
		t_fail("create %s: %s", path, strerror(errno));
		return;
	}
	while (done < size) {
		size_t n = size - done < sizeof(buf) ? size - done : sizeof(buf);

		for (size_t i = 0; i < n; i++)
			buf[i] = (char)((done + i) * 2654435761u + seed);
		if (write(fd, buf, n) != (ssize_t)n) {
			t_fail("write %s: %s", path, strerror(errno));
			break;
		}
		done += n;
	}
	close(fd);
}

int t_open(const char *path, int flags)
{
	int fd = open(path, flags, 0644);

	if (fd < 0)
		t_fail("open %s: %s", path, strerror(errno));
	return fd;
}

void *t_bad_ptr(void)
{
	static void *p;

	if (!p)
		p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p;
}

int t_open_null(const char *dir)
{
	struct stat sb;
	char path[600];
	int fd = open("/dev/null", O_RDWR);

	if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISCHR(sb.st_mode) && major(sb.st_rdev) == 1 &&
	    minor(sb.st_rdev) == 3)
		return fd;
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/null", dir);
	if (mknod(path, S_IFCHR | 0600, makedev(1, 3)) == 0) {
		fd = open(path, O_RDWR);
		unlink(path);
		return fd;
	}
	return open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
}

void *t_half_bad(size_t len)
{
	static char *p;

	if (!p) {
		p = mmap(NULL, 16384, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		mprotect(p + 8192, 8192, PROT_NONE);
	}
	return p + 8192 - len / 2;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static const char *tmp_base(void)
{
	const char *b = getenv("MC_TEST_TMPDIR");

	if (!b)
		b = getenv("TMPDIR");
	return b ? b : "/tmp";
}

/* MC_TEST_BACKENDS (a comma-separated list of backend names) limits the
 * backends compared with direct: the kernel module's guest compares kmod
 * only, since under TCG loopback datagrams arrive later than the other
 * backends' timing-dependent paths expect (they are compared on the host). */
int t_compared(unsigned backend)
{
	const char *only = getenv("MC_TEST_BACKENDS");

	return !only || t_in_list(only, mc_backend_name(backend));
}

int t_compare(const char *what, t_scenario fn, void *arg)
{
	static struct t_outcome ref, got;
	int bad = 0;

	for (unsigned b = 0; b < t_nbackends; b++) {
		struct t_outcome *o = b == 0 ? &ref : &got;
		struct mc_ctx *ctx;
		char dir[512];

		if (b > 0 && !t_compared(t_backends[b]))
			continue;
		ctx = t_ctx(t_backends[b]);

		if (!ctx) {
			if (b == 0) {
				t_fail("%s: no direct context", what);
				return 1;
			}
			continue;
		}
		snprintf(dir, sizeof(dir), "%s/mc-test-XXXXXX", tmp_base());
		if (!mkdtemp(dir)) {
			t_fail("mkdtemp: %s", strerror(errno));
			mc_ctx_free(ctx);
			return 1;
		}
		memset(o, 0, sizeof(*o));
		fn(ctx, dir, o, arg);
		mc_ctx_free(ctx);
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		if (b == 0)
			continue;
		if (o->nvalues != ref.nvalues) {
			t_fail("%s [%s]: %u values recorded, direct %u", what,
			       mc_backend_name(t_backends[b]), o->nvalues, ref.nvalues);
			bad = 1;
			continue;
		}
		for (unsigned i = 0; i < o->nvalues; i++) {
			if (strcmp(o->label[i], ref.label[i]) || o->value[i] != ref.value[i]) {
				t_fail("%s [%s]: %s = %lld, direct: %s = %lld", what,
				       mc_backend_name(t_backends[b]), o->label[i], o->value[i],
				       ref.label[i], ref.value[i]);
				bad = 1;
			}
		}
	}
	return bad;
}
