#!/usr/bin/env bash
# Seed 000 table 3 / fig. 8 with the copy program *compiled by the plugin*:
# tests/corpus/copy.c at each block size (its `#define N` changed, nothing
# else), built by clang-19 -O2 -g (original) and by `syscluster cc` with a
# plan recorded from the original (plugin), against the hand-rewritten
# tests/corpus/copy_cfr.  Whole processes timed by hyperfine (median);
# files in the page cache, copied to a new file on the same filesystem.
#   bench/plugin/run.sh [SIZES] [BLOCKS]   (after make build)
# prints a Markdown table for docs/BENCHMARKS.md.  CPU=1 adds each
# program's CPU time (user + system, mean of the runs) and the plugin's
# ratio to copy_cfr in it: on a machine others load, wall-time medians
# wander by 2x and more, CPU time much less.
#   TURNS=1 bench/plugin/run.sh ...
# runs plugin-built and copy_cfr in turn instead (bench/plugin/turns.c), so
# that other jobs on the machine move them alike, and compares them round
# by round (the median of the rounds' ratios); the original runs on its
# own after them (whatever runs right after the original pays for some of
# the writing-back of its block-by-block output); the table gets each
# one's CPU time (user + system, the median).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$ROOT/target/release/syscluster}
BIN=$(realpath "$BIN")  # the script works in a scratch directory
CLANG=${SYSCLUSTER_CLANG:-clang-19}
SIZES=${1:-"81920 947200 2390753 67108864"}
BLOCKS=${2:-"512 1024 2048 4096 8192 16384"}
RUNS=${RUNS:-20}
W=$(mktemp -d "${TMPDIR:-/tmp}/sc-bench-plugin.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"

make -s -C "$ROOT/tests/corpus" >/dev/null
# The host's calibration, measured now: the pass decides from it (and the
# recorded run's block count) and the rebuilt programs run with it.
if [ -z "${MULTICALL_CALIBRATION:-}" ]; then
  "$ROOT/libmulticall/build/mc-calibrate" -o "$W/calibration.json" >/dev/null 2>&1
  export MULTICALL_CALIBRATION=$W/calibration.json
fi
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
first = d["costs_ns"]["first_context"] / 1000
fusion = d["costs_ns"].get("first_fusion_context")
fusion = "not measured" if fusion is None else f"{fusion / 1000:.0f} us"
fixed = d["costs_ns"].get("fused_copy_fixed")
fixed = "not measured" if fixed is None else f"{fixed / 1000:.1f} us"
print(f"calibration: first context {first:.0f} us (auto), {fusion} (fusion: what a priced copy between files pays); "
      f"each fused copy pays {fixed} more (fused_copy_fixed); "
      "the saving per block: each remark below", file=sys.stderr)' "$MULTICALL_CALIBRATION"
CFR="$ROOT/tests/corpus/bin/copy_cfr"
for s in $SIZES; do head -c "$s" /dev/urandom > "in.$s"; done
head -c 2390753 /dev/urandom > rec_in  # the recorded run: 2.28 MiB
# Cached but clean: a copy of pages still being written back is slower,
# and the first cells would pay for it.
sync

# "median min cpu" of a hyperfine run, in µs (cpu: user + system, mean).
times() { python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(r["median"] * 1e6, r["min"] * 1e6, (r["user"] + r["system"]) * 1e6)' "$1"; }
CPU=${CPU:-0}
human() { python3 -c '
import sys; s=int(sys.argv[1])
print(f"{s/1048576:.2f} MiB" if s >= 1048576 else f"{s/1024:.0f} KiB")' "$1"; }

if [ -n "${TURNS:-}" ]; then
  cc -O2 -o "$W/turns" "$ROOT/bench/plugin/turns.c"
  echo "| file | block | original µs | plugin-built µs | copy_cfr (by hand) µs | CPU µs (orig / plugin / cfr) | plugin vs original | plugin vs by hand (paired) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
elif [ "$CPU" = 1 ]; then
  echo "| file | block | original µs | plugin-built µs | copy_cfr (by hand) µs | plugin vs original | plugin vs by hand | CPU µs: original / plugin / by hand | plugin vs by hand (CPU) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
else
  echo "| file | block | original µs | plugin-built µs | copy_cfr (by hand) µs | plugin vs original | plugin vs by hand |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
fi
# Each cell: median (min) of RUNS whole-process runs; ratios of medians.
for b in $BLOCKS; do
  mkdir -p "b$b" && sed "s/^#define N 4096$/#define N $b/" "$ROOT/tests/corpus/copy.c" > "b$b/copy.c"
  grep -q "^#define N $b\$" "b$b/copy.c" || { echo "bench: cannot set the block size in copy.c" >&2; exit 1; }
  "$CLANG" -O2 -g "$W/b$b/copy.c" -o "b$b/orig"
  "$BIN" record -q -o "b$b/prof.json" -- "b$b/orig" rec_in "b$b/rec_out" >/dev/null
  "$BIN" advise -q "b$b/prof.json" --plan-out "b$b/plan.json" >/dev/null
  "$BIN" cc --plan "b$b/plan.json" -O2 -g "$W/b$b/copy.c" -o "b$b/plugin" -Rpass=syscluster -Rpass-missed=syscluster 2> "b$b/remarks"
  # Clustered, or left alone because the recorded run does not pay for a
  # first context (then the plugin-built program is the original).
  grep -q "became one looped multi-call\|is left as it is: no gain" "b$b/remarks" ||
    { echo "bench: block $b: the plugin neither clustered the loop nor said why not" >&2; cat "b$b/remarks" >&2; exit 1; }
  grep -o "estimated.*" "b$b/remarks" | sort -u | sed "s/^/bench: block $b: /" >&2
  for s in $SIZES; do
    if [ -n "${TURNS:-}" ]; then
      { "$W/turns" "$RUNS" "$W/in.$s" "$W/out" "$W/b$b/plugin" "$CFR" &&
        "$W/turns" "$RUNS" "$W/in.$s" "$W/out" "$W/b$b/orig"; } > turns.out ||
        { echo "bench: turns at $s/$b failed" >&2; exit 1; }
      for v in orig plugin cfr; do
        prog="b$b/$v"; [ $v = cfr ] && prog=$CFR
        rm -f out && "$prog" "in.$s" out && cmp -s "in.$s" out || { echo "bench: $v at $s/$b: wrong output" >&2; exit 1; }
      done
      python3 -c '
import sys
size, b = sys.argv[1], sys.argv[2]
(p, pm, pc, pr), (c, cm, cc, _), (o, om, oc, _) = [tuple(map(float, l.split()[1:])) for l in open(sys.argv[3])]
print(f"| {size} | {b} | {o:.0f} ({om:.0f}) | {p:.0f} ({pm:.0f}) | {c:.0f} ({cm:.0f}) | {oc:.0f} / {pc:.0f} / {cc:.0f} | {o/p:.2f}x faster | {(pr-1)*100:+.1f} % |")' \
        "$(human "$s")" "$b" turns.out
      continue
    fi
    for v in orig plugin cfr; do
      prog="b$b/$v"; [ $v = cfr ] && prog=$CFR
      hyperfine -N --style none -w 3 -r "$RUNS" --export-json "r.$v.json" \
        --prepare "rm -f $W/out" "$prog $W/in.$s $W/out" >/dev/null 2>&1
      cmp -s "in.$s" out || { echo "bench: $v at $s/$b: wrong output" >&2; exit 1; }
    done
    python3 -c '
import sys
size, b, cpu = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
(o, om, oc), (p, pm, pc), (c, cm, cc) = [tuple(map(float, t.split())) for t in sys.argv[4:]]
row = f"| {size} | {b} | {o:.0f} ({om:.0f}) | {p:.0f} ({pm:.0f}) | {c:.0f} ({cm:.0f}) | {o/p:.2f}x faster | {(p/c-1)*100:+.0f} % |"
if cpu:
    row += f" {oc:.0f} / {pc:.0f} / {cc:.0f} | {(pc/cc-1)*100:+.0f} % |"
print(row)' \
      "$(human "$s")" "$b" "$CPU" "$(times r.orig.json)" "$(times r.plugin.json)" "$(times r.cfr.json)"
  done
done
