#!/usr/bin/env bash
# Raw system calls: detected, reported, program unchanged
# (test/rawsys.c).
. "$(dirname "$0")/common.sh"
msg=$(rt "$T/rawsys" "$W/raw1" 5000 2>&1 >/dev/null); "$T/rawsys" "$W/raw2" 5000
if cmp -s "$W/raw1" "$W/raw2" && echo "$msg" | grep -q "raw syscall"; then ok "raw syscalls reported, output unchanged"; else bad "raw syscalls: $msg"; fi
t_finish
