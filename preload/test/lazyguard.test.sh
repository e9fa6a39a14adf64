#!/usr/bin/env bash
# The guardian starts at the first deferral (issue 10, item 7;
# test/lazyguard.c): none in a program that defers nothing; at the first
# deferral of a program with 64 MiB written, a clone that leaves that
# memory out (no fault when it is written again), the program's own
# MADV_DONTFORK marks kept.
. "$(dirname "$0")/common.sh"
if out=$(rt "$T/lazyguard" "$W/lazy" 64 2>&1); then ok "lazy guardian: $(echo "$out" | sed 's/^ok //' | paste -sd ';')"
else bad "lazy guardian"; echo "$out"; fi
t_finish
