#!/usr/bin/env python3
"""Checks that the files of a C library depend on each other in one
direction (issue 11 §2): from the objects' symbol tables (nm), file A
depends on file B when A uses a global symbol -- a function or a variable
-- that B defines.  Any cycle is printed with the symbols that make it, and
the exit status is 1.

    scripts/check-layers.py OBJDIR SRCDIR

Only the objects of sources still in SRCDIR count (a stale object of a
removed file does not).
"""
import os
import subprocess
import sys


def symbols(obj):
    """(defined, used) global symbols of one object."""
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "TDBRGSC" and f[1].isupper():
            defined.add(f[2])
        elif len(f) == 2 and f[0] == "U":
            used.add(f[1])
    return defined, used


def cycles(edges):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            c = []
            while True:
                w = stack.pop()
                on.discard(w)
                c.append(w)
                if w == v:
                    break
            if len(c) > 1:
                found.append(sorted(c))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def main(argv):
    if len(argv) != 3 or not os.path.isdir(argv[1]) or not os.path.isdir(argv[2]):
        print("usage: check-layers.py OBJDIR SRCDIR", file=sys.stderr)
        return 2
    objdir, srcdir = argv[1], argv[2]
    sources = {os.path.splitext(f)[0] for f in os.listdir(srcdir) if f.endswith((".c", ".S"))}
    objs = sorted(f[:-2] for f in os.listdir(objdir) if f.endswith(".o") and f[:-2] in sources)
    if not objs:
        print(f"check-layers: no objects of {srcdir} in {objdir}", file=sys.stderr)
        return 2
    definer, uses = {}, {}
    for o in objs:
        defined, used = symbols(os.path.join(objdir, o + ".o"))
        for s in defined:
            definer[s] = o
        uses[o] = used
    edges, why = {}, {}
    for o, used in uses.items():
        for s in used:
            d = definer.get(s)
            if d and d != o:
                edges.setdefault(o, set()).add(d)
                why.setdefault((o, d), []).append(s)
    found = cycles(edges)
    for c in found:
        print(f"check-layers: {srcdir}: these files depend on each other in a circle: {', '.join(c)}")
        for a in c:
            for b in sorted(edges.get(a, ())):
                if b in c:
                    syms = sorted(why[(a, b)])
                    more = f" and {len(syms) - 3} more" if len(syms) > 3 else ""
                    print(f"  {a} -> {b}: {', '.join(syms[:3])}{more}")
    if found:
        return 1
    print(f"check-layers: {srcdir}: {len(objs)} files, dependencies in one direction")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
