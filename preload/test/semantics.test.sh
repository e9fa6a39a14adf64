#!/usr/bin/env bash
# In-process semantics (test/semantics.c): a deferred write is never
# observable as one -- reads, stat, lseek, pread through other fds,
# children, EFAULT, a signal handler writing, mapped files, dup2 -- and
# the -v report shows the library deferred writes meanwhile.
. "$(dirname "$0")/common.sh"
mkdir -p "$W/sem"
if out=$(rt env SYSCLUSTER_VERBOSE=1 timeout 120 "$T/semantics" "$W/sem" 2>&1); then
  echo "$out" | grep 'deferred=' > "$W/sem.v"
  if acted "$W/sem.v"; then ok "semantics: $(echo "$out" | grep -c '^ok') checks, $(deferred "$W/sem.v") writes deferred"
  else bad "semantics: the checks hold, but the library deferred nothing: $(cat "$W/sem.v")"; fi
else
  bad "semantics"; echo "$out" | grep -v '^ok'
fi
t_finish
