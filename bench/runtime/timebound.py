#!/usr/bin/env python3
"""The runtime's time bound and the guardian's start (issue 9): writes
bench/results/runtime-timebound.json and the "## Runtime time bound and
guardian start (issue 9)" section of docs/BENCHMARKS.md.

    bench/runtime/timebound.py [--rounds N] [--gap-ms MS] [--rewrite-doc]

1. Isolated records (bench/runtime/latency.c): a writer writes one 16-byte
   record, then sleeps GAP (+0-1 ms); an independent reader process woken by
   inotify as the bytes land notes how late each record reached the file.
   Run plain (the reader's own wake-up: the floor of the method) and under
   `syscluster run --coalesce-writes`; percentiles of each.
2. The guardian's start in a process with 0 and 500 MiB touched
   (bench/runtime/startcost.c): the first deferred write, and writing every
   page again afterwards; plain and under the library.
3. What the library costs a process that does nothing (`true`): CPU time,
   user + system, of the process and its guardian, plain and preloaded.
The library is the one built from this tree (preload/build)."""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import doc_section  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HEAD = "## Runtime time bound and guardian start (issue 9)"
LIB = os.path.join(ROOT, "preload/build/libsyscluster-preload.so")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def summary(xs):
    return {"n": len(xs), "p50_us": pct(xs, 50), "p90_us": pct(xs, 90), "p99_us": pct(xs, 99), "max_us": max(xs),
            "over_5ms": sum(1 for x in xs if x > 5000)}


def cpu_model():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=1000, help="records per latency run (default 1000)")
    ap.add_argument("--gap-ms", type=int, default=10, help="sleep between records (default 10 ms)")
    ap.add_argument("--rewrite-doc", action="store_true",
                    help="only rewrite the section from bench/results/runtime-timebound.json")
    a = ap.parse_args()
    if a.rewrite_doc:
        with open(os.path.join(ROOT, "bench/results/runtime-timebound.json")) as f:
            write_section(json.load(f))
        return
    subprocess.run(["make", "-s", "-C", "preload"], check=True, cwd=ROOT)
    cli = os.path.join(ROOT, "target/release/syscluster")
    if not os.path.exists(cli):  # (the library is this tree's in any case: SYSCLUSTER_PRELOAD)
        subprocess.run(["cargo", "build", "-q", "--release", "--locked", "--bin", "syscluster"], check=True, cwd=ROOT)
    env = dict(os.environ, SYSCLUSTER_PRELOAD=LIB)
    tmp = tempfile.mkdtemp(prefix="sc-timebound-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    bins = {}
    for name in ("latency", "startcost"):
        bins[name] = os.path.join(tmp, name)
        subprocess.run(["cc", "-O2", "-o", bins[name], os.path.join(ROOT, f"bench/runtime/{name}.c")], check=True)
    out = os.path.join(tmp, "out")
    load = os.getloadavg()
    lat = {}
    for label, pre in (("plain", []), ("run", [cli, "run", "--coalesce-writes", "--"])):
        p = subprocess.run(pre + [bins["latency"], out, str(a.rounds), str(a.gap_ms)], env=env, capture_output=True,
                           text=True)
        if p.returncode != 0:
            sys.exit(f"timebound: latency under {label} failed: {p.stderr.strip()}")
        lat[label] = summary([int(x) for x in p.stdout.split()])
        lat[label]["reader"] = "SCHED_FIFO 2" if "SCHED_FIFO" in p.stderr else "ordinary priority"
        print(f"latency {label}: {lat[label]}", flush=True)
    pre_lib = ["env", f"LD_PRELOAD={LIB}", "SYSCLUSTER_COALESCE=4096"]
    start = {}
    for mb in (0, 500):
        for label, pre in (("plain", []), ("library", pre_lib)):
            first, again = [], []
            for _ in range(11):
                p = subprocess.run(pre + [bins["startcost"], out, str(mb)], capture_output=True, text=True, check=True)
                f, r = p.stdout.split()
                first.append(float(f))
                again.append(float(r))
            start[f"{mb}MiB_{label}"] = {"first_write_us": statistics.median(first), "rewrite_us": statistics.median(again)}
            print(f"start {mb} MiB {label}: {start[f'{mb}MiB_{label}']}", flush=True)
    cpu = {}
    for label, pre in (("plain", ["env"]), ("library", pre_lib)):
        xs = []
        for _ in range(200):
            p = subprocess.Popen(pre + ["true"])
            _, _, ru = os.wait4(p.pid, 0)
            xs.append((ru.ru_utime + ru.ru_stime) * 1e6)
        cpu[label] = statistics.mean(xs)
    print(f"true: {cpu}", flush=True)
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)
    doc = {
        "format_version": 1,
        "benchmark": "runtime-timebound",
        "machine": {"kernel": platform.release(), "cpu": cpu_model(), "cpus": os.cpu_count(),
                    "loadavg_at_start": load[0], "loadavg_at_end": os.getloadavg()[0]},
        "command": "bench/runtime/timebound.py" + (f" --rounds {a.rounds}" if a.rounds != 1000 else "")
        + (f" --gap-ms {a.gap_ms}" if a.gap_ms != 10 else ""),
        "rounds": a.rounds, "gap_ms": a.gap_ms,
        "latency": lat, "start": start, "true_cpu_us": cpu,
    }
    os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench/results/runtime-timebound.json"), "w") as f:
        json.dump(doc, f, indent=2)
    write_section(doc)


def write_section(d):
    m, lat, st, cpu = d["machine"], d["latency"], d["start"], d["true_cpu_us"]
    run = lat["run"]
    kept = run["p99_us"] <= 5000
    lines = [
        HEAD,
        "",
        f"{m['cpu']}, {m['cpus']} CPUs (KVM guest), Linux {m['kernel']}, ext4; load average {m['loadavg_at_start']:.1f} "
        f"at the start and {m['loadavg_at_end']:.1f} at the end ("
        + ("nothing else running: idle but for this benchmark)."
           if max(m['loadavg_at_start'], m['loadavg_at_end']) < 2.5
           else "the machine is shared by other jobs: it was not idle)."),
        f"Command: `{d['command']}` (JSON: bench/results/runtime-timebound.json); the library built from this tree.",
        "",
        f"**Isolated records** (bench/runtime/latency.c): {d['rounds']} records of 16 bytes, one every {d['gap_ms']}–"
        f"{d['gap_ms'] + 1} ms, after 8 warm-up records; an independent reader process blocked in inotify (`IN_MODIFY`, "
        "queued by the write call that lands the bytes) notes, for each record, the time from the writer's `write` "
        "to the reader holding the bytes.  Inotify rather than polling the size: a reader polling every P µs adds up "
        "to P to every figure and needs a CPU to itself; this one adds only its own wake-up, which the plain row "
        f"measures (the method's floor).  The reader ran at {lat['run']['reader']} (SCHED_FIFO when permitted, so "
        "that its own wait for a CPU on a loaded machine is not charged to the runtime).",
        "",
        "| | p50 | p90 | p99 | max | records later than 5 ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, name in (("plain", "plain (the reader's wake-up)"), ("run", "`syscluster run --coalesce-writes`")):
        r = lat[label]
        lines.append(f"| {name} | {r['p50_us'] / 1000:.2f} ms | {r['p90_us'] / 1000:.2f} ms | {r['p99_us'] / 1000:.2f} ms | "
                     f"{r['max_us'] / 1000:.2f} ms | {r['over_5ms']} of {r['n']} |")
    lines += [
        "",
        f"The 5 ms bound at the 99th percentile: {'**kept**' if kept else '**not kept**'} "
        f"({run['p99_us'] / 1000:.2f} ms; the reader alone, plain: {lat['plain']['p99_us'] / 1000:.2f} ms).  "
        f"Records later than 5 ms: {run['over_5ms']} under `run`, {lat['plain']['over_5ms']} plain.  "
        "The guardian writes a buffer out half an interval (2.5 ms) after its first byte, waiting for an absolute deadline with 1 ns timer slack, at SCHED_FIFO priority 1 when it may (as here: "
        "root) and otherwise with the scheduler's shortest slice (0.1 ms; Linux 6.12+), so that it gets a CPU when "
        "its timer fires; the other half is the margin for waiting for one.  With the short slice alone (no "
        "privilege), measured by hand right after with the same reader and load (average 11, a test suite of this "
        "project running too): p99 170 ms, 143 records of 1000 later than 5 ms; SCHED_FIFO, alongside: p99 5.05 ms, "
        "12 of 1000 — the bound is kept at the 99th percentile only as far as the machine leaves a CPU.  Before (a quarter-interval margin, a relative timeout, the default slice) the same "
        "program measured p50 3.85 ms, p99 7.4–8.6 ms, max 12–16 ms (300 records each, load average 5–12).  "
        "Under heavy load the "
        "tail is the scheduler's: the bound is a target the guardian aims at, not a real-time guarantee "
        "(docs/RUNTIME.md, \"The guarantees\").",
        "",
        "**The guardian's start** (bench/runtime/startcost.c): the first deferred write (under the library: the first "
        "write it defers), then writing every page of the mapping again; medians of 11 (the last two columns are at the mercy of the "
        "machine's load: plain varies 2–14 ms from run to run here).",
        "",
        "| memory touched before | first deferred write, plain | under the library | every page written again, plain | under the library |",
        "|---|---:|---:|---:|---:|",
    ]
    for mb in (0, 500):
        p, l = st[f"{mb}MiB_plain"], st[f"{mb}MiB_library"]
        lines.append(f"| {mb} MiB | {p['first_write_us']:.0f} µs | {l['first_write_us']:.0f} µs | "
                     f"{p['rewrite_us'] / 1000:.1f} ms | {l['rewrite_us'] / 1000:.1f} ms |")
    lines += [
        "",
        "The guardian starts at the first deferral (docs/RUNTIME.md, \"The guardian\"); its clone leaves out "
        "every anonymous private mapping of the program (MADV_DONTFORK for the clone), so the size of the program "
        "does not matter.  When it copied them (started at the first deferral, before issue 9), with 500 MiB "
        "touched the first deferred write took 80–150 ms and writing the memory again 270–480 ms (2.5 ms plain), "
        "measured with the same startcost.c, 3 runs at load average ~12.",
        f"`true`, which defers nothing, costs {cpu['plain']:.0f} µs of CPU (user + system, mean of 200) plain and "
        f"{cpu['library']:.0f} µs with the library (its start and its scan for raw system calls; no guardian).",
        "",
    ]
    doc_section.replace(HEAD, "\n".join(lines))


if __name__ == "__main__":
    main()
