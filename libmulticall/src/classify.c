/* SPDX-License-Identifier: MIT */
/* Descriptor classes: which fused system calls keep a descriptor's
 * observable behaviour.  Writes to a regular file on an ordinary
 * filesystem, a pipe or a stream socket are byte streams, so where one
 * write ends and the next begins is not observable; on a datagram socket,
 * a proc or sysfs file, a device or an eventfd it is, and those are never
 * merged. */
#include "internal.h"
#include "formats.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

/* Filesystems whose read/write are plain page-cache byte streams. */
static int plain_fs(long type)
{
	switch ((unsigned long)type & 0xffffffffUL) {
	case 0xEF53:      /* ext2, ext3, ext4 */
	case 0x01021994:  /* tmpfs, shmem, memfd */
	case 0x58465342:  /* xfs */
	case 0x9123683E:  /* btrfs */
	case 0xF2F52010:  /* f2fs */
	case 0x794c7630:  /* overlayfs */
	case 0x858458f6:  /* ramfs */
		return 1;
	default:
		return 0;
	}
}

static unsigned char fd_flags(struct mc_ctx *ctx, int fd)
{
	long fl = __mc_sys(ctx, SYS_fcntl, fd, F_GETFL, 0, 0, 0, 0);
	unsigned char f = FDF_FLAGS;

	ctx->stats.probes++;
	if (fl < 0)
		return FDF_FLAGS | FDF_OPATH; /* unusable: treated like O_PATH */
	if (fl & O_PATH)
		f |= FDF_OPATH;
	if ((fl & O_ACCMODE) == O_RDONLY)
		f |= FDF_RDONLY;
	if ((fl & O_ACCMODE) == O_WRONLY)
		f |= FDF_WRONLY;
	if (fl & O_APPEND)
		f |= FDF_APPEND;
	if (fl & O_DIRECT)
		f |= FDF_DIRECT;
	if (fl & O_NONBLOCK)
		f |= FDF_NONBLOCK;
	return f;
}

/* Filesystem kind by device, for filesystems on a block device (major
 * number not 0): such a number names one filesystem for as long as a file
 * of it is open, so fstatfs is asked once per process.  Anonymous devices
 * (tmpfs, proc, overlay, ...) have numbers that come back after an
 * unmount: those are always asked.  Entries: dev << 1 | plain. */
#define DEVCACHE 16
static unsigned long devcache[DEVCACHE];

static int devcache_get(unsigned long dev, int *plain)
{
	for (unsigned i = 0; i < DEVCACHE; i++) {
		unsigned long e = __atomic_load_n(&devcache[i], __ATOMIC_RELAXED);

		if (e && e >> 1 == dev) {
			*plain = (int)(e & 1);
			return 1;
		}
	}
	return 0;
}

static void devcache_put(unsigned long dev, int plain)
{
	unsigned long want = dev << 1 | (unsigned long)plain;

	for (unsigned i = 0; i < DEVCACHE; i++) {
		unsigned long zero = 0;

		if (__atomic_compare_exchange_n(&devcache[i], &zero, want, 0, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return;
	}
}

/* The descriptor's type, identity and size, by statx without the
 * timestamps: fstat asks for them, and since Linux 6.13 a file whose times
 * were looked at takes a fine-grained timestamp, and an inode update, at its
 * next write (fstat before a writev doubled its cost here).  fstat where
 * statx is missing. */
static long stat_min(struct mc_ctx *ctx, int fd, struct stat *st)
{
	struct statx sx;
	long r;

	r = __mc_sys(ctx, SYS_statx, fd, (long)"", AT_EMPTY_PATH,
		     STATX_TYPE | STATX_MODE | STATX_INO | STATX_SIZE, (long)&sx, 0);
	ctx->stats.probes++;
	if (r == -ENOSYS) {
		r = __mc_sys(ctx, SYS_fstat, fd, (long)st, 0, 0, 0, 0);
		return r;
	}
	if (r < 0)
		return r;
	memset(st, 0, sizeof(*st));
	st->st_mode = sx.stx_mode;
	st->st_ino = sx.stx_ino;
	st->st_size = (off_t)sx.stx_size;
	st->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	st->st_rdev = makedev(sx.stx_rdev_major, sx.stx_rdev_minor);
	return 0;
}

struct __mc_fdinfo __mc_classify(struct mc_ctx *ctx, int fd, int want_flags)
{
	struct __mc_fdinfo fi = { FDC_BAD, 0, 0, 0, 0 };
	struct stat st;
	long r;

	if (fd < 0)
		return fi;
	r = stat_min(ctx, fd, &st);
	if (r < 0)
		return fi;
	fi.dev = st.st_dev;
	fi.ino = st.st_ino;
	fi.size = st.st_size;

	switch (st.st_mode & S_IFMT) {
	case S_IFREG: {
		struct statfs sf;
		int plain;

		if (major(st.st_dev) != 0 && st.st_dev < (1UL << 62) && devcache_get(st.st_dev, &plain)) {
			fi.cls = plain ? FDC_FILE : FDC_FILE_OTHER;
			break;
		}
		r = __mc_sys(ctx, SYS_fstatfs, fd, (long)&sf, 0, 0, 0, 0);
		ctx->stats.probes++;
		plain = r == 0 && plain_fs(sf.f_type);
		if (r == 0 && major(st.st_dev) != 0 && st.st_dev < (1UL << 62))
			devcache_put(st.st_dev, plain);
		fi.cls = plain ? FDC_FILE : FDC_FILE_OTHER;
		break;
	}
	case S_IFIFO:
		/* O_DIRECT makes a packet pipe: each write is one message. */
		fi.flags = fd_flags(ctx, fd);
		fi.cls = (fi.flags & (FDF_DIRECT | FDF_OPATH)) ? FDC_OTHER : FDC_PIPE;
		break;
	case S_IFCHR:
		fi.cls = (major(st.st_rdev) == 1 && minor(st.st_rdev) == 3) ? FDC_NULL : FDC_OTHER;
		break;
	case S_IFBLK:
		fi.cls = FDC_BLOCK;
		break;
	case S_IFSOCK: {
		int type = 0, domain = 0;
		socklen_t len = sizeof(type);

		r = __mc_sys(ctx, SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, (long)&type, (long)&len, 0);
		ctx->stats.probes++;
		if (r == 0) {
			len = sizeof(domain);
			r = __mc_sys(ctx, SYS_getsockopt, fd, SOL_SOCKET, SO_DOMAIN, (long)&domain,
				     (long)&len, 0);
			ctx->stats.probes++;
		}
		fi.cls = FDC_OTHER;
		if (r == 0 && (domain == AF_UNIX || domain == AF_INET || domain == AF_INET6)) {
			if (type == SOCK_STREAM)
				fi.cls = domain == AF_UNIX ? FDC_USTREAM : FDC_STREAM;
			else if (type == SOCK_DGRAM)
				fi.cls = FDC_DGRAM;
		}
		break;
	}
	default:
		fi.cls = FDC_OTHER;
		break;
	}
	if (want_flags && !(fi.flags & FDF_FLAGS))
		fi.flags = fd_flags(ctx, fd);
	return fi;
}

int __mc_registered(const struct mc_ctx *ctx, long fd)
{
	return fd >= 0 && fd < ctx->reg_cap && ctx->reg[fd].cls;
}

struct __mc_fdinfo __mc_run_fdinfo(struct __mc_run *run, int fd, int want_flags, int *registered)
{
	struct mc_ctx *ctx = run->ctx;
	struct __mc_fdinfo fi;
	unsigned k;

	*registered = 0;
	if (fd >= 0 && fd < ctx->reg_cap && ctx->reg[fd].cls) {
		struct __mc_fdinfo *r = &ctx->reg[fd];

		*registered = 1;
		if (want_flags && !(r->flags & FDF_FLAGS))
			r->flags = fd_flags(ctx, fd);
		fi = *r;
		fi.cls = r->cls - 1;
		return fi;
	}
	for (k = 0; k < run->nfd; k++) {
		if (run->fd[k] == fd) {
			if (want_flags && !(run->fi[k].flags & FDF_FLAGS))
				run->fi[k].flags = fd_flags(ctx, fd);
			return run->fi[k];
		}
	}
	fi = __mc_classify(ctx, fd, want_flags);
	k = run->nfd < RUN_FDCACHE ? run->nfd++ : (unsigned)fd % RUN_FDCACHE;
	run->fd[k] = fd;
	run->fi[k] = fi;
	return fi;
}

const char *__mc_fdclass_name(unsigned cls)
{
	/* Shared with the Rust reader of the calibration (data/formats.tsv). */
	static const char *const names[FDC_COUNT] = { SCL_MC_FDCLASS_NAMES };
	_Static_assert(SCL_MC_FDCLASS_COUNT == FDC_COUNT, "data/formats.tsv's mc_fdclass names are enum __mc_fdclass's");
	return cls < FDC_COUNT ? names[cls] : "?";
}
