#!/usr/bin/env bash
# The whole loop on the bundled copy program of seed 000:
#   record -> report -> advise -> apply the top recommendation -> stat before and after
# Run by `make demo` after the build; BIN and DEMO come from the Makefile.
set -euo pipefail
BIN=${BIN:-target/release/syscluster}
DEMO=${DEMO:-build/demo}
CORPUS=tests/corpus/bin
mkdir -p "$DEMO"
head -c 24000000 /dev/urandom > "$DEMO/input"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "record the copy program (seed 000, fig. 5) copying 24 MB in 4 KiB blocks"
"$BIN" record -o "$DEMO/copy.json" -- "$CORPUS/copy" "$DEMO/input" "$DEMO/output"
cmp "$DEMO/input" "$DEMO/output"
"$BIN" report --top 8 "$DEMO/copy.json"

step "advise (measures this machine first if it has no calibration yet)"
"$BIN" advise --recalibrate "$DEMO/copy.json" --plan-out "$DEMO/plan.json" > "$DEMO/advice.txt"
"$BIN" advise -q "$DEMO/copy.json" --format html -o "$DEMO/advice.html"
sed -n '/^#1 /,/^#2 /p' "$DEMO/advice.txt" | sed '$d'
echo "(all of it: $DEMO/advice.txt; the page: $DEMO/advice.html; the plan: $DEMO/plan.json)"

# The top recommendation, applied: the corpus holds the copy program
# rewritten as each rule says.
top=$("$BIN" advise -q "$DEMO/copy.json" --format json | grep -m1 '"rule":' | sed 's/.*"rule": "\([^"]*\)".*/\1/')
case "$top" in
  copy-offload) after=("$CORPUS/copy_cfr" "$DEMO/input" "$DEMO/output2") ;;
  larger-block) after=("$CORPUS/copy_block" "$DEMO/input" "$DEMO/output2" 131072) ;;
  *) echo "demo: the top recommendation is $top, which the demo has no rewrite for" >&2; exit 1 ;;
esac
step "apply #1 ($top): ${after[*]}"
"${after[@]}"
cmp "$DEMO/input" "$DEMO/output2" && echo "same bytes as the original"

step "syscluster stat, before"
"$BIN" stat -r 5 -- "$CORPUS/copy" "$DEMO/input" "$DEMO/output"
step "syscluster stat, after"
"$BIN" stat -r 5 -- "${after[@]}"
cmp "$DEMO/input" "$DEMO/output2"
