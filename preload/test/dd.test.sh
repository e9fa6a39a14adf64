#!/usr/bin/env bash
# coreutils' dd with 8- and 512-byte blocks, plain and under the runtime:
# the same file and status; and the runtime acted: the kernel saw at most
# a tenth of dd's one write per block (strace: dd closes its stderr before
# the -v report could be written).
. "$(dirname "$0")/common.sh"
head -c 300000 /dev/urandom > "$W/in"
for bs in 8 512; do
  dd if="$W/in" of="$W/dd1" bs=$bs 2>/dev/null; s1=$?
  rt dd if="$W/in" of="$W/dd2" bs=$bs 2>/dev/null; s2=$?
  n=$(writes env LD_PRELOAD="$LIB" SYSCLUSTER_COALESCE=4096 dd if="$W/in" of="$W/dd3" bs=$bs)
  if cmp -s "$W/dd1" "$W/dd2" && [ "$s1" = "$s2" ] && [ -n "$n" ] && [ "$n" -le $((300000 / bs / 10)) ]; then
    ok "dd bs=$bs: same file and status, $((300000 / bs)) blocks in $n write calls"
  else bad "dd bs=$bs: status $s1/$s2, $(cmp "$W/dd1" "$W/dd2" 2>&1), $n write calls (want at most $((300000 / bs / 10)))"; fi
done
t_finish
