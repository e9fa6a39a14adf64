#!/usr/bin/env bash
# libc's own stat and open calls (nftw, ftw, fts, dlopen) see every byte
# of a file written in short writes, deferred (test/libcstat.c), and
# dlerror() survives the runtime's lookups.
. "$(dirname "$0")/common.sh"
mkdir -p "$W/lcs1" "$W/lcs2"
"$T/libcstat" "$W/lcs1" "$T/libdatatext.so" > "$W/lcs1.out" 2>&1
msg=$(rt env SYSCLUSTER_VERBOSE=1 "$T/libcstat" "$W/lcs2" "$T/libdatatext.so" 2>&1 > "$W/lcs2.out")
if grep -q '^nftw log 1600$' "$W/lcs1.out" && grep -q '^dlopen ok 7$' "$W/lcs1.out" && grep -q '^dlerror failed /nonexistent' "$W/lcs1.out" && cmp -s "$W/lcs1.out" "$W/lcs2.out" &&
   echo "$msg" | grep -q 'deferred=[1-9]'; then
  ok "nftw, ftw, fts and dlopen of a file written in short writes see every byte; dlerror() survives the runtime's lookups"
else bad "libc-internal stat/open: $(diff "$W/lcs1.out" "$W/lcs2.out" | tr '\n' ' ') $msg"; fi
t_finish
