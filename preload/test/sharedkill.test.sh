#!/usr/bin/env bash
# SIGKILL at random points while another process writes the same file,
# through the same description and through its own O_APPEND one
# (test/sharedkill.c; issue 9 items 3 and 4): 150 rounds each, every record
# whole, none of the other writer's overwritten, none acknowledged lost,
# and in at least half the rounds the killed writer had a guardian (it
# deferred).  The code before the guardian made these flushes failed 3-6
# rounds in 150.
. "$(dirname "$0")/common.sh"
for mode in same append; do
  if out=$("$T/sharedkill" "$LIB" $mode 150 "$W" 2>&1); then ok "SIGKILL with another writer ($mode description): $(echo "$out" | tail -1)"
  else bad "SIGKILL with another writer ($mode description):"; echo "$out" | tail -4; fi
done
t_finish
