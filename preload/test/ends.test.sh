#!/usr/bin/env bash
# Every way a program ends (return, exit, _exit, quick_exit, the last
# pthread_exit, abort, exec) writes every byte it wrote; and the runtime
# acted: the kernel saw at most a tenth of the program's 1000 write calls
# (strace; no -v report comes from _exit, abort or exec).
. "$(dirname "$0")/common.sh"
mkdir -p "$W/sem"
for m in return exit _exit quick_exit pthread abort exec; do
  rt "$T/semantics" "$W/sem" exit "$m" 2>/dev/null
  size=$(stat -c %s "$W/sem/exit"); rm -f "$W/sem/exit"
  n=$(writes env LD_PRELOAD="$LIB" SYSCLUSTER_COALESCE=4096 "$T/semantics" "$W/sem" exit "$m")
  if [ "$size" = 8000 ] && [ "$(stat -c %s "$W/sem/exit")" = 8000 ] && [ -n "$n" ] && [ "$n" -le 100 ]; then
    ok "ends by $m: every byte written, in $n write calls"
  else bad "ends by $m: $size bytes (then $(stat -c %s "$W/sem/exit") traced), $n write calls (want at most 100 of 1000)"; fi
done
t_finish
