#!/usr/bin/env bash
# The guardian (docs/RUNTIME.md, "The guardian"): one killed on its own is
# replaced and SIGKILL safety comes back; it ends by exit(2) with status 0
# (it used to return into libc's clone, which it has unmapped, and die of
# SIGSEGV: a kernel log line per process); one stopped by someone
# (SIGSTOP) has the flushes it was asked for taken back after a second,
# the program goes on writing, and once it runs again a SIGKILL still
# loses nothing.
. "$(dirname "$0")/common.sh"
# guardian PID: the program's live guardian task (comm syscluster-grd).
guardian() {
  for c in $(pgrep -P "$1"); do
    [ "$(cat /proc/$c/comm 2>/dev/null)" = syscluster-grd ] && grep -q '^State:.*[RS]' /proc/$c/status 2>/dev/null && echo "$c"
  done | head -1
}
ack_fresh; rtbg "$T/ackwriter" "$W/ack.out" "$W/ack"; p=$!
sleep 0.2
g=$(guardian "$p")
kill -KILL "$g" 2>/dev/null
sleep 0.5
g2=$(guardian "$p")
kill -KILL "$p"; wait "$p" 2>/dev/null
if [ -n "$g" ] && [ -n "$g2" ] && [ "$g2" != "$g" ] && check_ack >/dev/null; then ok "a killed guardian is replaced (pid $g -> $g2); a later SIGKILL still loses nothing"
else bad "guardian replacement: old '$g' new '$g2'"; fi

if command -v strace >/dev/null; then
  mkdir -p "$W/sem" # 1000 short writes, then return from main
  st=$(strace -f -e trace=wait4 -o "$W/grd.st" env LD_PRELOAD="$LIB" SYSCLUSTER_COALESCE=4096 "$T/semantics" "$W/sem" exit return 2>&1; grep __WCLONE "$W/grd.st")
  if echo "$st" | grep -q 'WIFEXITED(s) && WEXITSTATUS(s) == 0'; then ok "the guardian exits with status 0"
  else bad "the guardian's end: $st"; fi
else bad "the guardian's end: strace not installed (scripts/install-deps.sh installs it)"; fi

ack_fresh; rtbg "$T/ackwriter" "$W/ack.out" "$W/ack" append; p=$!
sleep 0.2
g=$(guardian "$p")
kill -STOP "$g" 2>/dev/null
a1=$(od -An -tu8 -N8 "$W/ack" | tr -d ' '); sleep 2; a2=$(od -An -tu8 -N8 "$W/ack" | tr -d ' ')
kill -CONT "$g" 2>/dev/null; sleep 0.1
kill -KILL "$p"; wait "$p" 2>/dev/null
if [ -n "$g" ] && [ "${a2:-0}" -gt "${a1:-0}" ] && check_ack >/dev/null; then ok "a stopped guardian: the program goes on ($a1 -> $a2 records), and a later SIGKILL loses nothing"
else bad "stopped guardian: guardian '$g', records $a1 -> $a2"; check_ack; fi
t_finish
