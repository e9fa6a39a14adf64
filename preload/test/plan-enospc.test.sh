#!/usr/bin/env bash
# A planned write site on a full 256 KiB tmpfs: the same bytes as plain,
# a later planned write fails with ENOSPC, and the planned writes were
# deferred.
. "$(dirname "$0")/common.sh"
. test/plan.sh
mkdir -p "$W/mnt"
mount -t tmpfs -o size=256k tmpfs "$W/mnt" 2>/dev/null || t_need tmpfs "plan ENOSPC on a small tmpfs: mounting needs root"
"$T/planned" enospc "$W/mnt/a" > "$W/e1"; s1=$?; cp "$W/mnt/a" "$W/a1"; rm -f "$W/mnt/a"
pl "$T/planned" enospc "$W/mnt/a" > "$W/e2" 2>"$W/plan.err"; s2=$?; cp "$W/mnt/a" "$W/a2"; rm -f "$W/mnt/a"
if cmp -s "$W/a1" "$W/a2" && [ "$s1" = 1 ] && [ "$s2" = 1 ] && [ "$(cat "$W/e2")" = ENOSPC ] && grep -q 'deferred=[1-9]' "$W/plan.err"; then
  ok "plan write: ENOSPC: same bytes on the full tmpfs, a later planned write fails with ENOSPC"
else bad "plan ENOSPC: $s1/$s2 $(cat "$W/e1")/$(cat "$W/e2")"; fi
t_finish
