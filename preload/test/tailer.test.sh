#!/usr/bin/env bash
# A reader polling the file sees each write within the time bound
# (test/tailer.c: a record every 250 ms, each seen before the next); and
# the control: with a 3 s bound the reader waits -- the library deferred,
# or the first check would pass with it off.  (How fast is measured in
# bench/, not here.)
. "$(dirname "$0")/common.sh"
if worst=$(rt "$T/tailer" "$W/tail" 10 250); then ok "tailer: each record seen within 250 ms (worst ${worst} us, bound 5 ms)"; else bad "tailer"; fi
if SYSCLUSTER_FLUSH_MS=3000 rt "$T/tailer" "$W/tail" 3 250 >/dev/null 2>&1; then bad "control: a 3 s bound still met 250 ms"; else ok "control: with a 3 s bound the reader waits"; fi
t_finish
