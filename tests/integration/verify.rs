//! `syscluster verify`: identical programs pass, a byte of difference is
//! found and named, an injected fault tells a program that handles it from
//! one that ignores it, `--run` against the runtime, bad arguments exit 2.

use crate::util::{corpus, run, stderr, syscluster, tmp};
use std::path::Path;
use std::process::Output;

fn verify(dir: &Path, args: &[&str]) -> Output {
    run(syscluster().arg("verify").arg("--dir").arg(dir).args(args))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("verify exits, it is not killed")
}

/// The (original, candidate) figures of a row of the table.
fn row(out: &str, name: &str) -> (String, String) {
    let line =
        out.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_else(|| panic!("no {name} row in:\n{out}"));
    let v: Vec<&str> = line.split_whitespace().collect();
    (v[v.len() - 2].to_string(), v[v.len() - 1].to_string())
}

#[test]
fn identical_programs_pass() {
    let d = tmp();
    let (w, c) = (corpus("write8"), corpus("write8_coalesced"));
    let o = verify(
        d.path(),
        &["-r", "2", "--", w.to_str().unwrap(), "out", "1000", ":::", c.to_str().unwrap(), "out", "1000"],
    );
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("same: stdout, stderr, exit status and files are identical"), "{out}");
    assert_eq!(row(&out, "files created"), ("1".into(), "1".into()), "{out}");
    // write8_coalesced makes one write per 4 KiB instead of one per 8 bytes.
    let (a, b) = row(&out, "crossings");
    let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
    assert!(a >= 1000 && b < 100, "crossings {a} vs {b}:\n{out}");
    // The scratch copies are gone and the directory verify copied is untouched.
    assert!(!d.path().join("out").exists());
}

#[test]
fn a_different_byte_is_found_and_named() {
    let d = tmp();
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(d.path().join("in"), &data).unwrap();
    let mut other = data.clone();
    other[5000] ^= 0x20;
    std::fs::write(d.path().join("in2"), &other).unwrap();
    let copy = corpus("copy");
    let copy = copy.to_str().unwrap();
    // Original `copy in out`, candidate `copy INPUT out`.
    let against = |input: &str| verify(d.path(), &["--no-count", "--", copy, "in", "out", ":::", copy, input, "out"]);
    let o = against("in2");
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    let want = "file out: first difference at byte 5000 (original 10000 bytes, candidate 10000 bytes)";
    assert!(out.contains(want), "{out}");
    assert_eq!(out.matches("\n  - ").count(), 1, "only out differs:\n{out}");
    // The same command against itself passes: the copies start identical.
    let o = against("in");
    assert_eq!(code(&o), 0, "{}", stdout(&o));
}

/// `syscluster verify OPTS -- A ARGS ::: B ARGS` in a scratch copy of `dir`.
fn verify_pair(dir: &Path, opts: &[&str], a: &str, b: &str, args: &[&str]) -> Output {
    let mut all: Vec<&str> = opts.to_vec();
    all.push("--");
    all.push(a);
    all.extend(args);
    all.push(":::");
    all.push(b);
    all.extend(args);
    verify(dir, &all)
}

#[test]
fn an_injected_enospc_handled_differently_is_found() {
    let d = tmp();
    let (w, u) = (corpus("write8"), corpus("write8_unchecked"));
    let (w, u) = (w.to_str().unwrap(), u.to_str().unwrap());
    let args = ["out", "50"];
    // Without the fault the two cannot be told apart.
    let o = verify_pair(d.path(), &[], w, u, &args);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    // write8 stops at the failed write and says why; write8_unchecked goes on.
    let o = verify_pair(d.path(), &["--inject", "write:ENOSPC@3"], w, u, &args);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("exit status: original exit 1, candidate exit 0"), "{out}");
    assert!(out.contains("stderr: first difference at byte 0") && out.contains("write: No space"), "{out}");
    // Two writes made it to the file before the fault in the original, all
    // but the failed one in the candidate.
    let want = "file out: first difference at byte 16 (original 16 bytes, candidate 392 bytes)";
    assert!(out.contains(want), "{out}");
    // A program against itself under the same fault: the same failure.
    let o = verify_pair(d.path(), &["--inject", "write:ENOSPC@3"], w, w, &args);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("write:ENOSPC@3 injected in both"), "{}", stdout(&o));
    // A short write: write8 notices it too.
    let o = verify_pair(d.path(), &["--inject", "write:short@2"], w, u, &args);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let want = "file out: first difference at byte 12 (original 12 bytes, candidate 396 bytes)";
    assert!(stdout(&o).contains(want), "{}", stdout(&o));
}

/// A candidate killed by a signal differs from one that exits.
#[test]
fn a_killing_signal_is_a_difference() {
    let d = tmp();
    let (w, k) = (corpus("write8"), corpus("killed"));
    let (w, k) = (w.to_str().unwrap(), k.to_str().unwrap());
    let o = verify(d.path(), &["--no-count", "--", w, "out", "10", ":::", k, "out", "10", "term"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("exit status: original exit 0, candidate killed by signal 15"), "{out}");
    assert_eq!(row(&out, "exit"), ("0".into(), "killed(15)".into()), "{out}");
    // killed writes "killme!\n" where write8 writes "01234567".
    assert!(out.contains("file out: first difference at byte 0 (original 80 bytes, candidate 80 bytes)"), "{out}");
}

#[test]
fn a_fault_that_never_fires_is_an_error() {
    let d = tmp();
    let w = corpus("write8");
    let w = w.to_str().unwrap();
    let o = verify(d.path(), &["--inject", "write:EIO@100", "--", w, "out", "5", ":::", w, "out", "5"]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("fault write:EIO@100 was never injected: the original made 5 such calls"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_arguments_exit_2_with_one_line() {
    let d = tmp();
    let w = corpus("write8");
    let w = w.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--", w, "out", "5"], "expected ORIGINAL… ::: CANDIDATE…"),
        (&["--", w, ":::"], "both sides of `:::` need a command"),
        (&["--inject", "write:ENOSPC", "--", w, ":::", w], "bad fault \"write:ENOSPC\": no @K"),
        (&["--inject", "wirte:EIO@1", "--", w, ":::", w], "no system call \"wirte\""),
        (&["--inject", "close:short@1", "--", w, ":::", w], "close has no size argument"),
        (&["--run", "--inject", "write:EIO@1", "--", w, "out", "5"], "--inject cannot be used with --run"),
        (&["--run", "--", w, ":::", w], "--run takes one command"),
        (&["--fs-limit", "12X", "--", w, ":::", w], "bad --fs-limit \"12X\""),
        (&["--", "/nonexistent/prog", ":::", w], "command not found: /nonexistent/prog"),
    ];
    for (args, want) in cases {
        let o = verify(d.path(), args);
        let err = stderr(&o);
        assert_eq!(code(&o), 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let o = run(syscluster().args(["verify", "--dir", "/nonexistent", "--", w, ":::", w]));
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--dir"), "{}", stderr(&o));
    // Not the clap usage error only: a flag verify does not have.
    let o = run(syscluster().args(["verify", "--bogus", "--", w, ":::", w]));
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

#[test]
fn run_against_the_runtime_on_write8() {
    let d = tmp();
    let w = corpus("write8");
    let o = verify(d.path(), &["--run", "--", w.to_str().unwrap(), "out", "20000"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    let (a, b) = row(&out, "crossings");
    let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
    // 20000 writes of 8 bytes become about 40 of 4 KiB (plus the supervisor's own calls).
    assert!(a > 20_000 && b < a / 4, "crossings {a} vs {b}:\n{out}");
}

/// ENOSPC from a size-limited tmpfs falls at the same byte with and without
/// the runtime (root: tmpfs mounts; CI has them).
#[test]
fn run_with_a_full_file_system() {
    let d = tmp();
    let w = corpus("write8");
    let o = verify(d.path(), &["--run", "--fs-limit", "16K", "--", w.to_str().unwrap(), "out", "4000"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    // The file system did fill up: write8 failed in both.
    assert_eq!(row(&stdout(&o), "exit"), ("1".into(), "1".into()), "{}", stdout(&o));
}
