#!/usr/bin/env bash
# Every benchmark of the project, one after the other (never two at once:
# they measure time), each rewriting its own section of docs/BENCHMARKS.md
# with its figures and the command that produced them.
#
#   bench/run.sh            all of them (about 30-40 minutes; needs root for BPF)
#   bench/run.sh record import ptrace multicall runtime startup advise   a selection
#
# `make bench` installs the compared tools (strace, perf, bpftrace,
# libbpf-tools, bcc) and runs this.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/results
all=(record import ptrace multicall runtime startup advise)
[ $# -gt 0 ] || set -- "${all[@]}"
for b in "$@"; do
  echo "== bench: $b" >&2
  case "$b" in
    record) bench/record/run.py --reps 5 --write-doc --json bench/results/record-overhead.json ;;
    import) bench/import/run.py --reps 5 ;;
    ptrace) REPS=5 WRITE_DOC=1 bench/ptrace/overhead.sh 200000 2000000 > bench/results/ptrace-floor.json ;;
    multicall) make -s -C libmulticall bench ;;
    runtime) bench/runtime/bench.py && bench/runtime/timebound.py ;;
    startup) bench/runtime/startup.py ;;
    advise) bench/advise-savings.sh ;;
    *) echo "bench/run.sh: unknown benchmark $b (known: ${all[*]})" >&2; exit 2 ;;
  esac
done
