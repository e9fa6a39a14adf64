#!/usr/bin/env bash
# Overhead of `record --backend ptrace` against the untraced program and
# `strace -f -o /dev/null`, on W1 (8-byte writes to a file), measured side by
# side: the three commands run in turn, REPS times, and the median wall time
# of each gives the ratios.
#
#   bench/ptrace_overhead.sh [COUNT...]        default: 200000 2000000
#   REPS=5 RECORDER="target/release/syscluster record --backend ptrace -o /dev/null --" bench/ptrace_overhead.sh
#
# Prints one JSON object per COUNT (format_version 1) and a table on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-5}
if [ -z "${RECORDER:-}" ]; then
  cargo build -q --release -p syscluster-record --example ptrace_record
  RECORDER="target/release/examples/ptrace_record"
fi
make -s -C tests/corpus
W8=tests/corpus/bin/write8
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(200000 2000000)

# Wall seconds of one run of the command in "$@" (output discarded).
wall() {
  local t0=$EPOCHREALTIME
  "$@" >/dev/null 2>&1
  awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.6f\n", b - a}'
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

for n in "${counts[@]}"; do
  : >"$OUT/plain"; : >"$OUT/ptrace"; : >"$OUT/strace"
  for _ in $(seq "$REPS"); do
    wall "$W8" "$OUT/f" "$n" >>"$OUT/plain"
    # shellcheck disable=SC2086
    wall $RECORDER "$W8" "$OUT/f" "$n" >>"$OUT/ptrace"
    wall strace -f -o /dev/null "$W8" "$OUT/f" "$n" >>"$OUT/strace"
  done
  p=$(median <"$OUT/plain"); t=$(median <"$OUT/ptrace"); s=$(median <"$OUT/strace")
  rp=$(awk -v a="$t" -v b="$p" 'BEGIN {print a / b}'); rs=$(awk -v a="$s" -v b="$p" 'BEGIN {print a / b}')
  printf '%-9s writes: plain %.3f s, ptrace %.3f s (%.1fx), strace -f %.3f s (%.1fx)  [median of %d, load %s]\n' \
    "$n" "$p" "$t" "$rp" "$s" "$rs" "$REPS" "$(cut -d' ' -f1 /proc/loadavg)" >&2
  printf '{"format_version":1,"benchmark":"ptrace_overhead","workload":"write8","writes":%d,"reps":%d,"plain_s":%.4f,"ptrace_s":%.4f,"strace_s":%.4f,"ptrace_ratio":%.2f,"strace_ratio":%.2f}\n' \
    "$n" "$REPS" "$p" "$t" "$s" "$rp" "$rs"
done
