#!/usr/bin/env bash
# A reader woken through a process-shared object -- semaphore, condition
# variable (signal and broadcast), mutex, read-write lock, barrier, futex
# -- sees every record it was told of (test/observer.c), with a 60 s time
# bound so that only the wrapper of the waking call can have published;
# and the writer's -v report shows its records were deferred.
. "$(dirname "$0")/common.sh"
for k in sem cond broadcast mutex rwlock barrier futex; do
  if r=$(SYSCLUSTER_FLUSH_MS=60000 rt env SYSCLUSTER_VERBOSE=1 timeout 60 "$T/observer" "$W/obs" "$k" 50 2>"$W/obs.err") && acted "$W/obs.err"; then
    ok "observer through $k: $r, $(deferred "$W/obs.err") deferred"
  else bad "observer through $k: $r, deferred='$(deferred "$W/obs.err")'"; fi
done
t_finish
