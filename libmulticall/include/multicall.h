/* SPDX-License-Identifier: MIT */
/*
 * libmulticall: the multi-call of seed 000 (§2.2, figs. 2, 3 and 7; §3.4) —
 * many system calls, one crossing where the machine allows it, the
 * program's error handling intact.
 *
 * A multi-call is an array of struct mc_call run in order.  A call marked
 * MC_CHECK that fails (negative result), or one marked MC_CHECK_FULL that
 * does not transfer its whole count, stops the chain and mc_run returns
 * its index; otherwise mc_run returns n.  Results of executed calls are
 * filled in (-errno on error), calls not executed get -ECANCELED.  An
 * argument is a literal or the result of an earlier call (ref).
 *
 * Every function returns -errno on failure and leaves errno untouched.
 * A context belongs to one thread at a time; it stays usable after fork.
 */
#ifndef MULTICALL_H
#define MULTICALL_H

#include <errno.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <sys/syscall.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MC_VERSION_MAJOR 1
#define MC_VERSION_MINOR 1

/* The most calls one mc_run or one loop body may hold (also IOV_MAX). */
#define MC_MAX_CALLS 1024

/*
 * The binary interface of struct mc_call, struct mc_loop and their rules,
 * which the kernel module (/dev/multicall) copies: version 1.  A reference
 * is 8 bits (k + 1 names call k), so it can name calls 0 to MC_MAX_REF
 * only; mc_set_ref refuses a later one.  A device is the module when it
 * answers the ioctl MC_IOC_VERSION with MC_ABI_VERSION.
 */
#define MC_ABI_VERSION 1
#define MC_MAX_REF 254
#define MC_KMOD_DEVICE "/dev/multicall"
#define MC_IOC_VERSION _IO('M', 0)

struct mc_call {
	long nr;              /* syscall number (SYS_write, ...) */
	long args[6];
	long result;          /* filled in: the syscall's return value, -errno on error */
	unsigned flags;       /* MC_CHECK, MC_PREDICT, MC_CHECK_FULL */
	unsigned char ref[6]; /* 0: args[j] is a literal; k+1: args[j] is the result of call k */
};

/* struct mc_call.flags */
#define MC_CHECK   (1u << 0) /* stop the multi-call if this call fails */
#define MC_PREDICT (1u << 1) /* read/write family: this call almost always transfers
			      * its full length (value profile); lets io_uring keep
			      * a call that uses its result inside one link */
#define MC_CHECK_FULL (1u << 2) /* read, write, pread64, pwrite64 (also in a loop
				 * body, docs/MULTICALL.md), lseek in mc_run:
				 * stop the multi-call unless the result
				 * (-1 for any failure, as libc returns it) is the
				 * count argument (args[2], or the result it refers
				 * to) -- a short transfer is a failure, as
				 * `if (write(fd, buf, n) != n) err(...)` treats it;
				 * lseek with a literal SEEK_SET: unless it is the
				 * offset (args[1]), `lseek(fd, pos, 0) != pos`.
				 * Not in the kernel module's ABI 1: a multi-call
				 * holding it runs on another backend. */
#define MC_CALL_FLAGS (MC_CHECK | MC_PREDICT | MC_CHECK_FULL)
#define MC_BAD_REF (1u << 31) /* set by mc_set_ref on a reference the ABI cannot
			       * hold: mc_run refuses the call (-EINVAL) */

/* Backends, for mc_ctx_new and mc_ctx_init. */
#define MC_BACKEND_AUTO   0u /* per run of calls, the fastest correct choice (calibrated) */
#define MC_BACKEND_DIRECT 1u /* plain system calls in order: the reference semantics */
#define MC_BACKEND_URING  2u /* io_uring linked requests, resumed where a link breaks */
#define MC_BACKEND_KMOD   3u /* the multicall kernel module (one ioctl) */
#define MC_BACKEND_FUSION 4u /* fusion wherever it is legal, whatever it costs */
#define MC_BACKEND_COUNT  5u

struct mc_ctx;

struct mc_ctx *mc_ctx_new(unsigned backend);
int mc_ctx_init(struct mc_ctx **ctxp, unsigned backend);
void mc_ctx_free(struct mc_ctx *ctx);

int mc_run(struct mc_ctx *ctx, struct mc_call *calls, unsigned n);

/*
 * Looped multi-call (seed 000 §3.4): run the body again and again while
 * body[call].result OP value holds, at most max_iterations times.  A
 * reference to a call at or after the referencing one is loop-carried: it
 * reads that call's result in the previous iteration (on the first
 * iteration, the value in .result on entry).
 */
#define MC_WHILE_GT 0u
#define MC_WHILE_GE 1u
#define MC_WHILE_EQ 2u
#define MC_WHILE_NE 3u
#define MC_WHILE_LT 4u
#define MC_WHILE_LE 5u

struct mc_loop {
	unsigned call;                /* index in the body of the tested call */
	unsigned cond;                /* MC_WHILE_* */
	long value;                   /* the loop goes on while result OP value */
	unsigned long max_iterations; /* the bound, at least 1 */
};

int mc_run_loop(struct mc_ctx *ctx, struct mc_call *body, unsigned n,
		const struct mc_loop *loop, unsigned long *iterations);

/*
 * Registered descriptors: the library classifies fd once and trusts the
 * class until mc_fd_unregister (the caller promises that fd keeps naming
 * the same open file, with the same status flags, meanwhile).  Unregistered
 * descriptors are classified once per mc_run, which costs one to three
 * system calls.
 */
int mc_fd_register(struct mc_ctx *ctx, int fd);
int mc_fd_unregister(struct mc_ctx *ctx, int fd);

/* Introspection of the plan. */
#define MC_MECH_DIRECT      0u  /* the call as it is */
#define MC_MECH_WRITEV      1u  /* writes to one descriptor -> writev */
#define MC_MECH_READV       2u  /* reads from one descriptor -> readv */
#define MC_MECH_PREADV      3u  /* preads at consecutive offsets -> preadv */
#define MC_MECH_PWRITEV     4u  /* pwrites at consecutive offsets -> pwritev */
#define MC_MECH_SEEK_PREAD  5u  /* lseek+read -> preadv, one lseek at the end */
#define MC_MECH_SENDMMSG    6u  /* sendto on a datagram socket -> sendmmsg */
#define MC_MECH_RECVMMSG    7u  /* recvfrom on a datagram socket -> recvmmsg */
#define MC_MECH_URING       8u  /* io_uring linked requests */
#define MC_MECH_COPY_RANGE  9u  /* read/write loop -> copy_file_range */
#define MC_MECH_SENDFILE    10u /* read/write loop -> sendfile */
#define MC_MECH_BATCH_SEND  11u /* read/sendto loop -> readv + sendmmsg */
#define MC_MECH_KMOD        12u /* the kernel module */
#define MC_MECH_COUNT       13u

struct mc_step {
	unsigned first;    /* index of the first call of the step */
	unsigned count;    /* number of calls it covers */
	unsigned mech;     /* MC_MECH_* */
	unsigned syscalls; /* crossings the step makes when nothing ends short */
};

int mc_explain(struct mc_ctx *ctx, const struct mc_call *calls, unsigned n,
	       struct mc_step *steps, unsigned max_steps);
const char *mc_mech_name(unsigned mech);
const char *mc_backend_name(unsigned backend);

struct mc_stats {
	unsigned long long runs;        /* mc_run and mc_run_loop calls */
	unsigned long long calls;       /* calls executed (results filled in) */
	unsigned long long crossings;   /* system calls the library made */
	unsigned long long direct;      /* calls run as they are */
	unsigned long long fused;       /* calls covered by a fused system call */
	unsigned long long uring;       /* calls run through io_uring */
	unsigned long long completions; /* fused or linked runs that ended short
					 * and were completed call by call */
	unsigned long long probes;      /* system calls spent classifying descriptors */
};

int mc_ctx_stats(const struct mc_ctx *ctx, struct mc_stats *stats);
int mc_ctx_stats_reset(struct mc_ctx *ctx);

/* Where the calibration for auto came from. */
#define MC_CALIB_BUILTIN 0u /* no file: conservative built-in choices */
#define MC_CALIB_FILE    1u /* a file measured on this machine */
#define MC_CALIB_STALE   2u /* a file from another machine or kernel: ignored */
#define MC_CALIB_CORRUPT 3u /* an unreadable or malformed file: ignored */

struct mc_info {
	unsigned backend;     /* the backend the context was made for */
	unsigned calibration; /* MC_CALIB_* */
	char calibration_path[256];
};

int mc_ctx_info(const struct mc_ctx *ctx, struct mc_info *info);

/* Environment variable naming the calibration file ("" or "none": built-in). */
#define MC_CALIBRATION_ENV "MULTICALL_CALIBRATION"

/* Environment variable that, set to "direct", makes contexts asked for
 * MC_BACKEND_AUTO use MC_BACKEND_DIRECT: every call of a multi-call is then
 * issued as its own system call, in order.  `syscluster verify --inject`
 * sets it so that a fault injected into the K-th call of a kind reaches the
 * same call of the source in a program built with multi-calls. */
#define MC_BACKEND_ENV "MULTICALL_BACKEND"

/*
 * Specialized multi-calls: the clusters of the seeds.  Each returns like
 * mc_run_loop on its body (index of the failing checked call, or the body
 * length) and fills res[] with the results of the last iteration.
 *
 * mc_copy: while ((n = read(in, buf, bs)) > 0) if (write(out, buf, n) < 0) break;
 *   body {read, write}, both checked; copy_file_range where the files allow.
 * mc_read_sendto: while ((n = read(in, buf, len)) > 0)
 *                   if (sendto(sock, buf, n, flags, to, tolen) < 0) break;
 *   the web server's cluster; readv + sendmmsg on datagram sockets.
 * mc_select_time: select(...) then, if it succeeded, the time of day into
 *   *now through the vDSO (no crossing) as gettimeofday(3) does: mpeg_play's
 *   cluster.  now must be valid or NULL, as for gettimeofday(3).
 */
int mc_copy(struct mc_ctx *ctx, int in, int out, void *buf, size_t bs,
	    unsigned long max_iterations, long res[2], unsigned long *iterations);
int mc_read_sendto(struct mc_ctx *ctx, int in, void *buf, size_t len, int sock,
		   int flags, const struct sockaddr *to, socklen_t tolen,
		   unsigned long max_iterations, long res[2], unsigned long *iterations);
int mc_select_time(struct mc_ctx *ctx, int nfds, fd_set *readfds, fd_set *writefds,
		   fd_set *exceptfds, struct timeval *timeout, struct timeval *now,
		   long res[2]);

/* ---- Per-call helpers, in the style of liburing's io_uring_prep_* ---- */

static inline void mc_prep_syscall(struct mc_call *c, long nr, long a0, long a1,
				   long a2, long a3, long a4, long a5)
{
	unsigned j;

	c->nr = nr;
	c->args[0] = a0;
	c->args[1] = a1;
	c->args[2] = a2;
	c->args[3] = a3;
	c->args[4] = a4;
	c->args[5] = a5;
	c->result = 0;
	c->flags = 0;
	for (j = 0; j < 6; j++)
		c->ref[j] = 0;
}

static inline void mc_prep_read(struct mc_call *c, int fd, void *buf, size_t n)
{
	mc_prep_syscall(c, SYS_read, fd, (long)buf, (long)n, 0, 0, 0);
}

static inline void mc_prep_write(struct mc_call *c, int fd, const void *buf, size_t n)
{
	mc_prep_syscall(c, SYS_write, fd, (long)buf, (long)n, 0, 0, 0);
}

static inline void mc_prep_pread(struct mc_call *c, int fd, void *buf, size_t n, off_t off)
{
	mc_prep_syscall(c, SYS_pread64, fd, (long)buf, (long)n, (long)off, 0, 0);
}

static inline void mc_prep_pwrite(struct mc_call *c, int fd, const void *buf, size_t n,
				  off_t off)
{
	mc_prep_syscall(c, SYS_pwrite64, fd, (long)buf, (long)n, (long)off, 0, 0);
}

static inline void mc_prep_lseek(struct mc_call *c, int fd, off_t off, int whence)
{
	mc_prep_syscall(c, SYS_lseek, fd, (long)off, whence, 0, 0, 0);
}

static inline void mc_prep_sendto(struct mc_call *c, int fd, const void *buf, size_t n,
				  int flags, const struct sockaddr *to, socklen_t tolen)
{
	mc_prep_syscall(c, SYS_sendto, fd, (long)buf, (long)n, flags, (long)to, (long)tolen);
}

static inline void mc_prep_recvfrom(struct mc_call *c, int fd, void *buf, size_t n,
				    int flags, struct sockaddr *from, socklen_t *fromlen)
{
	mc_prep_syscall(c, SYS_recvfrom, fd, (long)buf, (long)n, flags, (long)from,
			(long)fromlen);
}

static inline void mc_prep_select(struct mc_call *c, int nfds, fd_set *r, fd_set *w,
				  fd_set *e, struct timeval *timeout)
{
	mc_prep_syscall(c, SYS_select, nfds, (long)r, (long)w, (long)e, (long)timeout, 0);
}

static inline void mc_prep_gettimeofday(struct mc_call *c, struct timeval *tv)
{
	mc_prep_syscall(c, SYS_gettimeofday, (long)tv, 0, 0, 0, 0, 0);
}

static inline void mc_prep_close(struct mc_call *c, int fd)
{
	mc_prep_syscall(c, SYS_close, fd, 0, 0, 0, 0, 0);
}

static inline void mc_prep_fsync(struct mc_call *c, int fd)
{
	mc_prep_syscall(c, SYS_fsync, fd, 0, 0, 0, 0, 0);
}

static inline void mc_prep_openat(struct mc_call *c, int dfd, const char *path, int flags,
				  mode_t mode)
{
	mc_prep_syscall(c, SYS_openat, dfd, (long)path, flags, (long)mode, 0, 0);
}

/* args[arg] of c takes the result of call number call (earlier in the array).
 * Returns 0, or -EINVAL when arg > 5 or call > MC_MAX_REF: the call is then
 * marked MC_BAD_REF, so that mc_run refuses it rather than run a literal. */
static inline int mc_set_ref(struct mc_call *c, unsigned arg, unsigned call)
{
	if (arg >= 6 || call > MC_MAX_REF) {
		c->flags |= MC_BAD_REF;
		return -EINVAL;
	}
	c->ref[arg] = (unsigned char)(call + 1);
	return 0;
}

static inline void mc_set_check(struct mc_call *c)
{
	c->flags |= MC_CHECK;
}

static inline void mc_set_check_full(struct mc_call *c)
{
	c->flags |= MC_CHECK_FULL;
}

static inline void mc_set_predict(struct mc_call *c)
{
	c->flags |= MC_PREDICT;
}

#ifdef __cplusplus
}
#endif

#endif /* MULTICALL_H */
