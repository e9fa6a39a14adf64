/* SPDX-License-Identifier: MIT */
/* The plugin's runtime: is MULTICALL_BACKEND=direct asked for?  Then every
 * replacement runs the program's calls as written, one by one (syscluster
 * verify injects faults into the K-th call the source issues). */
#ifndef SYSCLUSTER_RT_DIRECT_H
#define SYSCLUSTER_RT_DIRECT_H

#include <stdlib.h>
#include <string.h>

#include "multicall.h"

static inline int __syscluster_direct_asked(void)
{
	const char *backend = secure_getenv(MC_BACKEND_ENV);

	return backend && strcmp(backend, "direct") == 0;
}

#endif
