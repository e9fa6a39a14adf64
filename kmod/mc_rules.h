/* SPDX-License-Identifier: GPL-2.0 */
/* What a multi-call may not hold: the calls of the project's syscall table
 * (data/syscall_properties.tsv, generated into data/gen/syscall_lists.h),
 * and the module's own ioctl (uapi/multicall_kmod.h).  libmulticall checks
 * the same two, so both refuse the same programs. */
#ifndef MC_RULES_H
#define MC_RULES_H

#include "syscall_lists.h"

static inline bool mc_refused(const struct mc_kmod_call *c)
{
	return scl_multicall_refused(c->nr, (const long *)c->args, c->ref) ||
	       mc_kmod_refused_args(c->nr, c->args, c->ref);
}

#endif
