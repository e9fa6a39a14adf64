#!/usr/bin/env bash
# ENOSPC from the environment under `syscluster verify --run --fs-limit
# 256K`: each scratch copy on a 256 KiB tmpfs, test/enospc.c stopping at
# the error -- same bytes, both exit 1, and fewer crossings under the
# runtime (it stops deferring near full: not a tenth).
. "$(dirname "$0")/common.sh"
[ -x "$CORPUS/write8" ] || t_need corpus "the corpus is not built (make -C tests/corpus)"
[ -x "$SC" ] || t_need corpus "no syscluster binary at $SC (cargo build --release, or SC=)"
[ "$(id -u)" = 0 ] || t_need tmpfs "syscluster verify --fs-limit: mounting needs root"
if vrun enospc --run --fs-limit 256K -- "$T/enospc" a stop 100000 && grep -qE '^  exit +1 +1$' "$W/enospc.verify" &&
   read -r a b < <(crossings enospc) && [ "$b" -lt $((a * 9 / 10)) ]; then
  ok "ENOSPC stop (syscluster verify --run --fs-limit 256K): same bytes, both exit 1, crossings $a -> $b"
else bad "ENOSPC stop under verify: $(cat "$W/enospc.verify")"; fi
t_finish
