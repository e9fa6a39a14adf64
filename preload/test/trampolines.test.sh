#!/usr/bin/env bash
# The fatal-signal trampolines alone (the library built without its
# guardian) flush on SIGTERM, SIGSEGV and SIGABRT, each run killed while
# deferring; and the control: without the guardian SIGKILL does lose
# records, which shows the checks of fatal-signals.test.sh can fail.
. "$(dirname "$0")/common.sh"
n=0 held=0
for sig in TERM SEGV ABRT; do
  ack_fresh; nogrdbg "$T/ackwriter" "$W/ack.out" "$W/ack"; p=$!
  sleep 0.03; ack_deferring && held=$((held + 1))
  kill -"$sig" "$p"; wait "$p" 2>/dev/null
  "$T/ackwriter" --check "$W/ack.out" "$W/ack" >/dev/null 2>&1 || n=$((n + 1))
done
if [ "$n" = 0 ] && [ "$held" = 3 ]; then ok "fatal-signal trampolines flush without the guardian (3 runs, each killed deferring)"
else bad "trampolines: $n of 3 runs lost records, $held of 3 killed while deferring"; fi
ack_fresh; nogrdbg "$T/ackwriter" "$W/ack.out" "$W/ack"; p=$!
sleep 0.05; kill -KILL "$p"; wait "$p" 2>/dev/null
if "$T/ackwriter" --check "$W/ack.out" "$W/ack" >/dev/null 2>&1; then bad "control: SIGKILL without the guardian lost nothing (the check cannot fail?)"; else ok "control: without the guardian SIGKILL loses records"; fi
t_finish
