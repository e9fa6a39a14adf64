#!/usr/bin/env python3
"""The plugin's plan reader on the shared plan fixtures
(tests/fixtures/formats/plan, which the Rust reader is tested on too): it
must take every valid-*.json and refuse every invalid-*.json with an error
naming the plan.

    plan-fixtures.py FIXTURES SOURCE -- CLANG-WITH-PLUGIN...
"""
import os
import subprocess
import sys


def main(argv):
    sep = argv.index("--")
    fixtures, source = argv[1:sep]
    clang = argv[sep + 1:]
    names = sorted(f for f in os.listdir(fixtures) if f.endswith(".json"))
    bad = []
    for name in names:
        path = os.path.join(fixtures, name)
        r = subprocess.run(clang + [f"-mllvm", f"-syscluster-plan={path}", "-c", source, "-o", os.devnull],
                           capture_output=True, text=True)
        refused = r.returncode != 0 and f"plan {path}" in r.stderr
        if name.startswith("valid") and r.returncode != 0:
            bad.append(f"{name}: refused: {r.stderr.strip()}")
        elif name.startswith("invalid") and not refused:
            bad.append(f"{name}: not refused (exit {r.returncode}): {r.stderr.strip()}")
    for b in bad:
        print("FAIL", b)
    print(f"{len(names)} plan fixtures, {len(bad)} read differently")
    return 1 if bad or len(names) < 10 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
