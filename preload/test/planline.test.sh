#!/usr/bin/env bash
# The plan line format: the library's parser on the fixtures the
# supervisor's writer is tested on, and 20,000 mutations of them
# (test/planline.c, built with ASan).
. "$(dirname "$0")/common.sh"
if out=$("$T/planline" ../tests/fixtures/formats/plan-line 20000 2>&1); then ok "plan lines: $(echo "$out" | tail -1 | cut -c6-)"
else bad "plan lines"; echo "$out" | grep -v '^ok' | head -40; fi
t_finish
