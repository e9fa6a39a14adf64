#!/usr/bin/env bash
# The whole loop on the bundled copy program of seed 000:
#   record -> report -> advise -> apply the top recommendation (syscluster cc)
#   -> stat before and after -> verify (same bytes, also under a fault)
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

# The top recommendation, applied: a copy loop by the compiler plugin
# (syscluster cc rebuilds copy.c from the plan, its remarks shown); a
# larger block by the corpus's rewritten copy program.
top=$("$BIN" advise -q "$DEMO/copy.json" --format json | grep -m1 '"rule":' | sed 's/.*"rule": "\([^"]*\)".*/\1/')
case "$top" in
  copy-offload|looped-multicall)
    step "apply #1 ($top) with the compiler: syscluster cc --plan $DEMO/plan.json -O2 -g tests/corpus/copy.c"
    rm -rf "$DEMO/remarks"
    "$BIN" cc --plan "$DEMO/plan.json" --remarks "$DEMO/remarks" -O2 -g tests/corpus/copy.c -o "$DEMO/copy_sc" \
      -Rpass=syscluster -Rpass-missed=syscluster 2> "$DEMO/remarks.txt"
    grep 'remark:' "$DEMO/remarks.txt" | grep -v 'is not a clusterable region: dominance' | sed 's/^[^ ]*tests\/corpus\///'
    echo "(all remarks: $DEMO/remarks.txt)"
    step "what the compiler did with #1: syscluster advise --remarks $DEMO/remarks $DEMO/copy.json"
    "$BIN" advise -q --remarks "$DEMO/remarks" "$DEMO/copy.json" |
      awk '/^#2 /{exit} /^#1 /{one=1} one && /compiler:/{on=1} on && /^$/{exit} on'
    after=("$DEMO/copy_sc" "$DEMO/input" "$DEMO/output2") ;;
  larger-block)
    after=("$CORPUS/copy_block" "$DEMO/input" "$DEMO/output2" 131072)
    step "apply #1 ($top): ${after[*]}" ;;
  *) echo "demo: the top recommendation is $top, which the demo has no rewrite for" >&2; exit 1 ;;
esac
"${after[@]}"
cmp "$DEMO/input" "$DEMO/output2" && echo "same bytes as the original"

step "syscluster stat, before"
"$BIN" stat -r 5 -- "$CORPUS/copy" "$DEMO/input" "$DEMO/output"
step "syscluster stat, after"
"$BIN" stat -r 5 -- "${after[@]}"
cmp "$DEMO/input" "$DEMO/output2"

# verify runs each variant in a scratch copy of a directory: an empty one
# here, the programs and the input named by absolute paths, "out" in the copy.
mkdir -p "$DEMO/empty"
orig=("$(realpath "$CORPUS/copy")" "$(realpath "$DEMO/input")" out)
cand=("$(realpath "${after[0]}")" "$(realpath "$DEMO/input")" out "${after[@]:3}")
step "syscluster verify: the original against the rewrite, 3 runs each, interleaved"
"$BIN" verify -r 3 --dir "$DEMO/empty" -- "${orig[@]}" ::: "${cand[@]}"
if [ "${after[0]}" = "$DEMO/copy_sc" ]; then
  step "syscluster verify under a fault: the 100th write the source issues fails with ENOSPC in both"
  "$BIN" verify --inject write:ENOSPC@100 --dir "$DEMO/empty" -- "${orig[@]}" ::: "${cand[@]}"
fi
