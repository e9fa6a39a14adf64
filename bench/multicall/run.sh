#!/usr/bin/env bash
# Runs libmulticall's benchmarks and rewrites its section of
# docs/BENCHMARKS.md ("## libmulticall (issue 3)", up to the next "## "
# heading; nothing else in the file changes).  JSON goes to
# bench/results/multicall.json.
#   bench/multicall/run.sh BUILD_DIR [--quick]
# (make -C libmulticall bench runs it.)  The calibration auto uses is
# measured first, into bench/results/, so that the numbers are this
# machine's.
set -euo pipefail
B=$(cd "${1:?usage: run.sh BUILD_DIR [--quick]}" && pwd)
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
results=$root/bench/results
doc=$root/docs/BENCHMARKS.md
mkdir -p "$results" "$root/docs"
quick=()
[ "${1:-}" = --quick ] && quick=(--quick)

cal=$results/multicall-calibration.json
echo "bench: calibrating ($B/mc-calibrate ${quick[*]} -o $cal)" >&2
"$B/mc-calibrate" "${quick[@]}" -o "$cal" >&2
export MULTICALL_CALIBRATION=$cal

section=$(mktemp)
trap 'rm -f "$section"' EXIT
{
	echo "## libmulticall (issue 3)"
	echo
	echo "Measured by \`make -C libmulticall bench\` (that is, \`bench/multicall/run.sh libmulticall/build${quick:+ --quick}\`:"
	echo "\`mc-calibrate${quick:+ --quick}\`, then \`mc-bench${quick:+ --quick} --json bench/results/multicall.json\`)"
	echo "on $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -sr), $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //') ×$(nproc),"
	echo "files in $(df -T "${TMPDIR:-/tmp}" | awk 'NR == 2 {print $2}') (\`${TMPDIR:-/tmp}\`), auto calibrated by \`mc-calibrate\` just before."
	echo "Every figure is the fastest of several rounds in which the variants ran"
	echo "interleaved (the one other work disturbed least); every ratio compares figures"
	echo "of the same run.  The machine is a 2-core VM shared with other work (load"
	echo "average $(cut -d' ' -f1 /proc/loadavg) when the run began): single figures move by several per cent"
	echo "between runs, and the *noise* columns say how much within this one."
	echo
	"$B/mc-bench" "${quick[@]}" --json "$results/multicall.json" --dir "${TMPDIR:-/tmp}"
} >"$section"

python3 "$root/bench/doc_section.py" "## libmulticall (issue 3)" <"$section"
echo "bench: wrote the libmulticall section of $doc" >&2
