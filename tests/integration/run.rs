//! `syscluster run` and `syscluster stat` through the command line (the
//! runtime's own tests in crates/runtime and runtime/test cover the
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
    assert_eq!(std::fs::read(d.path().join("k")).unwrap(), b"killme!\n".repeat(10), "acknowledged writes survive SIGSEGV");
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
    let o = run(syscluster().args(["stat", "--json", "-r", "2", "--"]).arg(corpus("write8")).arg(d.path().join("w")).arg("300"));
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
    assert_eq!(v["by_syscall"]["close"]["min"].as_u64().unwrap() >= 1, true);
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
    out.lines().find(|l| l.starts_with("SigIgn:")).unwrap_or_else(|| panic!("{cmd:?} printed no SigIgn: {out}")).to_owned()
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
