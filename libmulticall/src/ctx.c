/* SPDX-License-Identifier: MIT */
/* Contexts: one per thread, created once, no per-call setup. */
#include "internal.h"

#include <stdlib.h>
#include <sys/mman.h>

/* ---- contexts ---- */

/* A context: the struct, then its scratch (mmsg, iov, miov: MC_MAX_CALLS
 * each, mmsg first for the strictest alignment), in one mapping. */
#define CTX_HEAD ((sizeof(struct mc_ctx) + 63) & ~(size_t)63)
#define CTX_LEN (CTX_HEAD + MC_MAX_CALLS * (sizeof(struct mmsghdr) + 2 * sizeof(struct iovec)))

/* LeakSanitizer, when the program runs under it (built with
 * -fsanitize=address or =leak, whether or not this library was): it does
 * not scan anonymous mappings, so the heap blocks only a context points to
 * (its registry, bounce buffer, ring) would be reported leaked at exit
 * while the context is alive.  The context's struct is declared a root
 * region for as long as it is mapped; without the sanitizer these weak
 * names are null and nothing is called. */
void __lsan_register_root_region(const void *p, size_t size) __attribute__((weak));
void __lsan_unregister_root_region(const void *p, size_t size) __attribute__((weak));

static struct mc_ctx *ctx_map(void)
{
	long m = __mc_sys6(SYS_mmap, 0, (long)CTX_LEN, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct mc_ctx *ctx;

	if (m < 0 && m > -4096)
		return NULL;
	ctx = (struct mc_ctx *)m;
	ctx->mmsg = (struct mmsghdr *)((char *)ctx + CTX_HEAD);
	ctx->iov = (struct iovec *)(ctx->mmsg + MC_MAX_CALLS);
	ctx->miov = ctx->iov + MC_MAX_CALLS;
	if (__lsan_register_root_region)
		__lsan_register_root_region(ctx, CTX_HEAD);
	return ctx;
}

int mc_ctx_init(struct mc_ctx **ctxp, unsigned backend)
{
	MC_ERRNO_SAVE;
	struct mc_ctx *ctx;
	int ret = 0;

	if (!ctxp) {
		ret = -EINVAL;
		goto out;
	}
	*ctxp = NULL;
	if (backend >= MC_BACKEND_COUNT) {
		ret = -EINVAL;
		goto out;
	}
	if (backend == MC_BACKEND_AUTO) {
		const char *forced = secure_getenv(MC_BACKEND_ENV);

		if (forced && strcmp(forced, "direct") == 0)
			backend = MC_BACKEND_DIRECT;
	}
	/* The context and its scratch for fused calls in one anonymous
	 * mapping: one crossing, pages zero and untouched until used — no
	 * malloc, whose first use in a program that never allocates costs a
	 * getrandom, two brk and the heap's page faults (the plugin's copy
	 * loop, docs/COMPILER.md).  Every scratch entry is filled before a
	 * fused call uses it; the 96 KiB a short copy never touches cost
	 * nothing. */
	ctx = ctx_map();
	if (!ctx) {
		ret = -ENOMEM;
		goto out;
	}
	ctx->backend = backend;
	ctx->kmod_fd = -1;
	switch (backend) {
	case MC_BACKEND_AUTO:
		ctx->cal = __mc_calibration();
		/* The kernel module where a device answers its version: then a
		 * multi-call is one crossing (run.c, auto_kmod_run).  Without
		 * it (no device, another ABI, no permission), auto as ever. */
		__mc_kmod_open(ctx);
		break;
	case MC_BACKEND_URING:
		ret = __mc_uring_setup(ctx);
		if (ret < 0)
			goto fail;
		break;
	case MC_BACKEND_KMOD:
		ret = __mc_kmod_open(ctx);
		if (ret < 0)
			goto fail;
		break;
	default:
		break;
	}
	*ctxp = ctx;
	goto out;
fail:
	mc_ctx_free(ctx);
out:
	MC_ERRNO_RESTORE;
	return ret;
}

struct mc_ctx *mc_ctx_new(unsigned backend)
{
	struct mc_ctx *ctx = NULL;

	mc_ctx_init(&ctx, backend);
	return ctx;
}

void mc_ctx_free(struct mc_ctx *ctx)
{
	MC_ERRNO_SAVE;

	if (!ctx)
		return;
	__mc_uring_free(ctx);
	if (ctx->kmod_fd >= 0)
		__mc_sys6(SYS_close, ctx->kmod_fd, 0, 0, 0, 0, 0);
	free(ctx->bounce);
	free(ctx->reg);
	if (__lsan_unregister_root_region)
		__lsan_unregister_root_region(ctx, CTX_HEAD);
	__mc_sys6(SYS_munmap, (long)ctx, (long)CTX_LEN, 0, 0, 0, 0);
	MC_ERRNO_RESTORE;
}

int mc_fd_register(struct mc_ctx *ctx, int fd)
{
	MC_ERRNO_SAVE;
	struct __mc_fdinfo fi;
	int ret = 0;

	if (!ctx || fd < 0 || fd >= (1 << 24)) {
		ret = -EINVAL;
		goto out;
	}
	if (fd >= ctx->reg_cap) {
		int cap = ctx->reg_cap ? ctx->reg_cap : 64;
		struct __mc_fdinfo *r;

		while (cap <= fd)
			cap *= 2;
		r = realloc(ctx->reg, (size_t)cap * sizeof(*r));
		if (!r) {
			ret = -ENOMEM;
			goto out;
		}
		memset(r + ctx->reg_cap, 0, (size_t)(cap - ctx->reg_cap) * sizeof(*r));
		ctx->reg = r;
		ctx->reg_cap = cap;
	}
	fi = __mc_classify(ctx, fd, 1);
	if (fi.cls == FDC_BAD) {
		ret = -EBADF;
		goto out;
	}
	ctx->reg[fd] = fi;
	ctx->reg[fd].cls = (unsigned char)(fi.cls + 1);
out:
	MC_ERRNO_RESTORE;
	return ret;
}

int mc_fd_unregister(struct mc_ctx *ctx, int fd)
{
	if (!ctx || fd < 0)
		return -EINVAL;
	if (fd >= ctx->reg_cap || !ctx->reg[fd].cls)
		return -ENOENT;
	memset(&ctx->reg[fd], 0, sizeof(ctx->reg[fd]));
	return 0;
}

int mc_ctx_stats(const struct mc_ctx *ctx, struct mc_stats *stats)
{
	if (!ctx || !stats)
		return -EINVAL;
	*stats = ctx->stats;
	return 0;
}

int mc_ctx_stats_reset(struct mc_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	memset(&ctx->stats, 0, sizeof(ctx->stats));
	return 0;
}

int mc_ctx_info(const struct mc_ctx *ctx, struct mc_info *info)
{
	const struct __mc_calib *cal;

	if (!ctx || !info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	info->backend = ctx->backend;
	cal = ctx->cal ? ctx->cal : __mc_calibration();
	info->calibration = cal->status;
	memcpy(info->calibration_path, cal->path, sizeof(info->calibration_path));
	return 0;
}

const char *mc_backend_name(unsigned backend)
{
	static const char *const names[MC_BACKEND_COUNT] = {
		"auto", "direct", "uring", "kmod", "fusion",
	};
	return backend < MC_BACKEND_COUNT ? names[backend] : NULL;
}

const char *mc_mech_name(unsigned mech)
{
	static const char *const names[MC_MECH_COUNT] = {
		"direct", "writev", "readv", "preadv", "pwritev", "seek+preadv",
		"sendmmsg", "recvmmsg", "uring", "copy_file_range", "sendfile",
		"readv+sendmmsg", "kmod",
	};
	return mech < MC_MECH_COUNT ? names[mech] : NULL;
}
