#!/usr/bin/env bash
# Nothing acknowledged is lost when the program dies abruptly: SIGKILL,
# SIGTERM, SIGSEGV and SIGABRT from outside at random moments, plain
# writes and O_APPEND, checked record by record against the count the
# program saw acknowledged (test/ackwriter.c) -- each run killed while the
# runtime held acknowledged records back (ackwriter --deferring), or the
# check would pass with the library off.
. "$(dirname "$0")/common.sh"
for sig in KILL TERM SEGV ABRT; do
  for mode in "" append; do
    n=0 held=0
    for i in $(seq 8); do
      ack_fresh; rtbg "$T/ackwriter" "$W/ack.out" "$W/ack" $mode; p=$!
      sleep "0.0$((RANDOM % 9 + 1))"
      ack_deferring && held=$((held + 1))
      kill -"$sig" "$p"; wait "$p" 2>/dev/null
      check_ack >/dev/null || n=$((n + 1))
    done
    if [ "$n" = 0 ] && [ "$held" = 8 ]; then ok "SIG$sig ${mode:-write}: every acknowledged record on disk (8 runs, each killed deferring)"
    else bad "SIG$sig ${mode:-write}: $n of 8 runs lost records, $held of 8 killed while deferring"; fi
  done
done
t_finish
