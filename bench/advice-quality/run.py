#!/usr/bin/env python3
"""Advice quality (issue 10): for programs where advice applies, the
estimated saving of each applied recommendation against the saving
measured.

Each case's original program is recorded as a user would record it
(`syscluster record`, BPF events mode), advised (`syscluster advise`, with
a fresh `syscluster calibrate` of this machine, recorders included), and
the recommendation the case expects must be there.  Then the original and
the program with that recommendation applied (the corpus's hand-rewritten
variant, a larger block, or the unchanged binary under
`syscluster run --plan` with the plan `advise --plan-out` wrote) are timed
by `syscluster stat`, alternately, and the measured saving (least
disturbed CPU time, user + system, of the original less that of the
rewrite) is compared with the estimate.  A ratio measured / estimated
outside [1/2, 2] fails the bench (exit 1) after two more tries.

Writes bench/results/advice-quality.json and the section
"## Advice quality: estimated vs measured savings (issue 10)" of
docs/BENCHMARKS.md.

    bench/advice-quality/run.py [--reps N] [--only TEXT] [--no-doc]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import doc_section  # noqa: E402

SC = os.path.join(ROOT, "target/release/syscluster")
CORPUS = os.path.join(ROOT, "tests/corpus/bin")
HEAD = "## Advice quality: estimated vs measured savings (issue 10)"
PY_WRITES = (
    "f = open({out!r}, 'wb', buffering=0)\n"
    "for _ in range(1000000):\n"
    "    f.write(b'12345678')\n"
)


def c(name):
    return os.path.join(CORPUS, name)


def cases(d):
    """(name, rule, original argv, applied argv or None for `run --plan`, what)."""
    data, big, page, out = (os.path.join(d, x) for x in ("data", "big", "page", "out"))
    py = ["/usr/bin/python3", "-c", PY_WRITES.format(out=out)]
    return [
        ("write8", "coalesce-writes", [c("write8"), out, "100000"], [c("write8_coalesced"), out, "100000"],
         "write8 → write8_coalesced: 100,000 writes of 8 B"),
        ("write8 run --plan", "coalesce-writes", [c("write8"), out, "100000"], None,
         "write8 → the same binary under `run --plan`"),
        ("python3", "coalesce-writes", py, None,
         "python3 writing 10⁶ × 8 B unbuffered → the same under `run --plan`"),
        ("dd bs=8", "larger-block", ["dd", f"if={data}", f"of={out}", "bs=8", "status=none"],
         ["dd", f"if={data}", f"of={out}", "bs=128K", "status=none"],
         "dd bs=8 → dd bs=128K, 400 KB"),
        ("copy", "copy-offload", [c("copy"), big, out], [c("copy_cfr"), big, out],
         "copy → copy_cfr: 40 MiB in 4 KiB blocks"),
        ("copy_block", "larger-block", [c("copy_block"), big, out, "4096"], [c("copy_block"), big, out, "131072"],
         "copy_block 4 KiB → 128 KiB: 40 MiB"),
        ("seekread", "pread", [c("seekread"), data, "100000"], [c("seekread_pread"), data, "100000"],
         "seekread → seekread_pread: 100,000 lseek+read of 512 B"),
        ("selecttime", "select-clock", [c("selecttime"), "100000"], [c("selecttime_vdso"), "100000"],
         "selecttime → selecttime_vdso: 100,000 select + gettimeofday"),
        ("server", "sendmmsg", [c("server"), page], [c("server_sendmmsg"), page],
         "server → server_sendmmsg: 20 MiB in 1 KiB datagrams"),
    ]


def run(argv, env, **kw):
    r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    if r.returncode != 0:
        sys.exit(f"advice-quality: {' '.join(argv[:4])} … failed ({r.returncode}): {r.stderr.decode()[-800:]}")
    return r.stdout


def stat(argv, env, runs, count):
    """Least disturbed CPU time (user + system) and wall time, ns, and the
    median crossings when counted."""
    flags = ["--json", "-r", str(runs)] + ([] if count else ["--no-count"])
    s = json.loads(run([SC, "stat", *flags, "--", *argv], env))
    cpu = min(u + y for u, y in zip(s["user_ns"]["runs"], s["system_ns"]["runs"]))
    return cpu, s["wall_ns"]["min"], (s["crossings"]["median"] if count else None)


def advise(profile, plan, env):
    a = json.loads(run([SC, "advise", "-q", "--format", "json", "--plan-out", plan, profile], env))
    if a["costs"]["source"] != "calibration":
        sys.exit(f"advice-quality: advise did not use the calibration: {a['costs']}")
    return a


def measure(before, after, env, reps):
    b = a = (float("inf"), float("inf"), None)
    for i in range(reps):
        x = stat(before, env, 3, i == 0)
        y = stat(after, env, 3, i == 0)
        b = (min(b[0], x[0]), min(b[1], x[1]), b[2] if x[2] is None else x[2])
        a = (min(a[0], y[0]), min(a[1], y[1]), a[2] if y[2] is None else y[2])
    return b, a


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3, help="alternating rounds of 3 runs each side")
    ap.add_argument("--only", help="only the cases whose name contains this")
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/BENCHMARKS.md")
    args = ap.parse_args()
    subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "tests/corpus")], check=True)
    with tempfile.TemporaryDirectory(prefix="advice-quality-") as d:
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(d, "cache"), SYSCLUSTER_MC_CALIBRATE="none")
        env.pop("LD_LIBRARY_PATH", None)
        for name, size in (("data", 400_000), ("big", 40 << 20), ("page", 20 << 20)):
            with open(os.path.join(d, name), "wb") as f:
                f.write(os.urandom(size))
        print("calibrating…", file=sys.stderr)
        run([SC, "calibrate", "-q", "--samples", "15"], env)
        cal = json.load(open(os.path.join(d, "cache/syscluster/calibration.json")))
        rows, results, failures = [], [], []
        for name, rule, before, after, what in cases(d):
            if args.only and args.only not in name:
                continue
            prof, plan = os.path.join(d, "p.json"), os.path.join(d, "plan.json")
            run([SC, "record", "-q", "-o", prof, "--", *before], env)
            a = advise(prof, plan, env)
            rec = next((r for r in a["recommendations"] if r["rule"] == rule), None)
            if rec is None:
                failures.append(f"{name}: no {rule} recommendation")
                print(f"{name}: no {rule} recommendation", file=sys.stderr)
                continue
            est = rec["saving"]["ns"]
            applied = after if after is not None else [SC, "run", "--plan", plan, "--", *before]
            tries = []
            for _ in range(3):
                b, t = measure(before, applied, env, args.reps)
                ratio = (b[0] - t[0]) / est if est > 0 else float("inf")
                tries.append(round(ratio, 2))
                if 0.5 <= ratio <= 2.0:
                    break
            ok = 0.5 <= ratio <= 2.0
            print(f"{name}: {rule} estimated {est / 1e6:.1f} ms, measured {(b[0] - t[0]) / 1e6:.1f} ms "
                  f"({b[0] / 1e6:.1f} → {t[0] / 1e6:.1f} ms CPU), ratio {tries}", file=sys.stderr)
            if not ok:
                failures.append(f"{name}: measured / estimated = {tries}")
            share = rec["saving"]["share_of_run"]
            results.append(dict(case=name, rule=rule, estimated_ns=est, share=share, share_of=rec["saving"]["share_of"],
                                before_cpu_ns=b[0], after_cpu_ns=t[0], before_wall_ns=b[1], after_wall_ns=t[1],
                                crossings=(b[2], t[2]), run_ns=a["costs"]["run_ns"], ratio=ratio, tries=tries))
            run_ns = a["costs"]["run_ns"]
            rows.append(f"| {what} | {rule} | {est / 1e6:.1f} ({share * 100:.0f} % of the {rec['saving']['share_of']}) | "
                        f"{run_ns / 1e6:.1f} | {b[0] / 1e6:.1f} | {run_ns / b[0]:.2f} | {t[0] / 1e6:.1f} | {b[2]:,} → {t[2]:,} | "
                        f"{(b[0] - t[0]) / 1e6:.1f} | {ratio:.2f}{'' if ok else ' **off**'} |")
        os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
        if not args.only:
            with open(os.path.join(ROOT, "bench/results/advice-quality.json"), "w") as f:
                json.dump(dict(calibration=cal["machine"], crossing_ns=cal["crossing"]["syscall_ns"],
                               tracers=cal.get("tracers", []), cases=results), f, indent=1)
    m = cal["machine"]
    ev = next((t for t in cal.get("tracers", []) if t["backend"] == "bpf" and t["mode"] == "events"), None)
    table = "\n".join(rows)
    body = f"""{HEAD}

For each program where advice applies, the original is recorded as a user
records it (`syscluster record`, BPF events mode), advised with a fresh
`syscluster calibrate` of this machine, and the expected recommendation
applied: the corpus's rewritten variant, a larger block, or the unchanged
binary under `syscluster run --plan` with the plan `advise --plan-out`
wrote. Both sides are timed by `syscluster stat` ({args.reps} alternating
rounds of 3 runs each); times are CPU (user + system), the least disturbed
run. The estimate's share is of the untraced program as advise estimates
it from the profile (column "untraced, estimated": under BPF its CPU time,
the recorder's calibrated CPU cost per call taken out), set against the
original's CPU time measured untraced. The bench fails when a measured
saving / estimated saving is outside [0.5, 2].

Command: `bench/advice-quality/run.py` (or `bench/run.sh advice-quality`).
Machine: {m['cpu']}, {m['cpus']} CPUs, Linux {m['kernel']}, load average
{os.getloadavg()[0]:.1f} at the end (the CPUs are shared); crossing
{cal['crossing']['syscall_ns']:.0f} ns; BPF events recorder
{ev['per_call_ns'] if ev else float('nan'):.0f} ns of wall time per recorded call
({ev['kernel_ns'] if ev else float('nan'):.0f} ns inside the call,
{(ev.get('cpu_per_call_ns') or float('nan')) if ev else float('nan'):.0f} ns of the program's CPU).
Python: {platform.python_version()} (/usr/bin/python3).

| program, before → after | rule | estimated saving, ms (share) | untraced, estimated, ms | before, ms CPU | estimated / measured | after, ms CPU | crossings | measured saving, ms | measured / estimated saving |
|---|---|---|---|---|---|---|---|---|---|
{table}
"""
    if args.only or args.no_doc:
        print(body)
    else:
        doc_section.replace(HEAD, body)
        print("docs/BENCHMARKS.md: section updated", file=sys.stderr)
    if failures:
        sys.exit("advice-quality: " + "; ".join(failures))


if __name__ == "__main__":
    main()
