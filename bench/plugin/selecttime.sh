#!/usr/bin/env bash
# mpeg_play's select -> gettimeofday loop (seed 000 §4.3) rebuilt by the
# plugin (issue 12, Performance: "never slower than the original").
# tests/corpus/selecttime.c (select, then gettimeofday as a system call, as
# 2002's libc made it) is built by clang-19 -O2 -g (original), recorded,
# advised (`advise --plan-out`: the select-clock cluster), and rebuilt by
# `syscluster cc --plan` for this host and with `--assume-gain` (for a host
# with the kernel module). Side by side: whole processes timed by hyperfine,
# crossings counted by `syscluster stat`, and selecttime_vdso.c (the
# advisor's rewrite: the clock from the vDSO) for reference.
#   bench/plugin/selecttime.sh [COUNT] [RUNS]   (after make build; 100000, 20)
# prints a Markdown table for docs/BENCHMARKS.md, and what the pass did.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$ROOT/target/release/syscluster}
CLANG=${SYSCLUSTER_CLANG:-clang-19}
COUNT=${1:-100000}
RUNS=${2:-20}
W=$(mktemp -d "${TMPDIR:-/tmp}/sc-selecttime.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"
say() { echo "selecttime: $*" >&2; }

"$CLANG" -O2 -g "$ROOT/tests/corpus/selecttime.c" -o original
"$CLANG" -O2 -g "$ROOT/tests/corpus/selecttime_vdso.c" -o vdso
"$BIN" record -q -o rec.json -- ./original 20000 > /dev/null
"$BIN" advise -q rec.json --plan-out plan.json > /dev/null
grep -q '"select-clock"' plan.json || { say "FAIL: the plan has no select-clock cluster"; exit 1; }
"$BIN" cc --plan plan.json --remarks remarks-host -O2 -g "$ROOT/tests/corpus/selecttime.c" -o plugin-host
"$BIN" cc --plan plan.json --remarks remarks-assume --assume-gain -O2 -g "$ROOT/tests/corpus/selecttime.c" -o plugin-assume
for v in host assume; do
  # What the pass decided: every remark's message for the cluster.
  say "plugin ($v): $(python3 - remarks-$v <<'PY'
import glob, re, sys
out = []
for f in glob.glob(sys.argv[1] + "/*.opt.yaml"):
    for doc in open(f).read().split("\n--- "):
        kind = re.search(r"^!(\w+)", doc.lstrip("-\n "), re.M)
        name = re.search(r"^Name:\s+(\S+)", doc, re.M)
        if kind and name and kind.group(1) != "Analysis":
            text = "".join(m.group(1) or m.group(2) for m in re.finditer(
                r"- String:\s+(?:'((?:[^']|'')*)'|\"((?:[^\"\\]|\\.)*)\")", doc, re.S))
            out.append(f"{kind.group(1)} {name.group(1)}: " + re.sub(r"\s+", " ", text.replace("''", "'").replace("\\", "")))
print("; ".join(out) or "no remark")
PY
)"
  if cmp -s original "plugin-$v"; then
    say "plugin ($v): byte for byte the original program"
  elif nm "plugin-$v" | grep -q __syscluster; then
    say "plugin ($v): calls the multi-call runtime"
  else
    say "plugin ($v): does not call the multi-call runtime, but differs from the original"
  fi
done

crossings() { "$BIN" stat --json -- "$@" 2>/dev/null | python3 -c '
import json, sys
out = sys.stdin.read()
print(json.loads(out[out.rindex("{\n  \"by_syscall\""):])["crossings"]["median"])'; }

hyperfine -N --style basic --warmup 3 --runs "$RUNS" --export-json hf.json \
  -n original "./original $COUNT" -n "plugin-built (host)" "./plugin-host $COUNT" \
  -n "plugin-built (--assume-gain)" "./plugin-assume $COUNT" -n "vdso rewrite (reference)" "./vdso $COUNT" >&2
for p in original plugin-host plugin-assume vdso; do crossings "./$p" "$COUNT"; done > crossings.txt

python3 - hf.json crossings.txt "$COUNT" <<'PY'
import json, statistics, sys
rs = json.load(open(sys.argv[1]))["results"]
cross = open(sys.argv[2]).read().split()
count = int(sys.argv[3])
base = statistics.median(rs[0]["times"])
bcpu = rs[0]["user"] + rs[0]["system"]
print(f"| {count:,} iterations | wall ms, median (min) | CPU ms (user + system), mean | crossings | wall vs original | CPU vs original |")
print("|---|---:|---:|---:|---:|---:|")
for r, c in zip(rs, cross):
    w = statistics.median(r["times"])
    cpu = r["user"] + r["system"]
    print(f"| {r['command']} | {w * 1e3:.1f} ({min(r['times']) * 1e3:.1f}) | {cpu * 1e3:.1f} | {int(float(c)):,} | "
          f"{w / base:.3f}x | {cpu / bcpu:.3f}x |")
PY
