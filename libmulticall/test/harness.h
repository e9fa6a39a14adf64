/* SPDX-License-Identifier: MIT */
/* Test harness: every scenario runs once per backend in a fresh setting,
 * records what a program could observe (results, return value, iteration
 * count, file contents and offsets, buffer bytes, signal counts), and every
 * backend's record must equal direct's.  Exit codes as liburing's tests:
 * 0 pass, 1 fail, 77 skip. */
#ifndef MC_TEST_HARNESS_H
#define MC_TEST_HARNESS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <multicall.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

/* T_EXIT_*, t_need and t_required: the tree's convention for tests that
 * fail closed, shared with the preload library's tests. */
#include "../../tests/lib/require.h"

#define T_MAX_VALUES 512

struct t_outcome {
	unsigned nvalues;
	char label[T_MAX_VALUES][48];
	long long value[T_MAX_VALUES];
};

/* A scenario sets up its world under dir (a fresh directory), runs with
 * ctx, records into o. */
typedef void (*t_scenario)(struct mc_ctx *ctx, const char *dir, struct t_outcome *o, void *arg);

extern int t_failures;

void t_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define T_ASSERT(cond, ...)                                                        \
	do {                                                                       \
		if (!(cond)) {                                                     \
			t_fail("%s:%d: %s: ", __FILE__, __LINE__, #cond);           \
			fprintf(stderr, __VA_ARGS__);                              \
			fputc('\n', stderr);                                       \
		}                                                                  \
	} while (0)
int t_finish(void);

/* Backends compared with direct (direct itself first). */
extern const unsigned t_backends[];
extern const unsigned t_nbackends;
/* mc_ctx_init for a test: NULL when the backend is unavailable here
 * (reported once).  A backend whose name is in SYSCLUSTER_REQUIRE
 * (t_required: "kmod" in the module's guest) and cannot start fails, where
 * elsewhere it is left out of the comparison (the kmod backend on a host
 * without the module, CI's included). */
struct mc_ctx *t_ctx(unsigned backend);

/* Whether backend is compared with direct here (MC_TEST_BACKENDS). */
int t_compared(unsigned backend);
/* Runs fn on every backend, compares with direct; returns 0 when equal. */
int t_compare(const char *what, t_scenario fn, void *arg);

/* Recording. */
void t_rec(struct t_outcome *o, const char *label, long long v);
void t_rec_calls(struct t_outcome *o, const char *label, const struct mc_call *c, unsigned n);
void t_rec_file(struct t_outcome *o, const char *label, const char *path);
void t_rec_fd_offset(struct t_outcome *o, const char *label, int fd);
void t_rec_mem(struct t_outcome *o, const char *label, const void *p, size_t len);
/* Drains a descriptor without blocking and records what came out. */
void t_rec_drain(struct t_outcome *o, const char *label, int fd);
uint64_t t_hash(const void *p, size_t len);
/* Waits until the datagrams tx sent on loopback are queued (AF_INET). */
void t_udp_settle(int tx, const struct sockaddr *to, socklen_t tolen);

/* Helpers. */
char *t_path(const char *dir, const char *name); /* static buffer rotation */
/* The path of build/mc-calibrate (MC_BUILD names the build directory) in
 * path; a test without it stops as needing it (not in the kmod guest). */
void t_mc_calibrate(char *path, size_t len);
void t_write_file(const char *path, size_t size, unsigned seed);
int t_open(const char *path, int flags);
void *t_bad_ptr(void); /* a PROT_NONE page */
/* The null device, also where /dev/null has been replaced by a regular
 * file (a private node in dir, or failing that a fresh file there). */
int t_open_null(const char *dir);
/* len bytes of which the first len/2 are readable and writable, the rest
 * in a PROT_NONE page (len <= 8192). */
void *t_half_bad(size_t len);
/* The backend a context runs (for expectations about fusion). */
unsigned t_backend_of(struct mc_ctx *ctx);
/* The stats since the scenario started. */
struct mc_stats t_stats(struct mc_ctx *ctx);

#endif
