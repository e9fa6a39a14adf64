#!/usr/bin/env bash
# ENOSPC on a 256 KiB tmpfs (test/enospc.c; docs/RUNTIME.md, "Errors of
# deferred writes"): stopping at the error, ignoring errors then closing,
# and a logger that frees space and writes the failed record again (itself,
# another fd, a fork) -- the same bytes and messages as plain, and the
# writes deferred (each runtime run's -v report).
. "$(dirname "$0")/common.sh"
mkdir -p "$W/mnt"
mount -t tmpfs -o size=256k tmpfs "$W/mnt" 2>/dev/null || t_need tmpfs "ENOSPC on a small tmpfs: mounting needs root"
rtv() { rt env SYSCLUSTER_VERBOSE=1 "$@" 2> "$W/v.err"; }
"$T/enospc" "$W/mnt/a" stop 100000 > "$W/e1"; s1=$?; cp "$W/mnt/a" "$W/a1"; rm -f "$W/mnt/a"
rtv "$T/enospc" "$W/mnt/a" stop 100000 > "$W/e2"; s2=$?; cp "$W/mnt/a" "$W/a2"; rm -f "$W/mnt/a"
if cmp -s "$W/a1" "$W/a2" && [ "$s1" = 1 ] && [ "$s2" = 1 ] && [ "$(cat "$W/e2")" = ENOSPC ] && acted "$W/v.err"; then
  ok "ENOSPC: same bytes on the full tmpfs, a write fails with ENOSPC; $(deferred "$W/v.err") deferred"
else bad "ENOSPC stop: $s1/$s2 $(cat "$W/e1")/$(cat "$W/e2"), deferred='$(deferred "$W/v.err")'"; fi
r1=$("$T/enospc" "$W/mnt/b" close 33000); rm -f "$W/mnt/b"
r2=$(rtv "$T/enospc" "$W/mnt/b" close 33000); rm -f "$W/mnt/b"
if [ "$r1" = "$r2" ] && acted "$W/v.err"; then ok "ENOSPC: writes ignoring errors, then close: as plain ($r2); $(deferred "$W/v.err") deferred"
else bad "ENOSPC close: plain '$r1', runtime '$r2', deferred='$(deferred "$W/v.err")'"; fi
# A logger that frees space on ENOSPC and writes the record again: the
# same bytes as plain, and (one writer: the runtime stops deferring near
# full) the error at the same records.
for m in retry retry-other retry-fork; do
  "$T/enospc" "$W/mnt/a" $m 30000 > "$W/e1"; s1=$?; cp "$W/mnt/a" "$W/a1"; rm -f "$W/mnt"/*
  rtv "$T/enospc" "$W/mnt/a" $m 30000 > "$W/e2"; s2=$?; cp "$W/mnt/a" "$W/a2"; rm -f "$W/mnt"/*
  if [ "$s1" = 0 ] && [ "$s2" = 0 ] && cmp -s "$W/a1" "$W/a2" && cmp -s "$W/e1" "$W/e2" && [ "$(wc -l < "$W/e2")" -ge 1 ] && acted "$W/v.err"; then
    ok "ENOSPC $m: every record once, in order, as plain; $(tr '\n' ' ' < "$W/e2"); $(deferred "$W/v.err") deferred"
  else bad "ENOSPC $m: status $s1/$s2, plain '$(tr '\n' ' ' < "$W/e1")' runtime '$(tr '\n' ' ' < "$W/e2")', $(cmp "$W/a1" "$W/a2" 2>&1), deferred='$(deferred "$W/v.err")'"; fi
done
t_finish
