//! The ptrace backend on the corpus programs: exact edge weights from their
//! header comments, threads, children, signals, exit status, pass-through of
//! stdin/stdout/stderr, a missing command, and agreement with strace.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Once, RwLock};
use syscluster_model::profile::NodeKeyMode;
use syscluster_model::Profile;
use syscluster_record::{record, Backend, ExitStatus, LaunchError, RecordError, RecordOptions, Recording};

/// The python3 interpreter itself (not a launcher such as pyenv's shim),
/// found at run time: no test names a path of one distribution.
fn python3() -> String {
    static EXE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    EXE.get_or_init(|| {
        let o = std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 runs (scripts/install-deps.sh installs it)");
        let exe = String::from_utf8(o.stdout).unwrap().trim().to_string();
        assert!(o.status.success() && std::path::Path::new(&exe).is_file(), "python3 names no interpreter: {exe:?}");
        exe
    })
    .clone()
}

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

/// Nodes keyed by fd number (the descriptor key is tested on a server in
/// tests/integration/servers.rs).
fn options() -> RecordOptions {
    let mut o = RecordOptions { backend: Some(Backend::Ptrace), ..RecordOptions::default() };
    o.builder.node_key = NodeKeyMode::Fd;
    o
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
    assert!(
        p.io_patterns.iter().any(|io| io.path == input_path),
        "paths are read from the tracee: {:?}",
        p.io_patterns
    );
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
    run(120); // creates the files: the run below skips the setup phase
    let p = run(120);
    assert_eq!(weight(&p, "access", "access"), 119, "{:#?}", edges(&p));
    assert_eq!(weight(&p, "newfstatat(3)", "read(3)"), 120);
    assert_eq!(weight(&p, "read(3)", "close(3)"), 120);
    assert_eq!(weight(&p, "openat", "newfstatat(3)"), 121, "the loop's and the dynamic loader's");
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
    let writers: Vec<String> =
        p.nodes.iter().filter(|n| n.syscall == "write" && n.count == count).map(|n| p.label(n.id)).collect();
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
    let script =
        "import os, sys\npid = os.posix_spawn(sys.argv[1], ['write8', sys.argv[2], '250'], {})\nsys.exit(os.waitpid(pid, 0)[1] >> 8)";
    let r = record_ptrace(&[&python3(), &"-c", &script, &corpus("write8"), &out]);
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
    let r = record_ptrace(&[&python3(), &"-c", &script, &corpus("write8"), &out]);
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
    let r = record_ptrace(&[&"sh", &"-c", &script]);
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
    record_in_child_with(args, stdin, |_| {})
}

/// As [`record_in_child`]; `setup` runs in the child first, and `report`
/// after recording (it may write to the child's stderr, fd 2).
fn record_in_child_with(
    args: &[&dyn AsRef<std::ffi::OsStr>],
    stdin: &[u8],
    report: fn(&Recording),
) -> (Vec<u8>, Vec<u8>, i32) {
    record_in_child_full(args, stdin, || {}, report)
}

fn record_in_child_full(
    args: &[&dyn AsRef<std::ffi::OsStr>],
    stdin: &[u8],
    setup: fn(),
    report: fn(&Recording),
) -> (Vec<u8>, Vec<u8>, i32) {
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
        setup();
        let code = match record(&argv, &opts) {
            Ok(r) => {
                report(&r);
                r.exit.shell_code()
            }
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
    let (out, err, code) =
        record_in_child(&[&"sh", &"-c", &"read line; echo \"got $line\"; echo oops >&2; exit 3"], b"hello\n");
    assert_eq!(String::from_utf8_lossy(&out), "got hello\n");
    assert_eq!(String::from_utf8_lossy(&err), "oops\n");
    assert_eq!(code, 3);
    let (_, _, code) = record_in_child(&[&corpus("killed"), &"/dev/null", &"10", &"term"], b"");
    assert_eq!(code, 128 + libc::SIGTERM);
}

/// The profile of `strace -f -ttt -T` of `argv`, through the strace importer.
fn strace_profile(args: &[&dyn AsRef<std::ffi::OsStr>], key: NodeKeyMode) -> Profile {
    let log = tempfile::NamedTempFile::new().unwrap();
    let st = std::process::Command::new("strace")
        .args(["-f", "-ttt", "-T", "-o"])
        .arg(log.path())
        .args(argv(args))
        .status()
        .expect("strace runs");
    assert!(st.success());
    let opts = syscluster_record::strace::ImportOptions::default();
    let builder = syscluster_analysis::BuilderOptions { node_key: key, ..Default::default() };
    syscluster_record::strace::import_file(log.path(), &opts, builder).unwrap().0
}

fn counts(p: &Profile) -> BTreeMap<String, u64> {
    p.nodes.iter().map(|n| (p.label(n.id), n.count)).collect()
}

#[test]
fn graphs_agree_with_strace() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::write(&input, vec![1u8; 37 * 4096 + 100]).unwrap();
    let copy: [&dyn AsRef<std::ffi::OsStr>; 3] = [&corpus("copy"), &input, &output];
    let write8: [&dyn AsRef<std::ffi::OsStr>; 3] = [&corpus("write8"), &output, &"321"];
    for args in [&copy[..], &write8[..]] {
        // Every edge, not only those of weight 2 or more: both start at the
        // command's execve and key nodes alike (mmap(-1), openat, read(3);
        // by descriptor: mmap, read(file …/in)).
        for key in [NodeKeyMode::Fd, NodeKeyMode::Descriptor] {
            let _shared = FORKING.read().unwrap_or_else(|e| e.into_inner());
            let mut o = options();
            o.builder.node_key = key;
            let ours = record(&argv(args), &o).unwrap_or_else(|e| panic!("recording failed: {e}")).profile;
            drop(_shared);
            let theirs = strace_profile(args, key);
            assert!(edges(&ours).len() >= 10, "{:?}", edges(&ours));
            assert_eq!(edges(&ours), edges(&theirs), "ptrace vs strace -f, {key:?}");
            assert_eq!(counts(&ours), counts(&theirs), "ptrace vs strace -f, {key:?}");
        }
    }
}

/// The 1-based line of the only line of corpus source `file` holding `text`.
fn line_of(file: &str, text: &str) -> u32 {
    let src = std::fs::read_to_string(corpus(file).parent().unwrap().join("..").join(file)).unwrap();
    let hits: Vec<usize> = src.lines().enumerate().filter(|(_, l)| l.contains(text)).map(|(i, _)| i + 1).collect();
    assert_eq!(hits.len(), 1, "{text:?} in {file}: {hits:?}");
    hits[0] as u32
}

#[test]
fn code_locations_are_source_lines() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in"), dir.path().join("out"));
    let r = record_ptrace(&[&corpus("write8"), &output, &"200"]);
    let p = &r.profile;
    assert!(p.meta.collected.callsites);
    let write = p.nodes.iter().find(|n| p.label(n.id) == "write(3)").unwrap();
    assert_eq!(write.callsites.len(), 1, "{:?}", write.callsites);
    let site = &write.callsites[0];
    assert_eq!(site.count, 200);
    assert_eq!(site.location.function.as_deref(), Some("main"));
    assert!(site.location.file.as_deref().unwrap_or("").ends_with("write8.c"), "{:?}", site.location);
    assert_eq!(site.location.line, Some(line_of("write8.c", "write(fd, \"01234567\", 8)")));
    assert!(!p.lost_events.by_cause.contains_key("callsite_unknown"), "{:?}", p.lost_events);

    std::fs::write(&input, vec![3u8; 5 * 4096]).unwrap();
    let r = record_ptrace(&[&corpus("copy"), &input, &output]);
    let p = &r.profile;
    for (label, text) in [("read(3)", "n = read(inp"), ("write(4)", "write(out")] {
        let node = p.nodes.iter().find(|n| p.label(n.id) == label).unwrap();
        let program: Vec<_> = node
            .callsites
            .iter()
            .filter(|c| c.location.file.as_deref().is_some_and(|f| f.ends_with("copy.c")))
            .collect();
        assert_eq!(program.len(), 1, "{label}: {:?}", node.callsites);
        assert_eq!(program[0].location.line, Some(line_of("copy.c", text)), "{label}");
    }

    // execl's frame keeps its CFA in rbp (a variable-length argv array):
    // the walk from the child's execve needs rbp.
    let r = record_ptrace(&[&corpus("forkexec"), &output, &"3"]);
    let p = &r.profile;
    let execve = p.nodes.iter().find(|n| n.syscall == "execve").unwrap();
    assert_eq!(execve.count, 2);
    // The launcher's exec is the launch, not code of the program.
    assert_eq!(execve.callsites.len(), 2, "{:?}", execve.callsites);
    assert!(
        execve.callsites.iter().any(|c| c.location == syscluster_record::launch_location() && c.count == 1),
        "{:?}",
        execve.callsites
    );
    let loc = &execve.callsites.iter().find(|c| c.location != syscluster_record::launch_location()).unwrap().location;
    assert!(loc.file.as_deref().is_some_and(|f| f.ends_with("forkexec.c")), "{loc:?}");
    assert_eq!(loc.line, Some(line_of("forkexec.c", "execl(prog")));
    assert!(!p.lost_events.by_cause.contains_key("callsite_unknown"), "{:?}", p.lost_events);
}

#[test]
fn calls_beyond_the_table_are_recorded() {
    // syscall(1000) has no entry in the table: ENOSYS, and a node of its own.
    let r = record_ptrace(&[&python3(), &"-c", &"import ctypes, sys\nlibc = ctypes.CDLL(None, use_errno=True)\nsys.exit(0 if libc.syscall(1000) == -1 and ctypes.get_errno() == 38 else 1)"]);
    assert_eq!(r.exit, ExitStatus::Code(0));
    let node = r.profile.nodes.iter().find(|n| n.nr == 1000).expect("a node for call 1000");
    assert_eq!((node.count, node.errors), (1, 1));
}

/// Makes every later seccomp() call of this process and its children fail
/// with EPERM (as a container's policy might), allowing everything else.
fn forbid_seccomp() {
    use libc::{sock_filter, BPF_ABS, BPF_JEQ, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let f = |code: u32, jt: u8, jf: u8, k: u32| sock_filter { code: code as u16, jt, jf, k };
    let prog = [
        f(BPF_LD | BPF_W | BPF_ABS, 0, 0, 0), // seccomp_data.nr
        f(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, libc::SYS_seccomp as u32),
        f(BPF_RET | BPF_K, 0, 0, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        f(BPF_RET | BPF_K, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    let fprog = libc::sock_fprog { len: prog.len() as u16, filter: prog.as_ptr() as *mut sock_filter };
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        assert_eq!(libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &fprog), 0);
    }
}

#[test]
fn without_the_filter_every_call_is_still_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (_, err, code) = record_in_child_full(&[&corpus("write8"), &out, &"300"], b"", forbid_seccomp, |r| {
        use std::io::Write;
        // To fd 2 itself: the test harness captures eprintln!.
        let p = &r.profile;
        let mut e = std::io::stderr();
        let _ = writeln!(
            e,
            "write->write {} exit_group {} execve {}",
            weight(p, "write(3)", "write(3)"),
            count(p, "exit_group"),
            count(p, "execve")
        );
        for n in &r.notes {
            let _ = writeln!(e, "note: {n}");
        }
    });
    let err = String::from_utf8_lossy(&err);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("write->write 299 exit_group 1 execve 1"), "{err}");
    assert!(err.contains("note: the seccomp filter could not be installed"), "{err}");
}

/// Faults injected into the K-th call (`syscluster verify --inject`): the
/// call fails as the kernel would make it fail, or does less, and the
/// recording says how many calls of the kind it saw.
#[test]
fn injected_faults_reach_the_program() {
    use syscluster_record::ptrace::fault::Fault;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let with = |faults: &[&str]| {
        let mut o = options();
        o.faults = faults.iter().map(|f| Fault::parse(f).unwrap()).collect();
        let _shared = FORKING.read().unwrap_or_else(|e| e.into_inner());
        record(&argv(&[&corpus("write8"), &out, &"100"]), &o).unwrap_or_else(|e| panic!("recording failed: {e}"))
    };
    // The 10th write fails: write8 stops after 9, and says so on stderr (an 11th write).
    let r = with(&["write:ENOSPC@10"]);
    assert_eq!(r.exit, ExitStatus::Code(1));
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 72);
    assert_eq!(r.faults_seen, vec![11]);
    let w = r.profile.nodes.iter().find(|n| r.profile.label(n.id) == "write(3)").unwrap();
    assert_eq!((w.count, w.errors), (10, 1), "the failed write is recorded with its error");
    // A short 5th write: 4 bytes of it reach the file.
    let r = with(&["write:short@5"]);
    assert_eq!(r.exit, ExitStatus::Code(1));
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 36);
    // The program's open (the last openat: the loader's come first) fails:
    // nothing is written; a fault past the last call is not injected.
    let opens: u64 = with(&[]).profile.nodes.iter().filter(|n| n.syscall == "openat").map(|n| n.count).sum();
    std::fs::remove_file(&out).unwrap();
    let r = with(&[&format!("openat:EACCES@{opens}"), "write:EIO@1000"]);
    assert_eq!(r.exit, ExitStatus::Code(1));
    assert!(!out.exists(), "the open was not made");
    assert_eq!(r.faults_seen[1], 1, "only perror's write was made");
    // Faults need ptrace.
    let mut o = options();
    o.backend = Some(Backend::Bpf);
    o.faults = vec![Fault::parse("write:EIO@1").unwrap()];
    assert!(matches!(record(&argv(&[&corpus("write8"), &out, &"1"]), &o), Err(RecordError::Backend(_))));
}
