//! `syscluster run` and `syscluster stat` through the command line (the
//! runtime's own tests in crates/supervisor and preload/test cover the
//! semantics in depth).

use crate::util::*;

#[test]
fn run_keeps_output_and_exit_status() {
    let d = tmp();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    let o = run(std::process::Command::new(corpus("write8")).arg(&a).arg("5000"));
    assert!(o.status.success());
    let o = run(syscluster().args(["run", "--"]).arg(corpus("write8")).arg(&b).arg("5000"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    // The exit status passes through, signals as 128 + N.
    let o = run(syscluster().args(["run", "--"]).arg(corpus("killed")).arg(d.path().join("k")).arg("10").arg("segv"));
    assert_eq!(o.status.code(), Some(128 + 11));
    assert_eq!(
        std::fs::read(d.path().join("k")).unwrap(),
        b"killme!\n".repeat(10),
        "acknowledged writes survive SIGSEGV"
    );
    let o = run(syscluster().args(["run", "--", "/no/such/cmd"]));
    assert_eq!(o.status.code(), Some(127));
    assert!(stderr(&o).contains("command not found"));
}

#[test]
fn stat_whose_reader_went_away_ends_as_the_command_does() {
    // `syscluster stat -- yes | head -1`: yes dies of SIGPIPE, and stat,
    // writing its table to the same closed pipe, must too — not exit 70
    // with an internal error.
    use std::io::BufRead;
    use std::os::unix::process::ExitStatusExt;
    let mut child = syscluster()
        .args(["stat", "--", "yes"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run syscluster stat");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line, "y\n");
    // (The reader is dropped here: the pipe has no reader left.)
    let o = child.wait_with_output().unwrap();
    assert!(!stderr(&o).contains("internal error"), "{}", stderr(&o));
    assert_eq!(o.status.signal(), Some(libc::SIGPIPE), "{:?}: {}", o.status, stderr(&o));
}

#[test]
fn stat_json_counts_and_times() {
    let d = tmp();
    let o = run(syscluster()
        .args(["stat", "--json", "-r", "2", "--"])
        .arg(corpus("write8"))
        .arg(d.path().join("w"))
        .arg("300"));
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stat --json is JSON");
    assert_eq!(v["format_version"], 1);
    assert_eq!(v["runs"], 2);
    assert_eq!(v["wall_ns"]["runs"].as_array().unwrap().len(), 2);
    assert!(v["wall_ns"]["min"].as_u64().unwrap() > 0);
    if v["crossings"].is_null() {
        panic!("no crossings counted: {}", stderr(&o));
    }
    // write8 makes exactly 300 writes.
    assert_eq!(v["by_syscall"]["write"]["median"], 300);
    assert!(v["by_syscall"]["close"]["min"].as_u64().unwrap() >= 1);
}

/// The `SigIgn:` line of a shell started by `cmd` (it prints its own).
fn ignored_signals(cmd: &mut std::process::Command, ignore_sigpipe: bool) -> String {
    use std::os::unix::process::CommandExt;
    cmd.args(["sh", "-c", "grep '^SigIgn:' /proc/$$/status"]);
    // SAFETY: async-signal-safe calls between fork and exec.  Both the plain
    // shell and syscluster start from the same known state: glibc's 32 and
    // 33 at SIG_DFL (cargo starts this test through posix_spawn, which
    // leaves them ignored), SIGPIPE as asked.
    unsafe {
        cmd.pre_exec(move || {
            let dfl: [usize; 4] = [0; 4]; // the kernel's struct sigaction: SIG_DFL, no flags
            for sig in [32, 33] {
                libc::syscall(libc::SYS_rt_sigaction, sig, dfl.as_ptr(), 0usize, 8usize);
            }
            libc::signal(libc::SIGPIPE, if ignore_sigpipe { libc::SIG_IGN } else { libc::SIG_DFL });
            Ok(())
        })
    };
    let o = run(cmd);
    assert!(o.status.success(), "{cmd:?}: {}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    out.lines()
        .find(|l| l.starts_with("SigIgn:"))
        .unwrap_or_else(|| panic!("{cmd:?} printed no SigIgn: {out}"))
        .to_owned()
}

/// `run`, `record` and `stat` start the program with the signal
/// dispositions they were given: not SIGPIPE ignored (Rust's runtime
/// ignores it in the parent), not glibc's 32 and 33 ignored (posix_spawn's
/// child does that), and SIGPIPE ignored when the shell ignored it.
#[test]
fn programs_start_with_the_signal_dispositions_of_the_shell() {
    let d = tmp();
    let profile = d.path().join("p.json");
    let launchers: [Vec<std::ffi::OsString>; 3] = [
        vec!["run".into(), "--".into()],
        vec!["record".into(), "-o".into(), profile.clone().into(), "--".into()],
        vec!["stat".into(), "--runs".into(), "1".into(), "--".into()],
    ];
    for ignore in [false, true] {
        let plain = ignored_signals(&mut std::process::Command::new("env"), ignore);
        for l in &launchers {
            let under = ignored_signals(syscluster().args(l), ignore);
            assert_eq!(under, plain, "syscluster {:?} (SIGPIPE ignored by the shell: {ignore})", l[0]);
        }
    }
    // `yes | head -1`: yes dies of SIGPIPE, as without syscluster.
    for l in &launchers[..2] {
        let mut c = syscluster();
        c.args(l).arg("yes").stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        let mut child = c.spawn().expect("spawn syscluster");
        let mut line = [0u8; 2];
        std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut line).expect("yes writes");
        drop(child.stdout.take());
        let o = child.wait_with_output().expect("wait");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(128 + libc::SIGPIPE), "syscluster {:?} -- yes | head -1: {err}", l[0]);
        assert!(!err.contains("Broken pipe"), "{err}");
    }
}

/// `syscluster run` is answered by the small `syscluster` binary itself
/// for its plainest command lines (crates/cli/src/fast.rs) and by the full
/// CLI, `syscluster-cli`, for every other: the same command lines through
/// both give the same exit status, stdout and stderr — exit codes, death
/// by a signal, the report line of a program that cannot be interposed, a
/// missing command — and every other command line reaches the full CLI.
#[test]
fn the_small_binary_runs_programs_as_the_full_cli_does() {
    let full = std::path::Path::new(env!("CARGO_BIN_EXE_syscluster")).with_file_name("syscluster-cli");
    assert!(full.exists(), "syscluster-cli is built next to syscluster");
    let d = tmp();
    let out = d.path().join("out");
    // A static program: cannot be interposed, which `run` reports.
    let stat = d.path().join("static");
    std::fs::write(d.path().join("s.c"), "int main(void) { return 4; }\n").unwrap();
    let built = run(std::process::Command::new("gcc").args(["-static", "-o"]).arg(&stat).arg(d.path().join("s.c")));
    assert!(built.status.success(), "gcc -static failed (libc6-dev provides libc.a)");
    let lines: Vec<Vec<std::ffi::OsString>> = vec![
        vec!["run".into(), "--".into(), "sh".into(), "-c".into(), "echo out; echo err >&2; exit 3".into()],
        vec![
            "run".into(),
            "-v".into(),
            "--flush-interval=7".into(),
            "--".into(),
            "sh".into(),
            "-c".into(),
            "kill -TERM $$".into(),
        ],
        vec![
            "run".into(),
            "--coalesce-writes=16".into(),
            "--".into(),
            corpus("write8").into(),
            out.clone().into(),
            "200".into(),
        ],
        vec!["run".into(), "--".into(), stat.clone().into()],
        vec!["run".into(), "--".into(), "/no/such/cmd".into()],
    ];
    for args in &lines {
        let small = run(syscluster().args(args));
        let _ = std::fs::remove_file(&out);
        let big = run(std::process::Command::new(&full).env_remove("LD_LIBRARY_PATH").args(args));
        let _ = std::fs::remove_file(&out);
        assert_eq!(small.status.code(), big.status.code(), "{args:?}: {}", stderr(&small));
        assert_eq!(small.stdout, big.stdout, "{args:?}");
        // -v names the process: its pid differs between the two runs.
        let norm = |o: &std::process::Output| {
            let s = stderr(o);
            s.split(|c: char| c.is_ascii_digit()).collect::<Vec<_>>().join("N")
        };
        assert_eq!(norm(&small), norm(&big), "{args:?}");
    }
    assert_eq!(run(syscluster().args(["run", "--", "sh", "-c", "exit 5"])).status.code(), Some(5));
    // The rest goes to the full CLI: its help, its errors, its subcommands.
    let o = run(syscluster().args(["run", "--help"]));
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("--plan"), "{}", stderr(&o));
    let o = run(syscluster().args(["run", "--mdoe", "true"]));
    assert_eq!(o.status.code(), Some(2), "a mistyped flag is clap's error: {}", stderr(&o));
    let o = run(syscluster().args(["--version"]));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("syscluster "));
}

#[test]
fn run_verbose_says_why_nothing_was_deferred() {
    let d = tmp();
    let file = d.path().join("w");
    let why = |args: &[&str], out: &std::path::Path, n: &str| {
        let o = run(syscluster().args(["run", "-v"]).args(args).arg("--").arg(corpus("write8")).arg(out).arg(n));
        assert!(o.status.success(), "{}", stderr(&o));
        let lines: Vec<String> =
            stderr(&o).lines().filter(|l| l.contains("nothing deferred")).map(str::to_string).collect();
        assert!(lines.len() <= 1, "one line per process: {lines:?}");
        lines.into_iter().next().unwrap_or_default()
    };
    // A character device: the short writes go straight through.
    let l = why(&["--coalesce-writes"], std::path::Path::new("/dev/null"), "100");
    assert!(l.contains("write8[") && l.contains("of 100 write/writev calls, 100 to terminals or devices"), "{l}");
    // Writes as large as the size to defer below.
    let l = why(&["--coalesce-writes=8"], &file, "100");
    assert!(l.contains("100 as large as the size to defer below or larger (8 B)"), "{l}");
    // A file's first short writes go straight through.
    let l = why(&["--coalesce-writes"], &file, "3");
    assert!(l.contains("3 short, to regular files the runtime does not defer"), "{l}");
    // Deferred: nothing to explain.
    assert_eq!(why(&["--coalesce-writes"], &file, "1000"), "");
    // A program that writes nothing through libc.
    let o = run(syscluster().args(["run", "-v", "--coalesce-writes", "--", "true"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("]: nothing deferred: no write or writev went through libc"), "{}", stderr(&o));
}
