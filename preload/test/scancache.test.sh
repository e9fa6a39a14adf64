#!/usr/bin/env bash
# The scan cache (test/scancache.c, ~3 s): a hit gives the scan's verdict;
# new bytes, a path renamed over, a bad entry are rescanned; a file just
# written is not kept; 16 concurrent first runs agree; no usable directory
# means no cache, quietly.
. "$(dirname "$0")/common.sh"
mkdir -p "$W/scancache"
if out=$(timeout 120 "$T/scancache" "$LIB" "$T" "$W/scancache" 2>&1); then ok "scan cache: $(echo "$out" | grep -c '^ok') checks"
else bad "scan cache"; echo "$out" | grep -v '^ok'; fi
t_finish
