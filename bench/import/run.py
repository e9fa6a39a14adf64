#!/usr/bin/env python3
"""import-strace speed (issue 2 target: at least 2 million lines per second).

Records real strace logs of two workloads with `strace -f -ttt -T`:
  W1  write8: 2,000,000 8-byte writes (one kind of line, short)
  W3  bench/record/w3: 300,000 x (open, fstat, read 4 KiB, lseek, read,
      close, getpid) (seven kinds of lines, with paths and structs)
then times `syscluster import-strace` on each, the median of 5 runs, and
reports lines per second (wall time, and CPU time which a busy machine
does not distort). Writes the section "## import-strace speed (issue 2)"
of docs/BENCHMARKS.md.

    bench/import/run.py [--reps N] [--keep DIR]
"""
import argparse
import datetime
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))
import doc_section  # noqa: E402

SECTION = "## import-strace speed (issue 2)"
BIN = os.path.join(ROOT, "target", "release", "syscluster")


def run(*cmd, **kw):
    subprocess.run(cmd, check=True, cwd=ROOT, **kw)


def lines(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def time_import(log, out):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    run(BIN, "import-strace", "-q", log, "-o", out)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--keep", help="keep the logs in DIR")
    a = ap.parse_args()
    run("make", "-s", "-C", "tests/corpus")
    run("cargo", "build", "-q", "--release", "--bin", "syscluster")
    work = a.keep or tempfile.mkdtemp(prefix="syscluster-bench-import-")
    os.makedirs(work, exist_ok=True)
    w3 = os.path.join(work, "w3")
    run("cc", "-O2", "-o", w3, os.path.join(HERE, "..", "record", "w3.c"))
    with open(os.path.join(work, "data"), "wb") as f:
        f.write(os.urandom(16384))
    workloads = [
        ("W1: write8, 2,000,000 8-byte writes", [os.path.join(ROOT, "tests/corpus/bin/write8"), os.path.join(work, "w1.out"), "2000000"]),
        ("W3: 300,000 x (open, fstat, read, lseek, read, close, getpid)", [w3, os.path.join(work, "data"), "300000"]),
    ]
    rows = []
    for name, argv in workloads:
        log = os.path.join(work, name[:2] + ".log")
        print(f"bench: strace of {name} (slow: strace itself costs 30x)", file=sys.stderr)
        run("strace", "-f", "-ttt", "-T", "-o", log, *argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        n = lines(log)
        size = os.path.getsize(log)
        walls, cpus = [], []
        for _ in range(a.reps):
            w, c = time_import(log, os.path.join(work, "p.json"))
            walls.append(w)
            cpus.append(c)
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        rows.append((name, n, size, wall, cpu))
        print(f"bench: {name}: {n} lines, {n / wall / 1e6:.2f} M lines/s wall, {n / cpu / 1e6:.2f} M lines/s CPU", file=sys.stderr)
    body = [
        SECTION,
        "",
        f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC} on {platform.node() or 'this machine'} "
        f"({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end), by",
        "",
        "```",
        f"bench/import/run.py --reps {a.reps}",
        "```",
        "",
        "Real `strace -f -ttt -T` logs; each figure is the median of "
        f"{a.reps} runs of `syscluster import-strace` (whole command: reading, parsing, building the profile, "
        "writing it). Target: at least 2 million lines per second.",
        "",
        "| log | lines | size | wall | lines/s (wall) | lines/s (CPU) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, n, size, wall, cpu in rows:
        body.append(f"| {name} | {n:,} | {size / 2**20:.0f} MiB | {wall:.2f} s | **{n / wall / 1e6:.2f} M** | {n / cpu / 1e6:.2f} M |")
    doc_section.replace(SECTION, "\n".join(body) + "\n")
    print("bench: wrote " + SECTION, file=sys.stderr)


if __name__ == "__main__":
    main()
