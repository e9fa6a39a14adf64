#!/usr/bin/env python3
"""The function_hash scan (docs/PLAN_FORMAT.md) on random C-like texts, to
compare its three implementations: make-plan.py's (here), the plugin's
(llvm/test/function-span.cpp, lit function-span.c) and syscluster's
(crates/model/src/plan.rs, test function_span_agrees_with_make_plan).

    function-spans.py gen DIR COUNT SEED   write COUNT texts DIR/NNN.c
    function-spans.py spans FILE...        print FILE LINE START END (or -) per line
"""
import importlib.util
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("make_plan", os.path.join(HERE, "make-plan.py"))
make_plan = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_plan)

# Pieces that matter to the scan, and plain code between them.
PIECES = ["{", "}", "{", "}", ";", "\n", "\n", "\n", "  ", "\t", '"', "'", "\\", "\\\n", "/*", "*/", "//",
          "#", "\n#define X {\n", "int f(void)", "x = 1;", "'}'", '"{"', "\r\n", "a", "/", "*"]


def gen(d, count, seed):
    rng = random.Random(seed)
    os.makedirs(d, exist_ok=True)
    for i in range(count):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randrange(1, 80)))
        with open(os.path.join(d, f"{i:03}.c"), "w", newline="") as f:
            f.write(text)


def spans(files):
    for path in files:
        with open(path, newline="") as f:
            text = f.read()
        for line in range(0, text.count("\n") + 3):
            s = make_plan.function_span(text, line)
            print(path, line, *(s if s else ["-"]))


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        spans(sys.argv[2:])
