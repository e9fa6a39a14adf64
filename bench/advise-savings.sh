#!/usr/bin/env bash
# The advisor's estimates against measurements (issue 5): runs the savings
# test (tests/integration/savings.rs: calibrate, profile, advise, apply each
# recommendation, measure before and after) and writes its table into
# docs/BENCHMARKS.md, section "## Advisor: estimated vs measured savings
# (issue 5)", leaving the rest of the file as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
# The timed test is #[ignore]d so that `make test` does not run it.
cargo test --release --locked --test integration -- savings::estimated --ignored --nocapture
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
integration -- savings::estimated --ignored`).

{table}
"""
doc_section.replace(head, body)
print("docs/BENCHMARKS.md: section updated")
PY
