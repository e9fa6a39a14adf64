#!/usr/bin/env bash
# fds 1 and 2 writing one log: `prog > log 2>&1` (one description),
# `prog >> log 2>> log` and `prog > log 2> log` (two), and Python's print
# on both -- the same bytes as plain, and the -v report shows the short
# lines deferred (and, on one description, coalesced).
. "$(dirname "$0")/common.sh"
mkdir -p "$W/sem"
# `prog > log 2>&1`: fds 1 and 2 share one description; their short lines
# are coalesced together (not one write per switch), in order.
"$T/semantics" "$W/sem" interleave 2000 > "$W/il1" 2>&1
rt env SYSCLUSTER_VERBOSE=1 "$T/semantics" "$W/sem" interleave 2000 > "$W/il2" 2>&1
st=$(tail -1 "$W/il2"); head -n -1 "$W/il2" > "$W/il3"
d=$(echo "$st" | sed -n 's/.*deferred=\([0-9]*\).*/\1/p'); fl=$(echo "$st" | sed -n 's/.* flushes=\([0-9]*\) fused=\([0-9]*\).*/\1 + \2/p')
if cmp -s "$W/il1" "$W/il3" && [ "${d:-0}" -ge 1900 ] && [ -n "$fl" ] && [ "$((fl))" -le 40 ]; then
  ok "> log 2>&1: 2000 lines on fds 1 and 2 in order, $d deferred, $((fl)) writes of buffers"
else bad "> log 2>&1: $(cmp "$W/il1" "$W/il3" 2>&1) stats: $st"; fi
# Two separate opens of the file: `prog >> log 2>> log` (two O_APPEND
# descriptions) and `prog > log 2> log` (two offsets, overwriting each
# other): the same bytes as plain, the short lines deferred.  (Not yet
# coalesced across the two descriptions: each switch writes the other's
# buffer out first -- docs/RUNTIME.md, "Known limits".)
for m in append trunc; do
  rm -f "$W/il1" "$W/il2" "$W/il3"
  case $m in
    append) "$T/semantics" "$W/sem" interleave 2000 >> "$W/il1" 2>> "$W/il1"
            rt "$T/semantics" "$W/sem" interleave 2000 >> "$W/il2" 2>> "$W/il2"
            rt env SYSCLUSTER_VERBOSE=1 "$T/semantics" "$W/sem" interleave 2000 >> "$W/il3" 2>> "$W/il3" ;;
    trunc) "$T/semantics" "$W/sem" interleave 2000 > "$W/il1" 2> "$W/il1"
           rt "$T/semantics" "$W/sem" interleave 2000 > "$W/il2" 2> "$W/il2"
           rt env SYSCLUSTER_VERBOSE=1 "$T/semantics" "$W/sem" interleave 2000 > "$W/il3" 2> "$W/il3" ;;
  esac
  # (-v's line goes through fd 2 too: the bytes are compared without it.)
  d=$(deferred "$W/il3")
  if cmp -s "$W/il1" "$W/il2" && [ "${d:-0}" -ge 1900 ]; then
    ok "two opens of one log ($m): 2000 lines on fds 1 and 2 in order, $d deferred"
  else bad "two opens of one log ($m): $(cmp "$W/il1" "$W/il2" 2>&1) deferred='$d'"; fi
done
# Python's print on both, flushed, with long lines among them: none glued
# inside another; the short ones deferred (the -v run, its report apart).
cat > "$W/pp.py" <<'PY'
import sys
for r in range(3):
    for i in range(6):
        print(f"out {r}.{i}", flush=True)
        print(f"err {r}.{i}", file=sys.stderr, flush=True)
    print(chr(65 + r) * 5000, flush=True)
print("end", file=sys.stderr)
PY
python3 "$W/pp.py" > "$W/pp1" 2>&1; rt python3 "$W/pp.py" > "$W/pp2" 2>&1
rt env SYSCLUSTER_VERBOSE=1 python3 "$W/pp.py" > "$W/pp3" 2>&1
if cmp -s "$W/pp1" "$W/pp2" && acted "$W/pp3"; then ok "> log 2>&1: Python's print on stdout and stderr in order, $(deferred "$W/pp3") deferred"
else bad "Python print 2>&1: $(cmp "$W/pp1" "$W/pp2" 2>&1) deferred='$(deferred "$W/pp3")'"; fi
t_finish
