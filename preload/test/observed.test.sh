#!/usr/bin/env bash
# Every short write observed at once: the runtime stops deferring there
# (a flush per saved write would make the program slower than plain): the
# same file, and at most 50 flushes in the -v report.
. "$(dirname "$0")/common.sh"
mkdir -p "$W/sem"; "$T/semantics" "$W/sem" observed 5000 && cp "$W/sem/observed" "$W/obs1"
rt env SYSCLUSTER_VERBOSE=1 "$T/semantics" "$W/sem" observed 5000 2> "$W/obs.err"
st=$(grep -o 'deferred=[0-9]* direct=[0-9]* flushes=[0-9]*' "$W/obs.err" | tail -1)
fl=$(echo "$st" | sed -n 's/.*flushes=\([0-9]*\).*/\1/p')
if cmp -s "$W/obs1" "$W/sem/observed" && [ -n "$fl" ] && [ "$fl" -le 50 ]; then ok "a write observed at once: same file, deferring backs off ($st of 5000 writes)"
else bad "write observed at once: '$st' (want at most 50 flushes), $(cmp "$W/obs1" "$W/sem/observed" 2>&1)"; fi
t_finish
