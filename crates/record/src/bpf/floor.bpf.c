/* Empty programs on the recorder's attach points: what the attach points
 * alone cost (every syscall then takes the kernel's slow path), the floor
 * of any recorder built on them.  For the benchmark. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("raw_tp/sys_enter")
int floor_enter(void *ctx)
{
	return 0;
}

SEC("raw_tp/sys_exit")
int floor_exit(void *ctx)
{
	return 0;
}
