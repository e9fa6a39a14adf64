#!/usr/bin/env bash
# The advisor's estimates against measurements (issue 5): runs the savings
# test (bench/advise-savings/advise_savings.rs: calibrate, profile, advise, apply each
# recommendation, measure before and after) and writes its table into
# docs/BENCHMARKS.md, section "## Advisor: estimated vs measured savings
# (issue 5)", leaving the rest of the file as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
# A timed test target that `cargo test` leaves out (test = false in Cargo.toml).
cargo test --release --locked --test advise_savings -- --nocapture
python3 - <<'PY'
import pathlib, sys
sys.path.insert(0, "bench")
import doc_section
table = pathlib.Path("target/tmp/advise-savings.md").read_text()
head = "## Advisor: estimated vs measured savings (issue 5)"
body = f"""{head}

Each corpus recommendation this machine can apply, applied as the
recommendation says (the rewritten programs are in `tests/corpus/`; write
coalescing also by `syscluster run --coalesce-writes` on the unchanged
binary), against
the advisor's estimate from a profile of the original (`strace` import) and
a fresh `syscluster calibrate`. Times are CPU times (user + system) of the
program, the least disturbed of 9 alternating runs each. The test fails when
a measured saving is not within a factor of 2 of its estimate.

Command: `bench/advise-savings.sh` (runs `cargo test --release --test
advise_savings`).

{table}
"""
doc_section.replace(head, body)
print("docs/BENCHMARKS.md: section updated")
PY
