//! Bad input gets one line naming the problem and a non-zero exit, never a
//! panic: garbled and truncated strace logs, corrupt and future profiles,
//! commands that do not exist, unwritable outputs.

use crate::util::*;
use std::process::Output;

/// The process failed with exactly one line on stderr that mentions `what`.
fn one_line_error(o: &Output, what: &str) {
    let err = stderr(o);
    assert!(!o.status.success(), "expected failure, got success; stderr: {err}");
    assert_eq!(err.lines().count(), 1, "expected one line, got: {err}");
    assert!(err.starts_with("syscluster: "), "{err}");
    assert!(err.contains(what), "expected {what:?} in: {err}");
    assert!(!err.contains("panicked") && !err.contains("internal error"), "{err}");
}

#[test]
fn garbled_strace_log() {
    let d = tmp();
    let log = d.path().join("log");
    std::fs::write(&log, "123 1700000000.1 write(1, \"x\", 1) = 1 <0.1>\n\x01\x02garbage here\n").unwrap();
    let o = run(syscluster().arg("import-strace").arg(&log).arg("-o").arg(d.path().join("p.json")));
    one_line_error(&o, ":2: not strace output");
    assert!(!d.path().join("p.json").exists(), "no profile from a bad log");
}

#[test]
fn truncated_strace_log() {
    let d = tmp();
    let log = d.path().join("log");
    std::fs::write(&log, "123 1700000000.1 write(1, \"x\", 1) = 1 <0.1>\n123 1700000000.2 write(1, \"abc").unwrap();
    let o = run(syscluster().arg("import-strace").arg(&log).arg("-o").arg(d.path().join("p.json")));
    one_line_error(&o, "truncated");
}

#[test]
fn empty_and_missing_logs() {
    let d = tmp();
    let log = d.path().join("log");
    std::fs::write(&log, "").unwrap();
    one_line_error(&run(syscluster().arg("import-strace").arg(&log)), "holds no system calls");
    one_line_error(&run(syscluster().arg("import-strace").arg(d.path().join("nope"))), "No such file");
}

#[test]
fn corrupt_profiles() {
    let d = tmp();
    let cases: &[(&str, &str)] = &[
        ("{\"format_version\": 1, \"meta\": ", "invalid JSON"),
        ("[1, 2, 3]", "not a syscluster profile"),
        ("{\"hello\": 1}", "no format_version"),
        ("{\"format_version\": \"one\"}", "not a positive integer"),
        ("{\"format_version\": 99, \"future\": {}}", "newer than the 3"),
        ("\u{0}\u{1}binary", "invalid JSON"),
    ];
    for (i, (text, what)) in cases.iter().enumerate() {
        let f = d.path().join(format!("p{i}.json"));
        std::fs::write(&f, text).unwrap();
        one_line_error(&run(syscluster().arg("report").arg(&f)), what);
    }
}

#[test]
fn inconsistent_profile_is_refused() {
    // A real profile, then an edge that names a node that does not exist.
    let d = tmp();
    let _ = strace_profile(d.path(), &[corpus("write8").to_str().unwrap(), d.path().join("w").to_str().unwrap(), "5"]);
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("strace.json")).unwrap()).unwrap();
    v["edges"][0]["to"] = serde_json::json!(100000);
    let f = d.path().join("bad.json");
    std::fs::write(&f, serde_json::to_vec(&v).unwrap()).unwrap();
    one_line_error(&run(syscluster().arg("report").arg(&f)), "does not exist");
}

#[test]
fn command_that_does_not_exist() {
    let d = tmp();
    for backend in ["bpf", "ptrace"] {
        let o = run(syscluster().current_dir(d.path()).args([
            "record",
            "-q",
            "--backend",
            backend,
            "--",
            "/no/such/program",
            "x",
        ]));
        if stderr(&o).contains("BPF is not available") && !is_root() {
            need("bpf", &format!("the bpf case: {}", stderr(&o)));
            continue;
        }
        one_line_error(&o, "command not found: /no/such/program");
        assert_eq!(o.status.code(), Some(127));
    }
}

#[test]
fn unwritable_output_fails_before_running() {
    let d = tmp();
    let marker = d.path().join("ran");
    let o = run(syscluster().args(["record", "-q", "-o", "/nonexistent-dir/p.json", "--", "touch"]).arg(&marker));
    one_line_error(&o, "cannot write profile /nonexistent-dir/p.json");
    assert!(!marker.exists(), "the command must not run when the profile cannot be written");
}

#[test]
fn usage_errors() {
    let o = run(syscluster().args(["record"]));
    assert_eq!(o.status.code(), Some(2));
    let o = run(syscluster().args(["report", "--format", "pdf"]));
    assert_eq!(o.status.code(), Some(2));
    let o = run(syscluster().args(["import-strace", "x", "--node-key", "callsite"]));
    one_line_error(&o, "strace logs do not have");
}

/// A mistyped flag before the command is named as an unknown flag, with the
/// closest one suggested, for every subcommand that takes a command; the
/// command does not run. Flags after the command's name are the command's.
#[test]
fn mistyped_flag_is_not_the_command() {
    let d = tmp();
    let marker = d.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let out = d.path().join("x.json");
    for (args, typo, known) in [
        (vec!["record", "--mdoe", "events", "-o", out.to_str().unwrap()], "--mdoe", "--mode"),
        (vec!["run", "--verbsoe"], "--verbsoe", "--verbose"),
        (vec!["stat", "--rnus", "2"], "--rnus", "--runs"),
    ] {
        let o = run(syscluster().args(&args).args(["--", "sh", "-c", &touch]));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(&format!("unexpected argument '{typo}'")), "{args:?}: {err}");
        assert!(err.contains(&format!("'{known}'")), "{args:?}: no suggestion in {err}");
        assert!(!err.contains("command not found"), "{args:?}: {err}");
        assert!(!marker.exists(), "{args:?}: the command ran");
    }
    // The command's own flags need no `--` once its name is given.
    let o = run(syscluster().args(["record", "-q", "-o", out.to_str().unwrap(), "sh", "-c", "exit 3"]));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
}
