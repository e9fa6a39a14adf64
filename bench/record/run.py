#!/usr/bin/env python3
"""Recorder overhead (issue 2): how much slower a program runs while it is
recorded, for syscluster's backends and the tools a user would pick instead.

Workloads (built here from the C files beside this script):
  W1  2,000,000 8-byte writes to a file
  W2  copy of 64 MiB with 4 KiB reads and writes
  W3  200,000 x (open, fstat, read 4 KiB, lseek, read, close, getpid)

Each workload times its own loop (wall time, CLOCK_MONOTONIC, and its own
CPU time, written to $BENCH_TIME_FILE), so the figure is the program's
slowdown, comparable between tools that start the program (record, strace,
perf trace) and tools that attach to it (syscount, bpftrace).  Reported per
tool: the loop's wall-time ratio (the figure the targets are about); the
whole command's wall-time ratio, start-up and shut-down of the tool
included, for tools that start the program; and the loop's CPU-time ratio,
which waiting for a CPU on a busy machine does not distort (it counts what
BPF programs cost, as they run in the program's context, but not the work
of tracers in other processes: strace's and perf's figures there are
meaningless).  Repetitions are interleaved (every tool once per round, in a
rotating order); each figure is the median over the rounds of the ratio to
the untraced run of the same round.

Usage: bench/record/run.py [--reps N] [--only W1,W3] [--tools a,b]
                           [--write-doc] [--json FILE]
"""

import argparse
import datetime
import json
import os
import platform
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import doc_section  # noqa: E402
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DOC = ROOT / "docs" / "BENCHMARKS.md"
SECTION = "## Recorder overhead (issue 2)"

WORKLOADS = {
    "W1": "2,000,000 8-byte writes to a file",
    "W2": "copy of 64 MiB, 4 KiB reads and writes",
    "W3": "200,000 x (open, fstat, read 4 KiB, lseek, read, close, getpid)",
}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def build(work):
    cc = os.environ.get("CC", "cc")
    for w in ("w1", "w2", "w3"):
        sh([cc, "-O2", "-o", str(work / w), str(HERE / f"{w}.c")])
    with open(work / "w2.in", "wb") as f:
        block = bytes(range(256)) * 4096  # 1 MiB
        for _ in range(64):
            f.write(block)
    (work / "w3.in").write_bytes(b"x" * 8192)
    sh(["cargo", "build", "--release", "--quiet", "-p", "syscluster-record", "--example", "record"], cwd=ROOT)
    if (ROOT / "Cargo.toml").exists():
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT)


def workload_argv(name, work):
    return {
        "W1": [str(work / "w1"), str(work / "w1.out")],
        "W2": [str(work / "w2"), str(work / "w2.in"), str(work / "w2.out")],
        "W3": [str(work / "w3"), str(work / "w3.in")],
    }[name]


def recorder():
    """The recorder command: the CLI if it has `record --mode`, else the
    library's bare driver (crates/record/examples/record.rs)."""
    cli = ROOT / "target" / "release" / "syscluster"
    if cli.exists():
        r = subprocess.run([str(cli), "record", "--help"], capture_output=True, text=True)
        if r.returncode == 0 and "--mode" in r.stdout:
            return [str(cli), "record"]
    return [str(ROOT / "target" / "release" / "examples" / "record")]


def ptrace_available(rec):
    r = subprocess.run(rec + ["--backend", "ptrace", "-o", os.devnull, "--", "/bin/true"], capture_output=True)
    return r.returncode == 0


class Tool:
    """How to run a workload under a tool: `prefix` tools start it,
    `attach` tools attach to its pid (given as {pid}) before it is let go
    and print `ready` once attached."""

    def __init__(self, name, prefix=None, attach=None, ready=None, settle=0.0, note=""):
        self.name, self.prefix, self.attach, self.ready, self.settle, self.note = (
            name, prefix, attach, ready, settle, note)


def tools(work, rec, floor):
    out = str(work / "profile.json")
    t = [
        Tool("untraced", prefix=[]),
        Tool("floor: empty programs on sys_enter", prefix=floor + ["--floor", "enter", "--"],
             note="raw_tracepoint/sys_enter, empty program"),
        Tool("floor: empty programs on sys_enter + sys_exit", prefix=floor + ["--floor", "both", "--"],
             note="raw_tracepoint/sys_enter and sys_exit, empty programs"),
        Tool("record --mode aggregate", prefix=rec + ["--mode", "aggregate", "-o", out, "--"]),
        Tool("record --mode events", prefix=rec + ["--mode", "events", "-o", out, "--"],
             note="with code locations"),
    ]
    if ptrace_available(rec):
        t.append(Tool("record --backend ptrace", prefix=rec + ["--backend", "ptrace", "-o", out, "--"]))
    if shutil.which("strace"):
        t.append(Tool("strace -f -o /dev/null", prefix=["strace", "-f", "-o", "/dev/null"]))
    if shutil.which("perf"):
        t.append(Tool("perf trace -s", prefix=["perf", "trace", "-s", "-o", str(work / "perf.txt"), "--"]))
    if os.path.exists("/usr/sbin/syscount"):
        t.append(Tool("libbpf-tools syscount -p", attach=["stdbuf", "-oL", "/usr/sbin/syscount", "-p", "{pid}"],
                      ready="Tracing syscalls"))
    if shutil.which("bpftrace"):
        t.append(Tool("bpftrace transition graph (graph.bt)", attach=["bpftrace", str(HERE / "graph.bt"), "{pid}"],
                      ready="Attaching", settle=1.0))
    return t


def read_ns(path):
    """(wall ns, cpu ns) of the workload's loop."""
    try:
        wall, cpu = Path(path).read_text().split()
        return int(wall), int(cpu)
    except (OSError, ValueError):
        return None


def run_once(tool, argv, work):
    """((loop wall ns, loop cpu ns), command wall ns) of one run; None
    where it failed."""
    tfile = work / "time"
    if tfile.exists():
        tfile.unlink()
    env = dict(os.environ, BENCH_TIME_FILE=str(tfile))
    if tool.attach is None:
        t0 = time.monotonic_ns()
        r = subprocess.run(tool.prefix + argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.monotonic_ns() - t0
        if r.returncode != 0:
            sys.stderr.write(f"  {tool.name}: exit {r.returncode}: {r.stderr.decode(errors='replace')[-300:]}\n")
            return None
        return read_ns(tfile), wall
    gate = work / "gate"
    if gate.exists():
        gate.unlink()
    os.mkfifo(gate)
    prog = subprocess.Popen(["sh", "-c", 'read go < "$0"; exec "$@"', str(gate)] + argv, env=env)
    cmd = [a.replace("{pid}", str(prog.pid)) for a in tool.attach]
    tr = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen, deadline = b"", time.monotonic() + 30
    while tool.ready.encode() not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([tr.stdout], [], [], 1.0)
        if ready:
            chunk = os.read(tr.stdout.fileno(), 4096)
            if not chunk:
                break
            seen += chunk
    ok = tool.ready.encode() in seen
    if ok:
        time.sleep(tool.settle)
    t0 = time.monotonic_ns()
    with open(gate, "w") as g:
        g.write("go\n" if ok else "")
    prog.wait()
    wall = time.monotonic_ns() - t0
    tr.send_signal(signal.SIGINT)
    try:
        tr.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        tr.kill()
        tr.communicate()
    if not ok or prog.returncode != 0:
        sys.stderr.write(f"  {tool.name}: did not attach or the program failed: {seen[-300:]!r}\n")
        return None
    return read_ns(tfile), wall


def machine():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "kernel": platform.release(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "os": platform.freedesktop_os_release().get("PRETTY_NAME", "?") if hasattr(platform, "freedesktop_os_release") else "?",
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--tools", default="", help="comma-separated substrings of tool names to run (plus untraced)")
    ap.add_argument("--write-doc", action="store_true", help=f"replace the section '{SECTION}' of docs/BENCHMARKS.md")
    ap.add_argument("--json", help="write the raw results here")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run.py: needs root (BPF, perf trace, syscount, bpftrace)")
    work = Path(tempfile.mkdtemp(prefix="syscluster-bench-record-", dir=os.environ.get("BENCH_DIR", "/var/tmp")))
    try:
        build(work)
        rec = recorder()
        floor = [str(ROOT / "target" / "release" / "examples" / "record")]
        all_tools = tools(work, rec, floor)
        if args.tools:
            wanted = [w for w in args.tools.split(",") if w]
            all_tools = [t for t in all_tools if t.name == "untraced" or any(w in t.name for w in wanted)]
        names = [w for w in args.only.split(",") if w in WORKLOADS]
        load_start = f"{os.getloadavg()[0]:.1f}"
        runs = {w: {t.name: [] for t in all_tools} for w in names}
        for rep in range(args.reps):
            for w in names:
                argv = workload_argv(w, work)
                order = all_tools[rep % len(all_tools):] + all_tools[:rep % len(all_tools)]
                for t in order:
                    r = run_once(t, argv, work)
                    runs[w][t.name].append(r)
                    if r and r[0]:
                        print(f"round {rep + 1}/{args.reps} {w} {t.name}: loop {r[0][0] / 1e9:.3f} s "
                              f"(cpu {r[0][1] / 1e9:.3f} s), command {r[1] / 1e9:.3f} s", flush=True)
        results = summarize(runs, all_tools)
        meta = {
            "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "load": f"{load_start} at the start, {os.getloadavg()[0]:.1f} at the end",
            "machine": machine(),
            "command": "bench/record/run.py " + " ".join(sys.argv[1:]),
            "recorder": " ".join(os.path.relpath(a, ROOT) if a.startswith(str(ROOT)) else a for a in rec),
            "reps": args.reps,
        }
        report = {"version": 1, "meta": meta, "results": results, "raw": runs}
        table = render(report, all_tools, names)
        print(table)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1))
        if args.write_doc:
            write_doc(table)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def summarize(runs, all_tools):
    out = {}
    for w, per_tool in runs.items():
        base = per_tool["untraced"]
        out[w] = {}
        for t in all_tools:
            loop, cpu, wall = [], [], []
            for b, r in zip(base, per_tool[t.name]):
                if b and r and b[0] and r[0]:
                    loop.append(r[0][0] / b[0][0])
                    cpu.append(r[0][1] / b[0][1])
                    wall.append(r[1] / b[1])
            med = lambda v: statistics.median(v) if v else None
            good = [b for b in base if b and b[0]]
            out[w][t.name] = {
                "loop_ratio": med(loop),
                "cpu_ratio": med(cpu),
                "wall_ratio": med(wall) if t.attach is None else None,
                "runs": len(loop),
                "untraced_loop_s": statistics.median([b[0][0] for b in good]) / 1e9 if good else None,
                "untraced_cpu_s": statistics.median([b[0][1] for b in good]) / 1e9 if good else None,
            }
    return out


def render(report, all_tools, names):
    m = report["meta"]
    res = report["results"]
    lines = [
        SECTION,
        "",
        f"Measured {m['date']} on {m['machine']['cpu']} ({m['machine']['cpus']} CPUs, shared with other "
        f"jobs: load average {m['load']}), Linux {m['machine']['kernel']}, {m['machine']['os']}, by",
        "",
        "```",
        f"sudo {m['command']}",
        "```",
        "",
        f"(recorder: `{m['recorder']}`). Each cell: the program's slowdown, the median over {m['reps']} "
        "interleaved rounds of the ratio to the untraced run of the same round: **wall time of the "
        "workload's loop** / wall time of the whole command, the tool's start-up and shut-down included "
        "(tools that start the program) / CPU time of the workload's loop (immune to waiting for a CPU; "
        "it includes what BPF programs cost, not what tracers in other processes do). "
        "Targets (issue 2): aggregate ≤ 1.10× on W1, events with code locations ≤ 2× on W1.",
        "",
        "| tool | " + " | ".join(f"{w}: {WORKLOADS[w]}" for w in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for t in all_tools:
        cells = []
        for w in names:
            r = res[w][t.name]
            if t.name == "untraced":
                cells.append(f"{r['untraced_loop_s']:.3f} s (cpu {r['untraced_cpu_s']:.3f} s)" if r["untraced_loop_s"] else "?")
            elif r["loop_ratio"] is None:
                cells.append("failed")
            else:
                wall = f"{r['wall_ratio']:.2f}×" if r["wall_ratio"] is not None else "–"
                cells.append(f"**{r['loop_ratio']:.2f}×** / {wall} / {r['cpu_ratio']:.2f}×")
        name = t.name + (f" ({t.note})" if t.note else "")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines)


def write_doc(table):
    notes = HERE / "notes.md"
    if notes.exists():
        table = table + "\n" + notes.read_text()
    doc_section.replace(SECTION, table, DOC)
    print(f"wrote {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
