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

/// `syscluster run` is answered by the launcher, `syscluster`, itself for
/// its plainest command lines (preload/launcher/launcher.c) and by the full
/// CLI, `syscluster-cli`, for every other: the same command lines through
/// both give the same exit status, stdout and stderr — exit codes, death
/// by a signal, the report line of a program that cannot be interposed, a
/// missing command — and every other command line reaches the full CLI.
#[test]
fn the_small_binary_runs_programs_as_the_full_cli_does() {
    let full = syscluster_path().with_file_name("syscluster-cli");
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

/// The launcher reads the command lines it takes itself exactly as clap
/// reads them — the flags (the settings the program gets in its
/// environment), where the command starts, its arguments — and leaves
/// every other to the full CLI, whose answer it gives.  A copy of the
/// launcher alone in a directory (no `syscluster-cli` to hand over to)
/// tells which it took: those it takes still run, the others fail to start
/// the full CLI.
#[test]
fn the_launcher_reads_run_flags_as_clap_does() {
    let full = syscluster_path().with_file_name("syscluster-cli");
    let d = tmp();
    let lone = d.path().join("syscluster");
    std::fs::copy(syscluster_path(), &lone).unwrap();
    // The program: its name, its arguments, and the settings it was given.
    let show = "printf '%s|' \"$0\" \"$@\"; echo; env | grep '^SYSCLUSTER_' | grep -v '^SYSCLUSTER_REPORT=' | sort";
    let with_shell = |v: &[&str], at: usize| -> Vec<String> {
        let mut out: Vec<String> = v[..at].iter().map(|s| s.to_string()).collect();
        out.extend(["sh".to_string(), "-c".to_string(), show.to_string()]);
        out.extend(v[at..].iter().map(|s| s.to_string()));
        out
    };
    let same = |args: &[String], lone_too: bool| {
        // With -v each process of the pipeline reports as it ends: in any order.
        let norm = |o: &std::process::Output| {
            let mut err: Vec<String> = stderr(o).lines().map(str::to_string).collect();
            err.sort();
            let text = format!("{}\n--\n{}", String::from_utf8_lossy(&o.stdout), err.join("\n"));
            text.replace("syscluster-cli", "syscluster")
                .split(|c: char| c.is_ascii_digit())
                .collect::<Vec<_>>()
                .join("N")
        };
        let a = run(syscluster().args(args));
        let b = run(std::process::Command::new(&full).env_remove("LD_LIBRARY_PATH").args(args));
        assert_eq!(a.status.code(), b.status.code(), "{args:?}: {}", stderr(&a));
        assert_eq!(norm(&a), norm(&b), "{args:?}");
        let c = run(std::process::Command::new(&lone).env_remove("LD_LIBRARY_PATH").args(args));
        if lone_too {
            assert_eq!((c.status.code(), norm(&c)), (a.status.code(), norm(&a)), "{args:?}: not taken by the launcher");
        } else {
            assert_eq!(c.status.code(), Some(127), "{args:?} taken by the launcher: {}", stderr(&c));
            assert!(stderr(&c).contains("cannot start"), "{args:?}: {}", stderr(&c));
        }
    };
    // (the command line, where its command starts)
    for (v, at) in [
        (&["run", "--", "true"][..], 2),
        (&["run", "true", "-v", "--", "x"], 1),
        (&["run", "-v", "--", "dd", "bs=8"], 3),
        (&["run", "--verbose", "cat", "-"], 2),
        (&["run", "--coalesce-writes", "--", "true"], 3),
        (&["run", "--coalesce-writes=100", "-v", "--", "true"], 4),
        (&["run", "--coalesce-writes=7", "true"], 2),
        (&["run", "--flush-interval", "7", "--", "true"], 4),
        (&["run", "--flush-interval=0007", "-v", "true", "--x"], 3),
        (&["run", "--flush-interval=60000", "--coalesce-writes=00012", "--", "a", "-v"], 4),
    ] {
        same(&with_shell(v, at), true);
    }
    for v in [
        &["run", "--coalesce-writes=0", "true"][..],
        &["run"],
        &["run", "--"],
        &["run", "--plan", "p.json", "--", "true"],
        &["run", "--help"],
        &["run", "-h", "true"],
        &["run", "-v", "-v", "true"],
        &["run", "-vv", "true"],
        &["run", "--mdoe", "true"],
        &["run", "--coalesce-writes", "100", "true"],
        &["run", "--coalesce-writes", "true"],
        &["run", "--coalesce-writes=+5", "true"],
        &["run", "--coalesce-writes=", "true"],
        &["run", "--coalesce-writes=99999999999999999999999", "true"],
        &["run", "--flush-interval", "-v", "true"],
        &["run", "--flush-interval=0", "true"],
        &["run", "--flush-interval=60001", "true"],
        &["run", "--flush-interval=99999999999", "true"],
        &["run", "--flush-interval=1", "--flush-interval=2", "true"],
        &["run", "--", "--", "-v"],
        &["run", "--", "/no/such/command"],
        &["--version"],
        &["record", "--mdoe", "events", "--", "true"],
    ] {
        let args: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        same(&args, false);
    }
}

/// Killed from outside mid-run under the launcher: every record the
/// program saw acknowledged is on disk when `syscluster run` returns (the
/// launcher waits for the guardian handed over to it, as the supervisor
/// does; crates/supervisor/tests/run.rs checks the supervisor alone).  The
/// guardian's writing takes tens of microseconds: a launcher that did not
/// wait would still pass most rounds, so this catches lost records, not
/// reliably a missing wait.
#[test]
fn the_launcher_waits_for_the_guardian_of_a_killed_program() {
    let st = run(std::process::Command::new("make")
        .args(["-s", "-C"])
        .arg(root().join("preload"))
        .arg("build/test/ackwriter"));
    assert!(st.status.success(), "building preload's ackwriter: {}", stderr(&st));
    let ack = root().join("preload/build/test/ackwriter");
    for mode in ["", "append"] {
        for round in 0..3 {
            let t = tmp();
            let (out, a) = (t.path().join("out"), t.path().join("ack"));
            let script = format!(
                "{} {} {} {mode} & p=$!; sleep 0.{}; kill -KILL $p; wait $p",
                ack.display(),
                out.display(),
                a.display(),
                round * 3 + 1
            );
            let o = run(syscluster().args(["run", "--", "sh", "-c", &script]));
            assert!(o.status.code().is_some(), "sh itself died: {}", stderr(&o));
            let check = run(std::process::Command::new(&ack).arg("--check").arg(&out).arg(&a));
            assert!(check.status.success(), "SIGKILL {mode} round {round}: {}", stderr(&check));
        }
    }
}
