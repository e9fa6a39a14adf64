//! The ptrace backend on the corpus programs: exact edge weights from their
//! header comments, threads, children, signals, exit status, pass-through of
//! stdin/stdout/stderr, a missing command, and agreement with strace.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Once, RwLock};
use syscluster_model::Profile;
use syscluster_record::{record, Backend, ExitStatus, LaunchError, RecordError, RecordOptions, Recording};

const PYTHON: &str = "/usr/bin/python3";

/// Tests that fork the test process itself take this for writing, so that no
/// other test thread holds a lock the child could need.
static FORKING: RwLock<()> = RwLock::new(());

fn corpus(name: &str) -> PathBuf {
    static BUILD: Once = Once::new();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    BUILD.call_once(|| {
        let st = std::process::Command::new("make").arg("-s").arg("-C").arg(&dir).status().expect("make runs");
        assert!(st.success(), "building the corpus failed");
    });
    dir.join("bin").join(name)
}

fn options() -> RecordOptions {
    RecordOptions { backend: Some(Backend::Ptrace), ..RecordOptions::default() }
}

fn argv(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    args.iter().map(|a| a.as_ref().to_os_string()).collect()
}

fn record_ptrace(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Recording {
    let _shared = FORKING.read().unwrap_or_else(|e| e.into_inner());
    record(&argv(args), &options()).unwrap_or_else(|e| panic!("recording failed: {e}"))
}

/// Edges by node labels: `("write(3)", "write(3)") -> weight`.
fn edges(p: &Profile) -> BTreeMap<(String, String), u64> {
    p.edges.iter().map(|e| ((p.label(e.from), p.label(e.to)), e.weight)).collect()
}

fn weight(p: &Profile, from: &str, to: &str) -> u64 {
    edges(p).get(&(from.to_string(), to.to_string())).copied().unwrap_or(0)
}

fn count(p: &Profile, label: &str) -> u64 {
    p.nodes.iter().filter(|n| p.label(n.id) == label).map(|n| n.count).sum()
}

#[test]
fn write8_edges_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let r = record_ptrace(&[&corpus("write8"), &out, &"1000"]);
    assert_eq!(r.exit, ExitStatus::Code(0));
    let p = &r.profile;
    assert_eq!(weight(p, "write(3)", "write(3)"), 999, "{:#?}", edges(p));
    assert_eq!(weight(p, "write(3)", "close(3)"), 1);
    assert_eq!(count(p, "write(3)"), 1000);
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 8000);
    // Recording starts at the command's execve, as strace shows it.
    assert_eq!(count(p, "execve"), 1);
    let first = p.nodes.iter().find(|n| n.syscall == "execve").unwrap();
    assert_eq!(first.errors, 0);
    assert_eq!(count(p, "exit_group"), 1, "calls that never return are counted");
    assert_eq!(p.lost_events.total, 0);
    assert_eq!(p.meta.backend, "ptrace");
}

#[test]
fn copy_edges_are_exact_and_the_output_is_intact() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in"), dir.path().join("out"));
    let k = 300u64;
    let data: Vec<u8> = (0..k * 4096).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&input, &data).unwrap();
    let r = record_ptrace(&[&corpus("copy"), &input, &output]);
    assert_eq!(r.exit, ExitStatus::Code(0));
    let p = &r.profile;
    assert_eq!(weight(p, "read(3)", "write(4)"), k, "{:#?}", edges(p));
    assert_eq!(weight(p, "write(4)", "read(3)"), k);
    assert_eq!(std::fs::read(&output).unwrap(), data, "the traced program's output changed");
    // Results are recorded: the read that ends the loop returned 0, and the
    // write's count is the read's result (a data dependency).
    let dep = p.edges.iter().find(|e| p.label(e.from) == "read(3)" && p.label(e.to) == "write(4)").unwrap();
    assert!(dep.result_matches.iter().any(|m| m.arg == 2 && m.count == k), "{dep:?}");
    let input_path = input.to_string_lossy().into_owned();
    assert!(p.io_patterns.iter().any(|io| io.path == input_path), "paths are read from the tracee: {:?}", p.io_patterns);
}

#[test]
fn seekread_edges_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, vec![7u8; 64 << 10]).unwrap();
    let r = record_ptrace(&[&corpus("seekread"), &file, &"500"]);
    assert_eq!(r.exit, ExitStatus::Code(0));
    assert_eq!(weight(&r.profile, "lseek(3)", "read(3)"), 500, "{:#?}", edges(&r.profile));
    assert_eq!(weight(&r.profile, "read(3)", "lseek(3)"), 499);
}

#[test]
fn openstat_edges_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let run = |n: u64| {
        let r = record_ptrace(&[&corpus("openstat"), &dir.path(), &n.to_string()]);
        assert_eq!(r.exit, ExitStatus::Code(0));
        r.profile
    };
    run(120); // creates the files: the runs below skip the setup phase
    let (a, b) = (run(40), run(120));
    assert_eq!(weight(&b, "access", "access"), 119, "{:#?}", edges(&b));
    // The dynamic loader also opens, stats and closes before main: the loop
    // adds exactly one to each of these edges per file.
    for (from, to, per_file_minus) in [("openat", "newfstatat", 0), ("newfstatat", "read(3)", 0), ("read(3)", "close(3)", 0), ("close(3)", "openat", 1)] {
        let (wa, wb) = (weight(&a, from, to), weight(&b, from, to));
        assert_eq!(wb - wa, 80, "{from} -> {to}: {wa} with 40 files, {wb} with 120");
        assert!(wb >= 120 - per_file_minus, "{from} -> {to}: {wb}");
    }
    assert_eq!(weight(&b, "read(3)", "close(3)"), 120, "the loader reads nothing it closes right after");
}

#[test]
fn threads_have_their_own_edges() {
    let dir = tempfile::tempdir().unwrap();
    let (threads, count) = (4u64, 3000u64);
    let r = record_ptrace(&[&corpus("threads"), &dir.path(), &threads.to_string(), &count.to_string()]);
    assert_eq!(r.exit, ExitStatus::Code(0));
    let p = &r.profile;
    assert!(p.meta.threads > threads, "{} threads seen", p.meta.threads);
    // The writer fds: every write node issued COUNT times.
    let writers: Vec<String> = p.nodes.iter().filter(|n| n.syscall == "write" && n.count == count).map(|n| p.label(n.id)).collect();
    assert_eq!(writers.len() as u64, threads, "{writers:?}");
    for a in &writers {
        assert_eq!(weight(p, a, a), count - 1, "{a} -> {a}");
        for b in writers.iter().filter(|b| *b != a) {
            assert_eq!(weight(p, a, b), 0, "an edge joins two threads: {a} -> {b}");
        }
    }
    assert_eq!(p.lost_events.total, 0);
}

#[test]
fn forkexec_follows_the_child_through_exec() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let r = record_ptrace(&[&corpus("forkexec"), &out, &"700"]);
    assert_eq!(r.exit, ExitStatus::Code(0));
    let p = &r.profile;
    assert_eq!(weight(p, "write(3)", "write(3)"), 699, "{:#?}", edges(p));
    assert_eq!(weight(p, "write(3)", "close(3)"), 1);
    assert_eq!(count(p, "wait4"), 1, "the parent's wait");
    assert_eq!(count(p, "execve"), 2, "the command's and the child's");
    assert_eq!(p.meta.processes, 2);
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 5600);
}

#[test]
fn vfork_children_are_followed() {
    // posix_spawn is clone3(CLONE_VM | CLONE_VFORK): a vfork event.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let script = "import os, sys\npid = os.posix_spawn(sys.argv[1], ['write8', sys.argv[2], '250'], {})\nsys.exit(os.waitpid(pid, 0)[1] >> 8)";
    let r = record_ptrace(&[&PYTHON, &"-c", &script, &corpus("write8"), &out]);
    assert_eq!(r.exit, ExitStatus::Code(0));
    assert_eq!(weight(&r.profile, "write(3)", "write(3)"), 249, "{:#?}", edges(&r.profile));
    assert_eq!(r.profile.meta.processes, 2);
}

#[test]
fn a_thread_that_is_not_the_leader_may_exec() {
    // The exec'ing thread takes the leader's id; the leader vanishes unreported.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let script = "import os, sys, threading\nt = threading.Thread(target=lambda: os.execv(sys.argv[1], ['write8', sys.argv[2], '300']))\nt.start()\nt.join()";
    let r = record_ptrace(&[&PYTHON, &"-c", &script, &corpus("write8"), &out]);
    assert_eq!(r.exit, ExitStatus::Code(0));
    assert_eq!(weight(&r.profile, "write(3)", "write(3)"), 299, "{:#?}", edges(&r.profile));
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 2400);
}

#[test]
fn killed_programs_keep_their_calls_and_their_signal() {
    for (how, sig) in [("segv", libc::SIGSEGV), ("kill", libc::SIGKILL), ("term", libc::SIGTERM)] {
        let dir = tempfile::tempdir().unwrap();
        let r = record_ptrace(&[&corpus("killed"), &dir.path().join("out"), &"400", &how]);
        assert_eq!(r.exit, ExitStatus::Signal(sig), "{how}");
        assert_eq!(r.profile.meta.exit.as_ref().and_then(|e| e.signal), Some(sig));
        let p = &r.profile;
        assert_eq!(weight(p, "write(3)", "write(3)"), 399, "{how}: {:#?}", edges(p));
        if how != "segv" {
            assert_eq!(weight(p, "write(3)", "getpid"), 1, "{how}");
            assert_eq!(weight(p, "getpid", "kill"), 1, "{how}");
        }
    }
}

#[test]
fn signals_reach_the_program_and_stopped_programs_continue() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("caught");
    // A handled signal (re-injected to the program), then a group-stop
    // ended by SIGCONT from a child.
    let script = format!(
        "trap 'echo caught > {m}' USR1; kill -USR1 $$; (sleep 0.2; kill -CONT $$) & kill -STOP $$; wait; exit 5",
        m = mark.display()
    );
    let r = record_ptrace(&[&"/bin/sh", &"-c", &script]);
    assert_eq!(r.exit, ExitStatus::Code(5));
    assert_eq!(std::fs::read_to_string(&mark).unwrap(), "caught\n");
    assert!(count(&r.profile, "rt_sigreturn") >= 1, "the handler ran and returned");
    assert!(r.profile.meta.processes >= 3, "the shell, its subshell and sleep");
}

#[test]
fn a_missing_command_is_reported_without_hanging() {
    for cmd in ["/nonexistent/command", "syscluster-no-such-command"] {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _shared = FORKING.read().unwrap_or_else(|e| e.into_inner());
            let _ = tx.send(record(&argv(&[&cmd]), &options()).map(|r| r.exit));
        });
        let res = rx.recv_timeout(std::time::Duration::from_secs(20)).unwrap_or_else(|_| panic!("{cmd}: record hangs"));
        match res {
            Err(RecordError::Launch(LaunchError::Exec(c, e))) => {
                assert_eq!(c, cmd);
                assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{cmd}");
            }
            other => panic!("{cmd}: {:?}", other.map_err(|e| e.to_string())),
        }
    }
}

/// Records `argv` in a forked copy of this test process whose stdin, stdout
/// and stderr are pipes; returns (stdout, stderr, exit code of the recorder).
fn record_in_child(args: &[&dyn AsRef<std::ffi::OsStr>], stdin: &[u8]) -> (Vec<u8>, Vec<u8>, i32) {
    use std::io::{Read, Write};
    use std::os::fd::FromRawFd;
    let _alone = FORKING.write().unwrap_or_else(|e| e.into_inner());
    let argv = argv(args);
    let opts = options();
    let pipe = || {
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        fds
    };
    let (inp, out, err) = (pipe(), pipe(), pipe());
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        unsafe {
            libc::dup2(inp[0], 0);
            libc::dup2(out[1], 1);
            libc::dup2(err[1], 2);
        }
        let code = match record(&argv, &opts) {
            Ok(r) => r.exit.shell_code(),
            Err(_) => 100,
        };
        unsafe { libc::_exit(code) };
    }
    unsafe {
        libc::close(inp[0]);
        libc::close(out[1]);
        libc::close(err[1]);
    }
    let mut to_child = unsafe { std::fs::File::from_raw_fd(inp[1]) };
    to_child.write_all(stdin).unwrap();
    drop(to_child);
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        unsafe { std::fs::File::from_raw_fd(err[0]) }.read_to_end(&mut v).unwrap();
        v
    });
    let mut stdout = Vec::new();
    unsafe { std::fs::File::from_raw_fd(out[0]) }.read_to_end(&mut stdout).unwrap();
    let stderr = err_reader.join().unwrap();
    let mut status = 0;
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status), "the recorder died: {status:#x}");
    (stdout, stderr, libc::WEXITSTATUS(status))
}

#[test]
fn stdin_stdout_stderr_and_the_exit_status_pass_through() {
    let (out, err, code) = record_in_child(&[&"/bin/sh", &"-c", &"read line; echo \"got $line\"; echo oops >&2; exit 3"], b"hello\n");
    assert_eq!(String::from_utf8_lossy(&out), "got hello\n");
    assert_eq!(String::from_utf8_lossy(&err), "oops\n");
    assert_eq!(code, 3);
    let (_, _, code) = record_in_child(&[&corpus("killed"), &"/dev/null", &"10", &"term"], b"");
    assert_eq!(code, 128 + libc::SIGTERM);
}

/// The profile of `strace -f` of `argv`, built from strace's log with the
/// same builder, so that node labels are computed alike. Minimal parsing:
/// call name, integer arguments (others as 0), result.
fn strace_profile(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Profile {
    use syscluster_analysis::{BuilderOptions, ProfileBuilder};
    let log = tempfile::NamedTempFile::new().unwrap();
    let st = std::process::Command::new("strace").arg("-f").arg("-o").arg(log.path()).args(argv(args)).status().expect("strace runs");
    assert!(st.success());
    let text = std::fs::read_to_string(log.path()).unwrap();
    let mut b = ProfileBuilder::new(BuilderOptions::default());
    let mut unfinished: BTreeMap<u32, String> = BTreeMap::new();
    for line in text.lines() {
        let (pid, rest) = line.split_once(' ').unwrap();
        let pid: u32 = pid.parse().unwrap();
        let rest = rest.trim_start();
        let call = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            unfinished.insert(pid, head.to_string());
            continue;
        } else if let Some(tail) = rest.strip_prefix("<... ") {
            let tail = &tail[tail.find("resumed>").unwrap() + "resumed>".len()..];
            format!("{}{}", unfinished.remove(&pid).unwrap(), tail)
        } else if rest.starts_with("+++") || rest.starts_with("---") {
            continue;
        } else {
            rest.to_string()
        };
        let Some(open) = call.find('(') else { continue };
        let Some(info) = syscluster_model::syscalls::by_name(&call[..open]) else { continue };
        let close = call.rfind(") = ").or_else(|| call.rfind(") ")).unwrap();
        let mut ev = syscluster_model::SyscallEvent::new(pid, pid, info.nr);
        for (i, a) in split_args(&call[open + 1..close]).iter().take(6).enumerate() {
            ev.args[i] = parse_int(a).unwrap_or(0);
        }
        let ret = call[close..].trim_start_matches(") = ").split_whitespace().next().unwrap_or("?");
        ev.ret = if ret == "?" { None } else { parse_int(ret).map(|v| v as i64) };
        b.event(&ev);
    }
    b.finish(Default::default(), &mut |_| Default::default())
}

/// Top-level arguments of an strace call line (commas inside strings,
/// arrays, structs and calls do not split).
fn split_args(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut quoted, mut escaped, mut start) = (Vec::new(), 0i32, false, false, 0);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '(' | '[' | '{' if !quoted => depth += 1,
            ')' | ']' | '}' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out
}

/// strace prints `int` arguments in decimal; the register holds their 32
/// bits (so `-1` is 0xffffffff, as the recorder reads it).
fn parse_int(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(n) = s.strip_prefix('-') {
        n.parse::<i64>().ok().map(|v| (-v) as i32 as u32 as u64)
    } else {
        s.parse().ok()
    }
}

fn heavy_edges(p: &Profile) -> BTreeMap<(String, String), u64> {
    edges(p).into_iter().filter(|&(_, w)| w >= 2).collect()
}

#[test]
fn graphs_agree_with_strace() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::write(&input, vec![1u8; 37 * 4096 + 100]).unwrap();
    let copy: [&dyn AsRef<std::ffi::OsStr>; 3] = [&corpus("copy"), &input, &output];
    let write8: [&dyn AsRef<std::ffi::OsStr>; 3] = [&corpus("write8"), &output, &"321"];
    for args in [&copy[..], &write8[..]] {
        let ours = heavy_edges(&record_ptrace(args).profile);
        let theirs = heavy_edges(&strace_profile(args));
        assert!(ours.len() >= 2, "{ours:?}");
        assert_eq!(ours, theirs, "ptrace vs strace -f");
    }
}
