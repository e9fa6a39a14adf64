/* SPDX-License-Identifier: MIT */
/*
 * Description: MULTICALL_BACKEND=direct turns auto into direct (what
 * `syscluster verify --inject` relies on to see every call of a multi-call
 * as its own system call), and nothing else: another value leaves auto as
 * it is, and a backend asked for by name is never changed.
 */
#include "harness.h"

#include <stdlib.h>

static unsigned backend_made(unsigned asked)
{
	struct mc_ctx *ctx = mc_ctx_new(asked);
	unsigned b;

	if (!ctx) {
		t_fail("mc_ctx_new(%s) failed", mc_backend_name(asked));
		return MC_BACKEND_COUNT;
	}
	b = t_backend_of(ctx);
	mc_ctx_free(ctx);
	return b;
}

int main(void)
{
	unsetenv(MC_BACKEND_ENV);
	T_ASSERT(backend_made(MC_BACKEND_AUTO) == MC_BACKEND_AUTO, "auto without the variable");
	setenv(MC_BACKEND_ENV, "direct", 1);
	T_ASSERT(backend_made(MC_BACKEND_AUTO) == MC_BACKEND_DIRECT, "auto with MULTICALL_BACKEND=direct");
	T_ASSERT(backend_made(MC_BACKEND_FUSION) == MC_BACKEND_FUSION, "fusion by name with MULTICALL_BACKEND=direct");
	setenv(MC_BACKEND_ENV, "uring", 1);
	T_ASSERT(backend_made(MC_BACKEND_AUTO) == MC_BACKEND_AUTO, "auto with MULTICALL_BACKEND=uring");
	return t_finish();
}
