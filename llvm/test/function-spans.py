#!/usr/bin/env python3
"""The function_hash scan (docs/PLAN_FORMAT.md) on random C-like texts, and
the macro_hash scan on texts of functions and #defines, to compare their
three implementations: make-plan.py's (here), the plugin's
(llvm/test/function-span.cpp, lit function-span.c) and syscluster's
(crates/model/src/plan.rs, test function_span_agrees_with_make_plan).

    function-spans.py gen DIR COUNT SEED   write COUNT texts DIR/NNN.c
    function-spans.py spans FILE...        print FILE LINE START END (or -) per line
    function-spans.py gen-macros DIR COUNT SEED   texts of functions and #defines
    function-spans.py macros FILE...       print FILE LINE MACRO_HASH (or -) per line
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


def gen(d, count, seed, pieces=PIECES, longest=80):
    rng = random.Random(seed)
    os.makedirs(d, exist_ok=True)
    for i in range(count):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, longest)))
        with open(os.path.join(d, f"{i:03}.c"), "w", newline="") as f:
            f.write(text)


def spans(files):
    for path in files:
        with open(path, newline="") as f:
            text = f.read()
        for line in range(0, text.count("\n") + 3):
            s = make_plan.function_span(text, line)
            print(path, line, *(s if s else ["-"]))


# Pieces of the macro scan: definitions (continued, spaced, function-like),
# words that name them or nearly (a digit first, a longer word), functions.
MACRO_PIECES = ["\n#define A 1\n", "\n# define B (A + 2)\n", "\n  #  define C(x) \\\n  ((x) * B)\n",
                "\n#define D\t4096 \\ \n", "\n#defineE 5\n", "\n#undef A\n", "\n#define A 7\n",
                "int f(void) {", "}", "\n", " A ", " B", "C(1)", " D;", " 9A ", " AA ", "E", "_A", "/* A */",
                '"B"', " x ", "\\\n", ";"]


def macros(files):
    for path in files:
        with open(path, newline="") as f:
            text = f.read()
        for line in range(0, text.count("\n") + 3):
            print(path, line, make_plan.macro_hash(text, line) or "-")


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "gen-macros":
        gen(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), MACRO_PIECES, 60)
    elif sys.argv[1] == "macros":
        macros(sys.argv[2:])
    else:
        spans(sys.argv[2:])
