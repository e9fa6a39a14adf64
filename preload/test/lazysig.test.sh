#!/usr/bin/env bash
# The signal trampolines are installed when first needed, not at start
# (docs/RUNTIME.md, "Signals before the first deferral"; test/lazysig.c):
# none before the first deferral, all of them by it; a fatal signal right
# after it writes the deferred records out (the library built without its
# guardian, so that only the trampoline can); a handler set before any
# write; sigaction's answers before and after, SIG_IGN inherited and set;
# sets racing with the installation.
. "$(dirname "$0")/common.sh"
read -r _ before _ after < <(rt "$T/lazysig" caught "$W/c")
if [ "$before" = 0 ] && [ "$after" != 0 ] && [ -n "$after" ]; then
  ok "no trampoline before the first deferral, installed by it (SigCgt 0, then $after)"
else bad "trampolines: SigCgt before the first write '$before', after '$after' (want 0, then not 0)"; fi

seq 0 7 | sed 's/^/record /' > "$W/want8"
nogrdbg "$T/lazysig" fatal "$W/f" 8 TERM; wait $!; st=$?
if [ "$st" = 143 ] && cmp -s "$W/f" "$W/want8"; then ok "SIGTERM right after the first deferral: dies of it, every record written (no guardian: the trampoline)"
else bad "SIGTERM after the first deferral: status $st, $(wc -l < "$W/f") of 8 records"; fi
rtbg "$T/lazysig" fatal "$W/f" 8 TERM; wait $!; st=$?
if [ "$st" = 143 ] && cmp -s "$W/f" "$W/want8"; then ok "SIGTERM right after the first deferral (with the guardian): every record"
else bad "SIGTERM after the first deferral, with the guardian: status $st, $(wc -l < "$W/f") of 8 records"; fi
nogrdbg "$T/lazysig" fatal "$W/f" 8 KILL; wait $! 2>/dev/null
if cmp -s "$W/f" "$W/want8"; then bad "control: SIGKILL without the guardian lost nothing (were the records deferred?)"
else ok "control: SIGKILL without the guardian loses the deferred records ($(wc -l < "$W/f") of 8 written)"; fi

"$T/lazysig" handler "$W/h1" > "$W/h1.out"
SYSCLUSTER_VERBOSE=1 rt "$T/lazysig" handler "$W/h2" > "$W/h2.out" 2> "$W/h2.err"
if cmp -s "$W/h1" "$W/h2" && cmp -s "$W/h1.out" "$W/h2.out" && grep -q 'handled 10' "$W/h2.out" && acted "$W/h2.err"; then
  ok "a handler set before any write: the same records in the same order, deferred=$(deferred "$W/h2.err")"
else bad "handler set before writing: $(diff "$W/h1" "$W/h2" | head -5 | tr '\n' ' ') $(cat "$W/h2.out")"; fi

(trap '' USR2 SEGV; exec "$T/lazysig" query "$W/q1") > "$W/q1.out" 2>&1
(trap '' USR2 SEGV; exec env LD_PRELOAD="$LIB" SYSCLUSTER_COALESCE=4096 "$T/lazysig" query "$W/q2") > "$W/q2.out" 2>&1
if cmp -s "$W/q1.out" "$W/q2.out" && grep -q 'after User defined signal 2: SIG_IGN' "$W/q2.out" &&
  grep -q 'after User defined signal 1: on_usr1 flags restart mask usr2' "$W/q2.out" &&
  grep -q 'alive, handled 1' "$W/q2.out" && grep -q 'posix_spawn: SIGSEGV SIG_IGN' "$W/q2.out"; then
  ok "sigaction before and after the first deferral: the program's handler, SIG_IGN inherited and set, the default; the kernel agrees; SIGSEGV ignored in a child"
else bad "sigaction answers: $(diff "$W/q1.out" "$W/q2.out" | tr '\n' ' ')"; fi

n=0
for i in $(seq 150); do
  rt "$T/lazysig" race "$W/r" > "$W/r.out" 2>&1; st=$?
  if [ "$st" != 0 ] || [ "$(grep -c 'sigaction agrees, kernel agrees' "$W/r.out")" != 2 ] || [ "$(wc -l < "$W/r")" != 64 ]; then
    n=$((n + 1)); { cat "$W/r.out"; echo "status $st"; } > "$W/rbad.out"
  fi
done
if [ "$n" = 0 ]; then ok "sigaction sets racing with the installation: answers and the kernel agree with the last set (150 runs)"
else bad "race: $n of 150 runs wrong: $(tr '\n' ' ' < "$W/rbad.out")"; fi
t_finish
