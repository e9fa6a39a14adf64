#!/usr/bin/env python3
"""Write a plan (docs/PLAN_FORMAT.md) with one cluster for a lit test, from
the test's own source: each line ending in `// sc: CALL [FUNCTION]` is a
location of CALL (in FUNCTION, default --function), so the test states where
its calls are once, next to them.  Each function gets its own cluster, or
each group: `// sc: CALL FUNCTION @GROUP` puts locations of several
functions (and of several SOURCEs: a helper's other translation unit) in
one cluster.

    make-plan.py SOURCE... [--calls read,write] [--shape loop] [--function main] [--rule copy-offload]
                 [--hash [--no-function-hash | --no-macro-hash] | --bad-hash] [--bad-function-hash] [--no-lines]
                 [--count N] [--arg read.count=4096] > PLAN
"""
import argparse
import json
import re


def fnv1a(text):
    h = 0xCBF29CE484222325
    for b in text.encode():
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def function_span(text, line):
    """The first and last lines of the function holding LINE of TEXT, as
    syscluster finds them (crates/model/src/plan.rs, function_span): the
    top-level brace block holding the line, from its header's first token to
    its closing brace, braces in comments, literals and preprocessor lines
    not counted (docs/PLAN_FORMAT.md, function_hash).  None: no function."""
    st, depth, n, header, start, bol, i = "code", 0, 1, None, 0, True, 0
    span = None
    while i < len(text) and span is None:
        c, nxt = text[i], text[i + 1:i + 2]
        if c == "\\" and nxt == "\n" and st != "code":
            n, i = n + 1, i + 2
            continue
        if st in ("line", "directive"):
            st = "code" if c == "\n" else st
        elif st == "block":
            if c == "*" and nxt == "/":
                st, i = "code", i + 1
        elif st in ('"', "'"):
            if c == "\\":
                i += 1
            elif c in (st, "\n"):
                st = "code"
        elif c == "/" and nxt in ("/", "*"):
            st, i = ("line", i) if nxt == "/" else ("block", i + 1)
        elif c == "#" and bol:
            st, header = "directive", None if depth == 0 else header
        elif c not in " \t\r\n\v\f":
            if depth == 0 and header is None:
                header = n
            if c in "\"'":
                st = c
            elif c == "{":
                start, depth = (header or n) if depth == 0 else start, depth + 1
            elif c == "}" and depth > 0:
                depth -= 1
                if depth == 0:
                    span, header = ((start, n) if start <= line <= n else None), None
            elif c == ";" and depth == 0:
                header = None
        if text[i:i + 1] == "\n":
            n, bol = n + 1, True
        elif c not in " \t":
            bol = False
        i += 1
        if n > line and depth == 0 and (header is None or header > line):
            break
    return span


def function_hash(text, line):
    """The plan's function_hash of the function holding LINE of TEXT: the
    lines of function_span, trimmed, joined by newlines."""
    span = function_span(text, line)
    if span is None:
        return None
    lines = text.split("\n")[span[0] - 1:span[1]]
    return fnv1a("\n".join(l.strip(" \t\r\f\v") for l in lines))


BLANKS = " \t\r\f\v"
DEFINE = re.compile(r"[ \t\r\f\v]*#[ \t\r\f\v]*define[ \t\r\f\v]+([A-Za-z_][A-Za-z0-9_]*)")


def names(text):
    """The words of TEXT that may name a macro: maximal runs of letters,
    digits and _ that do not begin with a digit."""
    return {w for w in re.findall(r"[A-Za-z0-9_]+", text) if not w[0].isdigit()}


def macro_definitions(text):
    """The #define directives of TEXT in file order: (name, its lines --
    continued lines too -- trimmed, joined by newlines)."""
    lines, defs, i = text.split("\n"), [], 0
    while i < len(lines):
        m = DEFINE.match(lines[i])
        if m:
            body = [lines[i].strip(BLANKS)]
            while body[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                body.append(lines[i].strip(BLANKS))
            defs.append((m.group(1), "\n".join(body)))
        i += 1
    return defs


def macro_hash(text, line):
    """The plan's macro_hash of the function holding LINE of TEXT: the
    definitions (file order) of the macros of the file the function's lines
    name, directly or through another of those definitions."""
    span = function_span(text, line)
    if span is None:
        return None
    words = names("\n".join(text.split("\n")[span[0] - 1:span[1]]))
    defs = macro_definitions(text)
    used = [False] * len(defs)
    grew = True
    while grew:
        grew = False
        for k, (name, body) in enumerate(defs):
            if not used[k] and name in words:
                used[k], grew = True, True
                words |= names(body)
    return fnv1a("\n".join(body for k, (_, body) in enumerate(defs) if used[k]))


def add_locations(a, source, by_function):
    """The locations of SOURCE's markers, added to their cluster's list."""
    with open(source, newline="") as f:  # lines split at \n only, as the plugin does
        text = f.read()
    for n, line in enumerate(text.split("\n"), 1):
        m = re.search(r"// sc: (\w+)(?: (\w+))?(?: @(\w+))?\s*$", line)
        ir = re.search(r"^; line (\d+): // sc: (\w+)(?: (\w+))?\s*$", line)
        group = None
        if ir:  # hand-written IR: the line of the C it pretends to come from
            n, m = int(ir.group(1)), None
            call, fn = ir.group(2), ir.group(3)
        elif m:
            call, fn, group = m.group(1), m.group(2), m.group(3)
        else:
            continue
        function = fn or a.function
        loc = {"syscall": call, "module": "/recorded/prog", "offset": 4096 + n,
               "function": function, "count": a.count}
        if not a.no_lines:
            # Another checkout's path: matched by its suffix.
            loc["file"] = "/elsewhere/checkout/llvm/test/" + source.rsplit("/", 1)[-1].replace(".ll", ".c")
            loc["line"] = n
        if a.hash:
            loc["source_hash"] = fnv1a(line.strip(" \t\r\n\f\v"))
            fh = None if a.no_function_hash or ir else function_hash(text, n)
            if fh:
                loc["function_hash"] = fh
                if not a.no_macro_hash:
                    loc["macro_hash"] = macro_hash(text, n)
        if a.bad_function_hash:
            loc["function_hash"] = "fedcba9876543210"
        if a.bad_hash:
            loc["source_hash"] = "0123456789abcdef"
        by_function.setdefault(group or function, []).append(loc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sources", nargs="+")
    ap.add_argument("--calls", default="read,write")
    ap.add_argument("--shape", default="loop")
    ap.add_argument("--function", default="main")
    ap.add_argument("--rule", default="copy-offload", help="the clusters' rule (batch-writes: a loop of one write)")
    ap.add_argument("--hash", action="store_true", help="add each line's source_hash")
    ap.add_argument("--bad-hash", action="store_true", help="add a source_hash that does not match")
    ap.add_argument("--no-function-hash", action="store_true",
                    help="with --hash: line hashes only, as a plan_version 1 plan")
    ap.add_argument("--bad-function-hash", action="store_true", help="add a function_hash that does not match")
    ap.add_argument("--no-macro-hash", action="store_true",
                    help="with --hash: no macro_hash, as a plan_version 2 plan written before it")
    ap.add_argument("--no-lines", action="store_true", help="as from a binary without debug info")
    ap.add_argument("--count", type=int, default=100, help="calls recorded at each location")
    ap.add_argument("--arg", action="append", default=[],
                    help="CALL.NAME=VALUE: the value profile's constant argument of CALL")
    a = ap.parse_args()
    by_function = {}
    for source in a.sources:
        add_locations(a, source, by_function)
    calls = [{"syscall": c, "nr": {"read": 0, "write": 1}.get(c, -1), "results": {}, "args": {}}
             for c in a.calls.split(",")]
    for spec in a.arg:
        call, rest = spec.split(".", 1)
        name, value = rest.split("=", 1)
        for c in calls:
            if c["syscall"] == call:
                c["args"][name] = int(value)
    mechanism = {"batch-writes": "writev-batch"}.get(a.rule, "copy_file_range")
    clusters = [{"id": i, "rule": a.rule, "mechanism": mechanism,
                 "shape": a.shape, "calls": calls, "locations": locs}
                for i, locs in enumerate(by_function.values(), 1)]
    version = 1 if a.no_function_hash or not (a.hash or a.bad_function_hash) else 2
    plan = {"plan_version": version, "tool": "make-plan.py", "clusters": clusters}
    print(json.dumps(plan, indent=1))


if __name__ == "__main__":
    main()
