#!/usr/bin/env bash
# A fork child never writes the parent's deferred bytes (docs/RUNTIME.md,
# "Fork children"; test/semantics.c): 200 rounds of a child woken by a
# shared futex after 21 records, then forks while a thread writes numbered
# records, through fork() and _Fork().  Each record once, in order.  The
# library before the fix failed 9-10 runs of 10 of each (the child copied
# the parent's live slots, or reset the parent's slot locks).
. "$(dirname "$0")/common.sh"
mkdir -p "$W/sem"
for m in "futex 200" "forks 20" "_Forks 20"; do
  if out=$(rt env SYSCLUSTER_VERBOSE=1 timeout 120 "$T/semantics" "$W/sem" $m 2>"$W/fork.v"); then
    if acted "$W/fork.v"; then ok "fork child, $m: $(echo "$out" | tail -1)"
    else bad "fork child, $m: passes, but the library deferred nothing: $(grep 'deferred=' "$W/fork.v" | tail -1)"; fi
  else
    bad "fork child, $m"; echo "$out" | head -3 | cut -c1-300
  fi
done
t_finish
