#!/usr/bin/env python3
"""Advice quality (issue 10): for programs where advice applies, the
estimated saving of each applied recommendation against the saving
measured.

Each case's original program is run once untraced (warming the page
cache, as a program a user records has usually run before), then
recorded as a user would record it (`syscluster record`, BPF events mode)
--records times and advised each time (`syscluster advise`, with a fresh
`syscluster calibrate` of this machine, recorders included); the
recommendation the case expects must be there, and the estimate kept is
the median of the recordings' (their range is reported).  Then the
original and the program with that recommendation applied (the corpus's
hand-rewritten variant, a larger block, or the unchanged binary under
`syscluster run --plan` with the plan `advise --plan-out` wrote) are timed
by `syscluster stat` in --rounds alternating rounds of 3 runs each side,
CPU time (user + system: what a saving removes, and what another
process's load on a shared machine disturbs least).  The measured saving
is the least disturbed run of the original less that of the rewrite; the
spread is the range of the same saving taken round by round.  A ratio
measured / estimated outside [1/2, 2] fails the bench (exit 1).

Writes bench/results/advice-quality.json and the section
"## Advice quality: estimated vs measured savings (issue 10)" of
docs/BENCHMARKS.md.

    bench/advice-quality/run.py [--rounds N] [--records N] [--only TEXT] [--no-doc]
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
    """The CPU times (user + system) and wall times of `runs` runs, ns, and
    the median crossings when counted."""
    flags = ["--json", "-r", str(runs)] + ([] if count else ["--no-count"])
    s = json.loads(run([SC, "stat", *flags, "--", *argv], env))
    cpu = [u + y for u, y in zip(s["user_ns"]["runs"], s["system_ns"]["runs"])]
    return cpu, s["wall_ns"]["min"], (s["crossings"]["median"] if count else None)


def advise(profile, plan, env):
    a = json.loads(run([SC, "advise", "-q", "--format", "json", "--plan-out", plan, profile], env))
    if a["costs"]["source"] != "calibration":
        sys.exit(f"advice-quality: advise did not use the calibration: {a['costs']}")
    return a


def measure(before, after, env, rounds):
    """Alternating rounds of 3 runs each side: per side the CPU times of
    every run, the least wall time and the crossings; and the saving of
    each round (least CPU time of the round's original less the
    rewrite's)."""
    sides = [dict(cpu=[], wall=float("inf"), crossings=None) for _ in (0, 1)]
    per_round = []
    for i in range(rounds):
        mins = []
        for side, argv in zip(sides, (before, after)):
            cpu, wall, crossings = stat(argv, env, 3, i == 0)
            side["cpu"] += cpu
            side["wall"] = min(side["wall"], wall)
            if crossings is not None:
                side["crossings"] = crossings
            mins.append(min(cpu))
        per_round.append(mins[0] - mins[1])
    return sides[0], sides[1], per_round


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds of 3 runs each side")
    ap.add_argument("--records", type=int, default=3, help="recordings of each original, the median estimate kept")
    ap.add_argument("--only", help="only the cases whose name contains this")
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/BENCHMARKS.md")
    args = ap.parse_args()
    subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "tests/corpus")], check=True)
    load_start = os.getloadavg()
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
            run(before, env)  # warm: page cache, dirty pages written back or not, as the runs below see it
            recs = []
            for _ in range(args.records):
                run([SC, "record", "-q", "-o", prof, "--", *before], env)
                a = advise(prof, plan + f".{len(recs)}", env)
                rec = next((r for r in a["recommendations"] if r["rule"] == rule), None)
                if rec is not None:
                    recs.append((rec["saving"]["ns"], rec, a, plan + f".{len(recs)}"))
            if len(recs) < args.records:
                failures.append(f"{name}: no {rule} recommendation in {args.records - len(recs)} of {args.records} recordings")
                print(failures[-1], file=sys.stderr)
                if not recs:
                    continue
            recs.sort(key=lambda r: r[0])
            est, rec, a, plan = recs[len(recs) // 2]
            est_range = (recs[0][0], recs[-1][0])
            applied = after if after is not None else [SC, "run", "--plan", plan, "--", *before]
            load = os.getloadavg()[0]
            b, t, per_round = measure(before, applied, env, args.rounds)
            saved = min(b["cpu"]) - min(t["cpu"])
            ratio = saved / est if est > 0 else float("inf")
            spread = (min(per_round) / est, max(per_round) / est) if est > 0 else (ratio, ratio)
            ok = 0.5 <= ratio <= 2.0
            print(f"{name}: {rule} estimated {est / 1e6:.1f} ms ({est_range[0] / 1e6:.1f}–{est_range[1] / 1e6:.1f}), "
                  f"measured {saved / 1e6:.1f} ms ({min(b['cpu']) / 1e6:.1f} → {min(t['cpu']) / 1e6:.1f} ms CPU), "
                  f"ratio {ratio:.2f} (rounds {spread[0]:.2f}–{spread[1]:.2f}), load {load:.1f}", file=sys.stderr)
            if not ok:
                failures.append(f"{name}: measured / estimated = {ratio:.2f}")
            share = rec["saving"]["share_of_run"]
            run_ns = a["costs"]["run_ns"]
            results.append(dict(case=name, rule=rule, estimated_ns=est, estimated_range_ns=est_range, share=share,
                                share_of=rec["saving"]["share_of"], assumes=rec["saving"]["assumes"],
                                before_cpu_ns=b["cpu"], after_cpu_ns=t["cpu"], before_wall_ns=b["wall"],
                                after_wall_ns=t["wall"], crossings=(b["crossings"], t["crossings"]), run_ns=run_ns,
                                saving_per_round_ns=per_round, ratio=ratio, ratio_rounds=spread, load=load))
            bmin, tmin = min(b["cpu"]), min(t["cpu"])
            rows.append(f"| {what} | {rule} | {est / 1e6:.1f} ({est_range[0] / 1e6:.1f}–{est_range[1] / 1e6:.1f}; "
                        f"{share * 100:.0f} % of the {rec['saving']['share_of']}) | "
                        f"{run_ns / 1e6:.1f} | {bmin / 1e6:.1f} | {run_ns / bmin:.2f} | {tmin / 1e6:.1f} | "
                        f"{b['crossings']:,} → {t['crossings']:,} | {saved / 1e6:.1f} | "
                        f"{ratio:.2f}{'' if ok else ' **off**'} | {spread[0]:.2f}–{spread[1]:.2f} | {load:.1f} |")
        os.makedirs(os.path.join(ROOT, "bench/results"), exist_ok=True)
        if not args.only:
            with open(os.path.join(ROOT, "bench/results/advice-quality.json"), "w") as f:
                json.dump(dict(calibration=cal["machine"], crossing_ns=cal["crossing"]["syscall_ns"],
                               tracers=cal.get("tracers", []), kernel=cal.get("kernel", []),
                               load_start=load_start, load_end=os.getloadavg(), cases=results), f, indent=1)
    m = cal["machine"]
    ev = next((t for t in cal.get("tracers", []) if t["backend"] == "bpf" and t["mode"] == "events"), None)
    lines = "; ".join(f"{k['syscall']} {k['fixed_ns']:.0f} ns + {k['per_byte_ns']:.3f} ns/B"
                      for k in cal.get("kernel", [])) or "none (an older calibration)"
    table = "\n".join(rows)
    load_end = os.getloadavg()
    body = f"""{HEAD}

For each program where advice applies, the original is run once untraced
(warming the page cache), recorded as a user records it (`syscluster
record`, BPF events mode) {args.records} times and advised each time with a fresh
`syscluster calibrate` of this machine; the estimate kept is the median of
the recordings' (their range in parentheses). The expected recommendation
is applied: the corpus's rewritten variant, a larger block, or the
unchanged binary under `syscluster run --plan` with the plan `advise
--plan-out` wrote. Both sides are timed by `syscluster stat` in {args.rounds}
alternating rounds of 3 runs each; times are CPU (user + system), the
least disturbed run of each side. "rounds" is the range of measured /
estimated when the saving is taken round by round (each round's least
CPU time of the original less the rewrite's): the spread on this shared
machine. "load" is the 1-minute load average when the case was timed.
The estimate's share is of the untraced program as advise estimates it
from the profile (column "untraced, estimated": under BPF its CPU time,
the recorder's calibrated CPU cost per call taken out), set against the
original's CPU time measured untraced. The bench fails when a measured
saving / estimated saving is outside [0.5, 2].

Command: `bench/advice-quality/run.py` (or `bench/run.sh advice-quality`).
Machine: {m['cpu']}, {m['cpus']} CPUs, Linux {m['kernel']}, load average
{load_start[0]:.1f} at the start and {load_end[0]:.1f} at the end (the CPUs are shared
with other sessions' builds and tests); crossing
{cal['crossing']['syscall_ns']:.0f} ns; the kernel's work per call of a file
transfer, fixed + per byte, crossing included (`kernel` in the
calibration): {lines}; BPF events recorder
{ev['per_call_ns'] if ev else float('nan'):.0f} ns of wall time per recorded call
({ev['kernel_ns'] if ev else float('nan'):.0f} ns inside the call,
{(ev.get('cpu_per_call_ns') or float('nan')) if ev else float('nan'):.0f} ns of the program's CPU).
Python: {platform.python_version()} (/usr/bin/python3).

| program, before → after | rule | estimated saving, ms (range; share) | untraced, estimated, ms | before, ms CPU | estimated / measured | after, ms CPU | crossings | measured saving, ms | measured / estimated saving | rounds | load |
|---|---|---|---|---|---|---|---|---|---|---|---|
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
