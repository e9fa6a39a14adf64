//! Stopping a recording (issue 10, item 2): SIGINT or SIGTERM to the
//! recorder ends the recording with a complete profile in every backend and
//! mode; a command that ignores the signal is recorded to its end and its
//! status is the recorder's; detached tasks (setsid) are not waited for
//! unless --follow-detached, and then until the recorder is interrupted
//! (ptrace cannot let them run on untraced: it follows them always, and
//! ends them when interrupted).

use crate::util::*;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use syscluster_model::Profile;

fn start(out: &Path, args: &[&str], argv: &[&str]) -> Child {
    syscluster()
        .args(["record", "-q", "-o"])
        .arg(out)
        .args(args)
        .arg("--")
        .args(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start syscluster record")
}

/// Waits until `file` exists (the command is running), at most 20 s.
fn wait_for(file: &Path) {
    let t = Instant::now();
    while !file.exists() {
        assert!(t.elapsed() < Duration::from_secs(20), "{} never appeared", file.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn finish(c: Child, what: &str) -> (Option<i32>, String) {
    let o = c.wait_with_output().expect("wait for syscluster");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!err.contains("Interrupted system call"), "{what}: {err}");
    (o.status.code(), err)
}

fn signal(c: &Child, sig: i32) {
    assert_eq!(unsafe { libc::kill(c.id() as i32, sig) }, 0);
}

#[test]
fn interrupted_recording_writes_a_complete_profile() {
    let d = tmp();
    for (label, args) in record_backends() {
        for (sig, name) in [(libc::SIGINT, "INT"), (libc::SIGTERM, "TERM")] {
            let what = format!("{label} SIG{name}");
            let out = d.path().join(format!("{label}-{name}.json"));
            let ready = d.path().join(format!("{label}-{name}.ready"));
            // The command says it runs, then sleeps far longer than the test.
            let script = format!("touch {}; exec sleep 60", ready.display());
            let c = start(&out, &args, &["sh", "-c", &script]);
            wait_for(&ready);
            std::thread::sleep(Duration::from_millis(100));
            signal(&c, sig);
            let (code, err) = finish(c, &what);
            // The signal was passed on: sleep died of it, and so the recorder reports.
            assert_eq!(code, Some(128 + sig), "{what}: {err}");
            let p = Profile::load(&out).unwrap_or_else(|e| panic!("{what}: no profile: {e}; {err}"));
            assert_eq!(p.meta.exit.as_ref().and_then(|e| e.signal), Some(sig), "{what}");
            let calls = |name: &str| p.nodes.iter().filter(|n| n.syscall == name).map(|n| n.count).sum::<u64>();
            assert!(calls("execve") >= 2, "{what}: sh and sleep were both recorded");
            assert!(calls("clock_nanosleep") + calls("nanosleep") >= 1, "{what}: the sleep in flight is recorded");
            assert!(p.lost_events.is_empty(), "{what}: {:?}", p.lost_events);
        }
    }
}

/// Whether process `pid` catches `sig` and has no child yet: the recorder
/// getting ready (loading its BPF programs), before it starts the command.
fn catching_before_the_command(pid: u32, sig: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let caught = status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (sig - 1)) != 0);
    let tasks =
        std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.flatten().collect::<Vec<_>>()).unwrap_or_default();
    let children =
        tasks.iter().any(|t| !std::fs::read_to_string(t.path().join("children")).unwrap_or_default().trim().is_empty());
    caught && !children
}

/// A signal while the recorder gets ready (BPF programs take seconds to
/// load on a busy machine) used to kill it silently: no profile, no word.
/// It now stops the recording before the command starts, says so in one
/// line and exits 128 + the signal.
#[test]
fn interrupted_while_getting_ready_the_command_is_not_started() {
    if !have("bpf", is_root(), "BPF needs root") {
        return;
    }
    let d = tmp();
    for (sig, name) in [(libc::SIGINT, "INT"), (libc::SIGTERM, "TERM")] {
        let out = d.path().join(format!("{name}.json"));
        let ran = d.path().join(format!("{name}.ran"));
        let script = format!("touch {}; exec sleep 60", ran.display());
        let c = start(&out, &["--backend", "bpf"], &["sh", "-c", &script]);
        let t = Instant::now();
        while !catching_before_the_command(c.id(), sig) {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "SIG{name}: the recorder never caught it before starting the command"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        signal(&c, sig);
        let (code, err) = finish(c, name);
        assert_eq!(code, Some(128 + sig), "SIG{name}: an exit, not a death by the signal: {err}");
        if out.exists() {
            // The command was released in the instant between the look
            // and the signal: then it was recorded, as any interruption.
            assert!(Profile::load(&out).is_ok(), "SIG{name}: {err}");
        } else {
            assert!(!ran.exists(), "SIG{name}: the command ran");
            assert_eq!(err.lines().count(), 1, "SIG{name}: {err}");
            assert!(err.contains("the command was not started, nothing was recorded"), "SIG{name}: {err}");
        }
    }
}

#[test]
fn command_ignoring_the_signal_is_recorded_to_its_end() {
    let d = tmp();
    for (label, args) in record_backends() {
        let out = d.path().join(format!("{label}.json"));
        let ready = d.path().join(format!("{label}.ready"));
        let done = d.path().join(format!("{label}.done"));
        let script = format!("trap '' INT; touch {}; sleep 0.5; touch {}; exit 3", ready.display(), done.display());
        let c = start(&out, &args, &["sh", "-c", &script]);
        wait_for(&ready);
        signal(&c, libc::SIGINT);
        let (code, err) = finish(c, label);
        assert_eq!(code, Some(3), "{label}: the command's status: {err}");
        assert!(done.exists(), "{label}: the command ran to its end");
        let p = Profile::load(&out).unwrap_or_else(|e| panic!("{label}: no profile: {e}; {err}"));
        assert_eq!(p.meta.exit.as_ref().and_then(|e| e.code), Some(3), "{label}");
    }
}

/// Kills the process whose pid is in `file` (a detached task a test started).
fn kill_from(file: &Path) {
    if let Ok(pid) = std::fs::read_to_string(file).unwrap_or_default().trim().parse::<i32>() {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

#[test]
fn detached_tasks_are_not_waited_for_unless_followed() {
    let d = tmp();
    for (label, args) in record_backends() {
        let ptrace = label == "ptrace";
        let pidfile = d.path().join(format!("{label}.pid"));
        let marker = d.path().join(format!("{label}.daemon-done"));
        if !ptrace {
            not_followed(d.path(), label, &args, &pidfile, &marker);
        }

        // Followed: recorded to its end.
        let out = d.path().join(format!("{label}-follow.json"));
        let script = format!("setsid sh -c 'sleep 0.3; touch {}' & exit 4", marker.display());
        let o = run(syscluster()
            .args(["record", "-q", "--follow-detached", "-o"])
            .arg(&out)
            .args(&args)
            .args(["--", "sh", "-c", &script]));
        assert_eq!(o.status.code(), Some(4), "{label}: {}", stderr(&o));
        assert!(marker.exists(), "{label}: --follow-detached waits for the daemon");
        let p = Profile::load(&out).unwrap();
        assert_eq!(p.meta.left_running, 0, "{label}");
        let touched = p.nodes.iter().any(|n| n.syscall == "utimensat" || n.syscall == "openat");
        assert!(
            touched && p.meta.processes >= 4,
            "{label}: the daemon's calls are in the profile ({} processes)",
            p.meta.processes
        );

        // Followed (always, under ptrace), and the recorder interrupted
        // after the command ended.
        let out = d.path().join(format!("{label}-stop.json"));
        let _ = std::fs::remove_file(&pidfile);
        let script = format!("setsid sh -c 'echo $$ > {}; exec sleep 30' >/dev/null 2>&1 & exit 5", pidfile.display());
        let follow: &[&str] = if ptrace { &[] } else { &["--follow-detached"] };
        let c = start(&out, &[&args[..], follow].concat(), &["sh", "-c", &script]);
        wait_for(&pidfile);
        std::thread::sleep(Duration::from_millis(300));
        signal(&c, libc::SIGTERM);
        let (code, err) = finish(c, label);
        kill_from(&pidfile);
        assert_eq!(code, Some(5), "{label}: the command's status: {err}");
        let p = Profile::load(&out).unwrap_or_else(|e| panic!("{label}: no profile: {e}; {err}"));
        assert_eq!(p.meta.left_running, 1, "{label}");
    }
}

/// Not followed (BPF): record returns with the command, the daemon runs on.
fn not_followed(dir: &Path, label: &str, args: &[&str], pidfile: &Path, marker: &Path) {
    let out = dir.join(format!("{label}.json"));
    let script = format!(
        "setsid sh -c 'echo $$ > {}; sleep 30; touch {}' >/dev/null 2>&1 & exit 4",
        pidfile.display(),
        marker.display()
    );
    // Not -q: the note about the tasks left is wanted. The daemon does not
    // hold the pipes that collect it.
    let o = run(syscluster().args(["record", "-o"]).arg(&out).args(args).args(["--", "sh", "-c", &script]));
    let err = stderr(&o);
    wait_for(pidfile);
    let pid = std::fs::read_to_string(pidfile).unwrap().trim().parse::<i32>().expect("daemon pid");
    let daemon_alive = unsafe { libc::kill(pid, 0) } == 0;
    kill_from(pidfile);
    assert_eq!(o.status.code(), Some(4), "{label}: {err}");
    assert!(!marker.exists(), "{label}: record waited for the daemon");
    assert!(daemon_alive, "{label}: the daemon must run on, untraced");
    let p = Profile::load(&out).unwrap_or_else(|e| panic!("{label}: no profile: {e}; {err}"));
    assert!(p.meta.left_running >= 1, "{label}: left_running {}", p.meta.left_running);
    assert!(err.contains("--follow-detached"), "{label}: {err}");
}
