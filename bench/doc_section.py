#!/usr/bin/env python3
"""Replaces one section of docs/BENCHMARKS.md — from its `## ` heading up to
the next `## ` heading — leaving the rest of the file as it is; appends the
section if the file lacks it. Every benchmark writes its figures through
this, so that no run erases another's.

    bench/doc_section.py "## Title" < body.md      (body starts with the heading)
or, from Python: doc_section.replace("## Title", body)
"""
import pathlib
import sys

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "BENCHMARKS.md"


def replace(heading, body, doc=DOC):
    body = body.rstrip("\n") + "\n"
    if not body.startswith(heading):
        raise ValueError(f"the section must start with its heading {heading!r}")
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    start = text.find(heading + "\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + body
    else:
        end = text.find("\n## ", start + len(heading))
        tail = text[end + 1:] if end >= 0 else ""
        text = text[:start] + body + ("\n" + tail if tail else "")
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: bench/doc_section.py '## Title' < body.md")
    replace(sys.argv[1], sys.stdin.read())
    print(f"{DOC}: section {sys.argv[1]!r} updated", file=sys.stderr)
