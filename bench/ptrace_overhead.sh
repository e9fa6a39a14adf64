#!/usr/bin/env bash
# Overhead of `syscluster record --backend ptrace` on W1 (8-byte writes to a
# file), side by side with the untraced program, `strace -f -o /dev/null`,
# and the floors of any ptrace recorder (bench/ptrace_floor.c): one stop per
# call (entry only: no results) and two (entry and exit). The commands run
# in turn, REPS times; the median wall time of each gives the ratios.
#
#   bench/ptrace_overhead.sh [COUNT...]        default: 200000 2000000
#   REPS=5 RECORDER="target/release/syscluster record --backend ptrace --no-callsites -o /tmp/p.json --" bench/ptrace_overhead.sh
#
# Prints one JSON object per COUNT (format_version 1) on stdout and a table
# on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-5}
make -s -C tests/corpus
W8=tests/corpus/bin/write8
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
${CC:-cc} -O2 -Wall -o "$OUT/ptrace_floor" bench/ptrace_floor.c
if [ -z "${RECORDER:-}" ]; then
  cargo build -q --release --bin syscluster
  RECORDER="target/release/syscluster record --backend ptrace -o $OUT/profile.json --"
fi
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(200000 2000000)

# Appends the wall seconds of one run of "${@:2}" (output discarded) to $1.
wall() {
  local log=$1 t0=$EPOCHREALTIME
  shift
  "$@" >/dev/null 2>&1 || { echo "bench: failed: $*" >&2; exit 1; }
  awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.6f\n", b - a}' >>"$log"
}

median() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

for n in "${counts[@]}"; do
  for k in plain floor1 floor2 ptrace strace; do : >"$OUT/$k"; done
  for _ in $(seq "$REPS"); do
    wall "$OUT/plain" "$W8" "$OUT/f" "$n"
    wall "$OUT/floor1" "$OUT/ptrace_floor" 1 "$OUT/f" "$n"
    wall "$OUT/floor2" "$OUT/ptrace_floor" 2 "$OUT/f" "$n"
    # shellcheck disable=SC2086
    wall "$OUT/ptrace" $RECORDER "$W8" "$OUT/f" "$n"
    wall "$OUT/strace" strace -f -o /dev/null "$W8" "$OUT/f" "$n"
  done
  p=$(median "$OUT/plain"); f1=$(median "$OUT/floor1"); f2=$(median "$OUT/floor2")
  t=$(median "$OUT/ptrace"); s=$(median "$OUT/strace")
  printf '%s writes, median of %s (load %s):\n  plain %.3f s; floor, entry stop only %.3f s (%sx); floor, entry+exit stops %.3f s (%sx); syscluster ptrace %.3f s (%sx); strace -f %.3f s (%sx)\n' \
    "$n" "$REPS" "$(cut -d' ' -f1 /proc/loadavg)" "$p" "$f1" "$(ratio "$f1" "$p")" "$f2" "$(ratio "$f2" "$p")" \
    "$t" "$(ratio "$t" "$p")" "$s" "$(ratio "$s" "$p")" >&2
  printf '{"format_version":1,"benchmark":"ptrace_overhead","workload":"write8","writes":%s,"reps":%s,"seconds":{"plain":%s,"floor_entry_only":%s,"floor_entry_exit":%s,"ptrace":%s,"strace":%s},"ratio":{"floor_entry_only":%s,"floor_entry_exit":%s,"ptrace":%s,"strace":%s}}\n' \
    "$n" "$REPS" "$p" "$f1" "$f2" "$t" "$s" "$(ratio "$f1" "$p")" "$(ratio "$f2" "$p")" "$(ratio "$t" "$p")" "$(ratio "$s" "$p")"
done
