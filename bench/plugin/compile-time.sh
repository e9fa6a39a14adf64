#!/usr/bin/env bash
# The pass's compile-time cost on a real program's build whose plan has a
# cluster the pass works on (issue 12, Performance: "under 5 % of the
# compile time of a real program's build"). Debian's dosfstools 4.2
# (`apt-get source`, cached in build/debian-src/ as bench/plugin/debian.sh
# does) is configured and built by clang-19 -O2 -g, fsck.fat is recorded
# checking a 32 MiB FAT image and advised; then the same tree's `make`
# (after `make clean`, configure not included) is timed side by side, in
# interleaved rounds, with CC=clang-19, CC="syscluster cc --plan PLAN" (the pass
# proves the lseek -> read region of fs_read, leaves it: no gain on this
# host) and CC="syscluster cc --plan PLAN --assume-gain" (it replaces it).
# The CPU time is make's and every compiler's it waited for (less moved by
# other jobs than wall time).
#   bench/plugin/compile-time.sh [RUNS]      (after make build; RUNS: 10)
# prints a Markdown table for docs/BENCHMARKS.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$ROOT/target/release/syscluster}
CLANG=${SYSCLUSTER_CLANG:-clang-19}
RUNS=${1:-10}
CACHE=$ROOT/build/debian-src/dosfstools
W=$(mktemp -d "${TMPDIR:-/tmp}/sc-compile-time.XXXXXX")
trap 'rm -rf "$W"' EXIT
say() { echo "compile-time: $*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

if [ ! -f "$CACHE/.complete" ]; then
  command -v dpkg-source > /dev/null || fail "dpkg-source is missing: scripts/install-deps.sh --bench"
  rm -rf "$CACHE" && mkdir -p "$CACHE"
  (cd "$CACHE" && apt-get source -qq dosfstools > apt.log 2>&1) ||
    fail "apt-get source dosfstools failed (no deb-src line? scripts/install-deps.sh --bench adds it): $(tail -3 "$CACHE/apt.log")"
  touch "$CACHE/.complete"
fi
SRC=$(find "$CACHE" -mindepth 1 -maxdepth 1 -type d | head -1)
[ -n "$SRC" ] || fail "no source tree in $CACHE"
NOREGEN=(ACLOCAL=true AUTOCONF=true AUTOMAKE=true AUTOHEADER=true MAKEINFO=true)

cp -a "$SRC" "$W/tree" && cd "$W/tree"
./configure -q CC="$CLANG" CFLAGS="-O2 -g" > configure.log 2>&1 || fail "configure: $(tail -3 configure.log)"
make -s -j2 "${NOREGEN[@]}" > make.log 2>&1 || fail "make: $(tail -5 make.log)"
src/mkfs.fat -C "$W/img" 65536 > /dev/null
"$BIN" record -q -o "$W/prof.json" -- src/fsck.fat -n -v "$W/img" > /dev/null
"$BIN" advise -q "$W/prof.json" --plan-out "$W/plan.json" > /dev/null
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["clusters"]))' "$W/plan.json")
[ "$n" -gt 0 ] || fail "the plan has no cluster: nothing for the pass to work on"

# What the pass does in this build (one build, remarks kept): the bench
# is only worth its name if the pass proved a region.
make -s clean > /dev/null
make -s -j2 "${NOREGEN[@]}" CC="$BIN cc --plan $W/plan.json --remarks $W/remarks --assume-gain" > make.log 2>&1 ||
  fail "make with syscluster cc: $(tail -5 make.log)"
clustered=$(grep -l 'Name:.*Clustered' "$W"/remarks/*.opt.yaml 2>/dev/null | wc -l)
[ "$clustered" -gt 0 ] || fail "the pass replaced no region with --assume-gain: $(grep -h -A3 'Name:' "$W"/remarks/*.opt.yaml | head -20)"
say "plan: $n clusters; with --assume-gain the pass replaced regions in $clustered translation unit(s) of $(ls "$W"/remarks/*.opt.yaml | wc -l)"

# Interleaved rounds (clang, --plan, --plan --assume-gain, then again),
# so that the machine's load, which moves over minutes, hits the three
# alike; each build after `make clean`, its wall time and the CPU time of
# make and every compiler it waited for (getrusage RUSAGE_CHILDREN).
python3 - "$RUNS" "$CLANG" "$BIN cc --plan $W/plan.json" "$BIN cc --plan $W/plan.json --assume-gain" "${NOREGEN[@]}" <<'PY'
import os, resource, statistics, subprocess, sys, time
runs, variants, noregen = int(sys.argv[1]), sys.argv[2:5], sys.argv[5:]
names = ["clang-19", "syscluster cc --plan", "syscluster cc --plan --assume-gain"]
wall = {n: [] for n in names}
cpu = {n: [] for n in names}
for r in range(runs):
    for name, cc in zip(names, variants):
        subprocess.run(["make", "-s", "clean"], check=True, stdout=subprocess.DEVNULL)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.monotonic()
        subprocess.run(["make", "-s", "-j2", *noregen, f"CC={cc}"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall[name].append(time.monotonic() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    print(f"compile-time: round {r + 1}/{runs}: " +
          ", ".join(f"{n} {cpu[n][-1]:.2f} s CPU" for n in names), file=sys.stderr)
bw, bc = statistics.median(wall[names[0]]), statistics.median(cpu[names[0]])
print(f"| build (`make -j2` after `make clean`, {runs} interleaved rounds) | wall s, median (min) | CPU s (user + system), median (min) | wall vs clang | CPU vs clang |")
print("|---|---:|---:|---:|---:|")
for n in names:
    w, c = statistics.median(wall[n]), statistics.median(cpu[n])
    print(f"| {n} | {w:.2f} ({min(wall[n]):.2f}) | {c:.2f} ({min(cpu[n]):.2f}) | {(w / bw - 1) * 100:+.1f} % | {(c / bc - 1) * 100:+.1f} % |")
PY
