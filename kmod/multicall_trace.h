/* SPDX-License-Identifier: GPL-2.0 */
/* Tracepoints fired for every call a multi-call runs, so that a recorder
 * attached to them (raw tracepoints multicall:mc_enter/mc_exit) sees the
 * calls that never cross on their own. */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM multicall

#if !defined(MULTICALL_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define MULTICALL_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(mc_enter,
	TP_PROTO(long nr, unsigned long a0, unsigned long a1, unsigned long a2,
		 unsigned long a3, unsigned long a4, unsigned long a5),
	TP_ARGS(nr, a0, a1, a2, a3, a4, a5),
	TP_STRUCT__entry(
		__field(long, nr)
		__array(unsigned long, args, 6)
	),
	TP_fast_assign(
		__entry->nr = nr;
		__entry->args[0] = a0;
		__entry->args[1] = a1;
		__entry->args[2] = a2;
		__entry->args[3] = a3;
		__entry->args[4] = a4;
		__entry->args[5] = a5;
	),
	TP_printk("NR %ld (%lx, %lx, %lx, %lx, %lx, %lx)", __entry->nr,
		  __entry->args[0], __entry->args[1], __entry->args[2],
		  __entry->args[3], __entry->args[4], __entry->args[5])
);

TRACE_EVENT(mc_exit,
	TP_PROTO(long nr, long ret),
	TP_ARGS(nr, ret),
	TP_STRUCT__entry(
		__field(long, nr)
		__field(long, ret)
	),
	TP_fast_assign(
		__entry->nr = nr;
		__entry->ret = ret;
	),
	TP_printk("NR %ld = %ld", __entry->nr, __entry->ret)
);

#endif

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE multicall_trace
#include <trace/define_trace.h>
