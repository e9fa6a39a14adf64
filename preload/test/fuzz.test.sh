#!/usr/bin/env bash
# The differential fuzzer: random open/dup/dup2/short and long
# write/writev/pwrite/lseek/read/fstat/fork/close over three files shared
# by several fds, plain and under the runtime, output and files compared
# (test/fuzz.c, test/fuzz.sh).  A fixed seed set (about 20 s here);
# bench/runtime/fuzz.sh runs more.  The -v report of the first seed shows
# the runtime deferred writes (fuzz.sh compares stderr: no -v there).
. "$(dirname "$0")/common.sh"
if out=$(test/fuzz.sh "$LIB" "$T/fuzz" 1 150 400); then ok "$out"; else bad "fuzzer"; echo "$out"; fi
mkdir -p "$W/f"
rt env SYSCLUSTER_VERBOSE=1 "$T/fuzz" "$W/f" 1 400 > "$W/f.out" 2>&1
if acted "$W/f.out"; then ok "fuzz seed 1: $(grep -ao 'deferred=[0-9]*' "$W/f.out" | awk -F= '{ n += $2 } END { print n }') writes deferred"
else bad "fuzz seed 1: the runtime deferred nothing: $(grep -a syscluster "$W/f.out" | head -3)"; fi
t_finish
