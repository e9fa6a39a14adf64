/* SPDX-License-Identifier: GPL-2.0 */
/* What a multi-call may not hold.  The list of calls comes from the
 * project's syscall table (data/, generated into gen/mc_forbidden.h);
 * the argument rules are in uapi/multicall_kmod.h, shared with the library. */
#ifndef MC_RULES_H
#define MC_RULES_H

#include "gen/mc_forbidden.h"

static inline bool mc_forbidden(long nr)
{
	switch (nr) {
#define MC_FORBID(name) case __NR_##name:
		MC_FORBIDDEN_CALLS(MC_FORBID)
#undef MC_FORBID
		return true;
	default:
		return false;
	}
}

static inline bool mc_refused_args(const struct mc_kmod_call *c)
{
	return mc_kmod_refused_args(c->nr, c->args, c->ref);
}

#endif
