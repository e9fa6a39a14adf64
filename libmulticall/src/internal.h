/* SPDX-License-Identifier: MIT */
/* libmulticall internals: the context, descriptor classes, fusion rules,
 * the calibration and the run state shared by the backends. */
#ifndef MC_INTERNAL_H
#define MC_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "multicall.h"
#include "syscall.h"
#include "syscall_lists.h" /* data/gen/, from data/syscall_properties.tsv */

#define __mc_hidden __attribute__((visibility("hidden")))
#define __mc_likely(x) __builtin_expect(!!(x), 1)
#define __mc_unlikely(x) __builtin_expect(!!(x), 0)

/* Keep errno as the caller left it, whatever libc or liburing do inside. */
#define MC_ERRNO_SAVE int __mc_saved_errno = errno
#define MC_ERRNO_RESTORE (errno = __mc_saved_errno)

/* What a descriptor is, as far as fusion is concerned. */
enum __mc_fdclass {
	FDC_UNKNOWN = 0, /* not classified yet */
	FDC_BAD,         /* fstat failed: let the real call report it */
	FDC_FILE,        /* regular file on a filesystem whose writes are plain byte streams */
	FDC_FILE_OTHER,  /* regular file elsewhere (proc, sysfs, fuse, ...): never fused */
	FDC_PIPE,        /* pipe or FIFO, not in packet mode */
	FDC_NULL,        /* /dev/null */
	FDC_STREAM,      /* SOCK_STREAM socket of AF_INET or AF_INET6 (TCP) */
	FDC_USTREAM,     /* SOCK_STREAM socket of AF_UNIX */
	FDC_DGRAM,       /* SOCK_DGRAM socket */
	FDC_BLOCK,       /* block device: does not block indefinitely (io_uring) */
	FDC_OTHER,       /* anything else: message boundaries may matter */
	FDC_COUNT
};

/* Descriptor facts beside the class. */
#define FDF_OPATH    0x01 /* opened with O_PATH */
#define FDF_RDONLY   0x02 /* not writable */
#define FDF_WRONLY   0x04 /* not readable */
#define FDF_APPEND   0x08
#define FDF_DIRECT   0x10
#define FDF_NONBLOCK 0x20
#define FDF_FLAGS    0x80 /* the flags above are known */

struct __mc_fdinfo {
	unsigned char cls;
	unsigned char flags;
	unsigned long dev, ino; /* identity, for descriptors sharing a file */
	long size;              /* st_size when classified (not kept for registered ones) */
};

/* Fusion rules; the calibration holds a threshold per rule and class. */
enum __mc_rule {
	R_WRITEV,
	R_READV,
	R_PREADV,
	R_PWRITEV,
	R_SEEK_PREAD,
	R_SENDMMSG,
	R_RECVMMSG,
	R_COPY,       /* read/write loop -> copy_file_range or sendfile */
	R_BATCH_SEND, /* read/sendto loop -> readv + sendmmsg */
	R_COUNT
};

/* io_uring kinds the calibration measures. */
enum __mc_ukind {
	U_READ_FILE,
	U_WRITE_FILE,
	U_OTHER,
	U_COUNT
};

struct __mc_calib {
	unsigned status;         /* MC_CALIB_* */
	char path[256];
	/* Smallest run (calls, or loop iterations for R_COPY and R_BATCH_SEND)
	 * at which the rule pays, for a descriptor classified in the run ([0])
	 * or registered ([1]); 0: never. */
	unsigned short min_run[R_COUNT][FDC_COUNT][2];
	/* Smallest chain for which io_uring beats direct; 0: never. */
	unsigned short uring_min[U_COUNT];
	/* Derived: the smallest min_run of each rule over classes, for
	 * descriptors classified in the run [0] and registered ones [1] (0:
	 * never), and whether io_uring ever wins. */
	unsigned short min_any[R_COUNT][2];
	int any_uring;
};

__mc_hidden const struct __mc_calib *__mc_calibration(void);
__mc_hidden void __mc_calib_builtin(struct __mc_calib *c);
__mc_hidden void __mc_calib_finish(struct __mc_calib *c);
__mc_hidden int __mc_calib_parse(struct __mc_calib *c, const char *text, size_t len,
				 const char *kernel, const char *cpu);
__mc_hidden void __mc_machine_identity(char *kernel, size_t klen, char *cpu, size_t clen);
__mc_hidden const char *__mc_rule_name(unsigned rule);
__mc_hidden const char *__mc_fdclass_name(unsigned cls);

struct io_uring;

struct mc_ctx {
	unsigned backend;
	const struct __mc_calib *cal;
	struct mc_stats stats;

	/* Registered descriptors: reg[fd] = class + 1, 0 when not registered. */
	struct __mc_fdinfo *reg;
	int reg_cap;

	/* io_uring, created on first use; epoch tells whether it was made in
	 * this process or inherited through fork. */
	struct io_uring *ring;
	unsigned long ring_epoch;
	unsigned long ring_dev, ring_ino;
	int ring_broken;

	int kmod_fd;

	/* Scratch for fused calls, in the context's own mapping (ctx.c). */
	struct iovec *iov;           /* MC_MAX_CALLS */
	struct mmsghdr *mmsg;        /* MC_MAX_CALLS */
	struct iovec *miov;          /* MC_MAX_CALLS */
	/* Bounce buffer for the read/sendto loop, grown on demand. */
	char *bounce;
	size_t bounce_len;
};

/* Per-run descriptor cache: classification costs system calls, done once
 * per run and dropped after any call that may change the descriptor table. */
#define RUN_FDCACHE 8
struct __mc_run {
	struct mc_ctx *ctx;
	struct mc_call *c;
	unsigned n;
	unsigned mode;        /* MC_BACKEND_DIRECT, _FUSION or _AUTO */
	unsigned nofuse_until; /* after a short fused call, the rest runs call by call */
	int planning;         /* mc_explain: classify, but run nothing */
	unsigned nfd;
	int fd[RUN_FDCACHE];
	struct __mc_fdinfo fi[RUN_FDCACHE];
};

/* Counting crossings: every system call the library makes goes through here. */
static inline long __mc_sys(struct mc_ctx *ctx, long nr, long a0, long a1, long a2, long a3,
			    long a4, long a5)
{
	ctx->stats.crossings++;
	return __mc_sys6(nr, a0, a1, a2, a3, a4, a5);
}

static inline long __mc_arg(const struct mc_call *c, const struct mc_call *cl, unsigned j)
{
	return cl->ref[j] ? c[cl->ref[j] - 1].result : cl->args[j];
}

static inline int __mc_has_refs(const struct mc_call *cl)
{
	uint32_t a;
	uint16_t b;

	memcpy(&a, cl->ref, 4);
	memcpy(&b, cl->ref + 4, 2);
	return (a | b) != 0;
}

/* Run one call as it is; returns its result (also stored). */
static inline long __mc_exec_one(struct mc_ctx *ctx, struct mc_call *c, unsigned i)
{
	struct mc_call *cl = &c[i];
	long r;

	if (__mc_likely(!__mc_has_refs(cl)))
		r = __mc_sys(ctx, cl->nr, cl->args[0], cl->args[1], cl->args[2], cl->args[3],
			     cl->args[4], cl->args[5]);
	else
		r = __mc_sys(ctx, cl->nr, __mc_arg(c, cl, 0), __mc_arg(c, cl, 1),
			     __mc_arg(c, cl, 2), __mc_arg(c, cl, 3), __mc_arg(c, cl, 4),
			     __mc_arg(c, cl, 5));
	cl->result = r;
	ctx->stats.direct++;
	ctx->stats.calls++;
	return r;
}

/* Does call i, run, stop the multi-call?  MC_CHECK: it failed;
 * MC_CHECK_FULL: libc's result (-1 for a failure) is not what the call
 * asked for -- a transfer's count, lseek(SEEK_SET)'s offset --, the
 * program's `write(fd, buf, n) != n` (references are to earlier calls
 * only, whose results are final when i's is). */
static inline int __mc_stops(const struct mc_call *c, unsigned i)
{
	const struct mc_call *cl = &c[i];

	if (cl->result < 0 && (cl->flags & MC_CHECK))
		return 1;
	return (cl->flags & MC_CHECK_FULL) &&
	       (cl->result < 0 ? -1 : cl->result) != __mc_arg(c, cl, cl->nr == SYS_lseek ? 1 : 2);
}

/* Calls after which cached descriptor classes may be wrong. */
static inline int __mc_changes_fds(long nr)
{
	return !scl_keeps_fds(nr);
}

/* Classification. */
__mc_hidden struct __mc_fdinfo __mc_classify(struct mc_ctx *ctx, int fd, int want_flags);
__mc_hidden struct __mc_fdinfo __mc_run_fdinfo(struct __mc_run *run, int fd, int want_flags,
					       int *registered);
__mc_hidden int __mc_registered(const struct mc_ctx *ctx, long fd);

/* Fusion: try a fused step at call i.  Returns the number of calls it
 * covered (0: none, run call i as it is); *next is the first call still to
 * run; results of calls before *next are final. */
__mc_hidden unsigned __mc_fuse_at(struct __mc_run *run, unsigned i, unsigned *next,
				  struct mc_step *plan);

/* The loops fused as a whole: R_COPY (read/write), R_BATCH_SEND
 * (read/sendto), or -1 for any other body.  Looks at the body only. */
__mc_hidden int __mc_loop_shape(const struct mc_call *body, unsigned n, const struct mc_loop *loop);

/* Loops fused as a whole (copy, read/sendto); return -1 when the body is
 * not one of them, else the loop's return value. */
__mc_hidden int __mc_fuse_loop(struct mc_ctx *ctx, unsigned mode, struct mc_call *body,
			       unsigned n, const struct mc_loop *loop, unsigned long *iters,
			       struct mc_step *plan);

/* kmod backend (kmod.c): the module runs the whole program in one ioctl. */
#define MC_KMOD_FALLBACK (-100000) /* refused before running: use another backend */
__mc_hidden int __mc_kmod_open(struct mc_ctx *ctx);
__mc_hidden int __mc_kmod_run(struct mc_ctx *ctx, struct mc_call *calls, unsigned n,
			      const struct mc_loop *loop, unsigned long *iterations);

/* io_uring backend. */
__mc_hidden int __mc_uring_setup(struct mc_ctx *ctx);
__mc_hidden void __mc_uring_free(struct mc_ctx *ctx);
__mc_hidden int __mc_uring_run(struct __mc_run *run, unsigned first, unsigned end,
			       unsigned *stop);
__mc_hidden int __mc_uring_expressible(struct __mc_run *run, unsigned i);

/* The executor shared by mc_run and the loop driver: runs calls
 * [first, n) and returns the stop index (n when all ran). */
__mc_hidden unsigned __mc_exec(struct __mc_run *run, unsigned first);

/* own.c: fork detection (MADV_WIPEONFORK page, pthread_atfork as
 * fallback), and the library's own descriptors moved out of the way. */
__mc_hidden unsigned long __mc_fork_epoch(void);
__mc_hidden int __mc_fd_out_of_the_way(int fd);

/* Mark calls [from, n) as not executed. */
static inline void __mc_cancel_rest(struct mc_call *c, unsigned from, unsigned n)
{
	for (unsigned k = from; k < n; k++)
		c[k].result = -ECANCELED;
}

#endif
