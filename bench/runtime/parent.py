#!/usr/bin/env python3
"""Where `syscluster run`'s cost over the preload library alone goes (issue
10, item 7; docs/RUNTIME.md, "Start-up", sixth round): each program

  plain;
  with the library alone as startup.py runs it (LD_PRELOAD, SYSCLUSTER_COALESCE=4096);
  with the library alone and exactly the variables the launcher adds
    (SYSCLUSTER_FLUSH_MS, SYSCLUSTER_REPORT naming a socket nobody binds);
  under a bare static parent (bench/runtime/bare_parent.c: vfork, execve,
    waitpid, nothing else) with those same variables;
  under `syscluster run --` (preload/build/syscluster, its library beside it);

interleaved, the order alternating every round; CPU time (user + system of
the child and all it waited for) from `wait4`, mean over the rounds after
two warm-up rounds, and the mean page faults and context switches.  Prints
a table; writes nothing.  The parent's own CPU time (without the program)
is `perf stat --no-inherit` (docs/BENCHMARKS.md).

    bench/runtime/parent.py [--rounds N] [--only TEXT]

Needs musl-gcc (bare_parent.c is built into the temporary directory) and a
built tree (`make -C preload`).  Scratch files (2,000 small files for tar)
live in a temporary directory removed at the end."""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
LAUNCHER = os.path.join(ROOT, "preload/build/syscluster")
LIB = os.path.join(ROOT, "preload/build/libsyscluster-preload.so")


def once(argv, env, devnull):
    pid = os.fork()
    if pid == 0:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execve(argv[0], argv, env)
    _, status, ru = os.wait4(pid, 0)
    if status != 0:
        sys.exit(f"parent: {argv} exited with status {status}")
    return (ru.ru_utime + ru.ru_stime) * 1e3, ru.ru_minflt, ru.ru_nvcsw + ru.ru_nivcsw


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=400, help="runs of each variant of each program")
    ap.add_argument("--only", help="only the programs whose name contains TEXT")
    args = ap.parse_args()
    for f in (LAUNCHER, LIB):
        if not os.path.exists(f):
            sys.exit(f"parent: no {f}: run `make -C preload`")
    tmp = tempfile.mkdtemp(prefix="sc-parent-")
    try:
        bare = os.path.join(tmp, "bare_parent")
        subprocess.run(["musl-gcc", "-O2", "-static", "-Wl,-z,noseparate-code", "-o", bare,
                        os.path.join(HERE, "bare_parent.c")], check=True)
        files = os.path.join(tmp, "files")
        os.mkdir(files)
        for i in range(2000):
            with open(os.path.join(files, f"f{i:04}"), "w") as f:
                f.write(f"small file {i}\n" * (1 + i % 8))
        programs = [
            ("/bin/true", [shutil.which("true")]),
            ("tar cf of 2,000 small files", [shutil.which("tar"), "cf", os.path.join(tmp, "out.tar"), "-C", tmp,
                                             "files"]),
            ("sleep 0.04", [shutil.which("sleep"), "0.04"]),
        ]
        if args.only:
            programs = [p for p in programs if args.only in p[0]]
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        for k in [k for k in env if k == "LD_PRELOAD" or k.startswith("SYSCLUSTER_")]:
            del env[k]
        lib = dict(env, LD_PRELOAD=LIB, SYSCLUSTER_COALESCE="4096")
        same = dict(lib, SYSCLUSTER_FLUSH_MS="5", SYSCLUSTER_REPORT="syscluster-run-parent-py-unbound")
        devnull = os.open(os.devnull, os.O_WRONLY)
        print("| program | variant | CPU | added | page faults | context switches |")
        print("|---|---|---|---|---|---|")
        for name, argv in programs:
            variants = [("plain", argv, env), ("library alone", argv, lib),
                        ("library alone, run's variables", argv, same),
                        ("bare parent + library", [bare] + argv, same),
                        ("`run`", [LAUNCHER, "run", "--"] + argv, env)]
            once(variants[-1][1], env, devnull)  # the scan cache, filled
            samples = {v: [] for v, _, _ in variants}
            for r in range(args.rounds + 2):
                for v, a, e in (variants if r % 2 == 0 else variants[::-1]):
                    s = once(a, e, devnull)
                    if r >= 2:
                        samples[v].append(s)
            plain = statistics.mean(s[0] for s in samples["plain"])
            for v, _, _ in variants:
                cpu = statistics.mean(s[0] for s in samples[v])
                print(f"| {name} | {v} | {cpu:.3f} ms | {cpu - plain:+.3f} ms | "
                      f"{statistics.mean(s[1] for s in samples[v]):.0f} | {statistics.mean(s[2] for s in samples[v]):.1f} |")
        print(f"load average {os.getloadavg()[0]:.1f} at the end, {args.rounds} rounds")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
