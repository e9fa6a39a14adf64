#!/usr/bin/env bash
# Errors of deferred writes (docs/RUNTIME.md, "Errors of deferred
# writes"): past RLIMIT_FSIZE (test/enospc.c efbig) the same file and
# status as plain, the next write fails with EFBIG, and the writes before
# it were deferred.
. "$(dirname "$0")/common.sh"
"$T/enospc" "$W/fb1" efbig 100000 > "$W/fb1.msg"; s1=$?
rt env SYSCLUSTER_VERBOSE=1 "$T/enospc" "$W/fb2" efbig 100000 > "$W/fb2.msg" 2> "$W/fb2.err"; s2=$?
if cmp -s "$W/fb1" "$W/fb2" && [ "$s1" = "$s2" ] && [ "$(cat "$W/fb2.msg")" = EFBIG ] && acted "$W/fb2.err"; then
  ok "EFBIG: same file ($(stat -c %s "$W/fb2") bytes), same status, the next write fails with EFBIG; $(deferred "$W/fb2.err") deferred"
else bad "EFBIG: status $s1/$s2, $(cat "$W/fb1.msg")/$(cat "$W/fb2.msg"), deferred='$(deferred "$W/fb2.err")'"; fi
t_finish
