//! Real programs, plain and under `run`: the same output files, byte for
//! byte, and the same exit status.  Needs gcc and make (the corpus and the
//! runtime's test programs are built on first use); the ENOSPC test needs
//! root to mount a small tmpfs and says so when it cannot.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::Once;
use syscluster_supervisor::{check_program, find_library, run, Interposable, RunOptions};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn build() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let r = root();
        for (dir, target) in [
            ("tests/corpus", vec![]),
            ("preload", vec!["build/test/ackwriter", "build/test/tailer", "build/test/semantics", "build/test/enospc"]),
        ] {
            let ok = Command::new("make").arg("-s").arg("-C").arg(r.join(dir)).args(target).status().unwrap().success();
            assert!(ok, "make -C {dir} failed");
        }
    });
}

fn corpus(name: &str) -> String {
    build();
    root().join("tests/corpus/bin").join(name).display().to_string()
}

fn testbin(name: &str) -> String {
    build();
    root().join("preload/build/test").join(name).display().to_string()
}

fn opts() -> RunOptions {
    RunOptions { forward_signals: false, ..RunOptions::default() }
}

fn args(a: &[&str]) -> Vec<OsString> {
    a.iter().map(OsString::from).collect()
}

fn plain(a: &[&str]) -> ExitStatus {
    Command::new(a[0]).args(&a[1..]).status().unwrap()
}

fn under(a: &[&str]) -> ExitStatus {
    run(&args(a), &opts()).unwrap()
}

/// Runs `make(dir)` plain in one directory and under the runtime in
/// another, and compares every file they leave and the exit statuses.
fn same(make: impl Fn(&str) -> Vec<String>) {
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (t.path().join("plain"), t.path().join("run"));
    fs::create_dir(&a).unwrap();
    fs::create_dir(&b).unwrap();
    let pa = make(a.to_str().unwrap());
    let pb = make(b.to_str().unwrap());
    let sa = plain(&pa.iter().map(String::as_str).collect::<Vec<_>>());
    let sb = under(&pb.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(sa.into_raw(), sb.into_raw(), "exit status differs for {pa:?}");
    let mut names: Vec<_> = fs::read_dir(&a).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert!(!names.is_empty(), "{pa:?} wrote nothing");
    for n in names {
        let (x, y) = (fs::read(a.join(&n)).unwrap(), fs::read(b.join(&n)).unwrap());
        assert!(x == y, "{n:?} differs: {} bytes plain, {} under the runtime", x.len(), y.len());
    }
}

/// The python3 interpreter itself (not a launcher such as pyenv's shim),
/// found at run time: no test names a path of one distribution.
fn python3() -> String {
    let o = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs (scripts/install-deps.sh installs it)");
    let exe = String::from_utf8(o.stdout).unwrap().trim().to_string();
    assert!(o.status.success() && Path::new(&exe).is_file(), "python3 names no interpreter: {exe:?}");
    exe
}

fn input(dir: &str, len: usize) -> String {
    let p = format!("{dir}/../in");
    if !Path::new(&p).exists() {
        let data: Vec<u8> = (0..len).map(|i| (i * 7919 % 251) as u8).collect();
        fs::write(&p, data).unwrap();
    }
    p
}

#[test]
fn dd_bs_8() {
    same(|d| {
        let i = input(d, 400_000);
        vec!["dd".into(), format!("if={i}"), format!("of={d}/out"), "bs=8".into(), "status=none".into()]
    });
}

#[test]
fn dd_bs_512() {
    same(|d| {
        let i = input(d, 2_000_000);
        vec!["dd".into(), format!("if={i}"), format!("of={d}/out"), "bs=512".into(), "status=none".into()]
    });
}

#[test]
fn python_small_writes() {
    same(|d| {
        vec![
            python3(),
            "-c".into(),
            format!("import os\nfd = os.open('{d}/out', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\nfor i in range(200000): os.write(fd, b'%d,' % i)\n"),
        ]
    });
}

#[test]
fn python_exit_without_cleanup() {
    // os._exit skips Python's and libc's cleanup: the runtime's _exit wrapper must flush.
    same(|d| {
        vec![
            python3(),
            "-c".into(),
            format!("import os\nfd = os.open('{d}/out', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\nfor i in range(50000): os.write(fd, b'%d;' % i)\nos._exit(7)\n"),
        ]
    });
}

#[test]
fn corpus_write8() {
    same(|d| vec![corpus("write8"), format!("{d}/out"), "300000".into()]);
}

#[test]
fn corpus_threads() {
    same(|d| vec![corpus("threads"), d.into(), "4".into(), "100000".into()]);
}

#[test]
fn corpus_fork_exec() {
    same(|d| vec![corpus("forkexec"), format!("{d}/out"), "100000".into()]);
}

#[test]
fn corpus_killed_segv() {
    same(|d| vec![corpus("killed"), format!("{d}/out"), "100000".into(), "segv".into()]);
}

#[test]
fn corpus_killed_sigkill() {
    same(|d| vec![corpus("killed"), format!("{d}/out"), "100000".into(), "kill".into()]);
}

#[test]
fn corpus_killed_sigterm() {
    same(|d| vec![corpus("killed"), format!("{d}/out"), "100000".into(), "term".into()]);
}

#[test]
fn every_way_to_end_writes_everything() {
    for mode in ["return", "exit", "_exit", "quick_exit", "pthread", "abort", "exec"] {
        same(|d| vec![testbin("semantics"), d.into(), "exit".into(), mode.into()]);
    }
}

/// Killed from outside mid-run: every record the program saw acknowledged
/// is on disk when `run` returns (no waiting, no retry: `run` waits for the
/// guardian).
#[test]
fn killed_from_outside_loses_nothing_acknowledged() {
    let ack = testbin("ackwriter");
    for sig in ["KILL", "TERM", "SEGV", "ABRT"] {
        for mode in ["", "append"] {
            for round in 0..3 {
                let t = tempfile::tempdir().unwrap();
                let (out, a) = (t.path().join("out"), t.path().join("ack"));
                let script = format!(
                    "{ack} {} {} {mode} & p=$!; sleep 0.{}; kill -{sig} $p; wait $p",
                    out.display(),
                    a.display(),
                    round * 3 + 1
                );
                let st = under(&["sh", "-c", &script]);
                assert!(st.code().is_some(), "sh itself died: {st:?}");
                let check = Command::new(&ack).arg("--check").arg(&out).arg(&a).output().unwrap();
                assert!(check.status.success(), "SIG{sig} {mode}: {}", String::from_utf8_lossy(&check.stderr));
            }
        }
    }
}

#[test]
fn two_processes_appending_keep_each_record_whole() {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("log");
    let code = format!(
        "import os, sys\nfd = os.open('{}', os.O_WRONLY | os.O_CREAT | os.O_APPEND)\nfor i in range(30000): os.write(fd, b'%s%06d\\n' % (sys.argv[1].encode(), i))\n",
        f.display()
    );
    let script = "\"$1\" -c \"$0\" A & \"$1\" -c \"$0\" B & wait";
    let st = run(&args(&["sh", "-c", script, &code, &python3()]), &opts()).unwrap();
    assert!(st.success());
    let data = fs::read_to_string(&f).unwrap();
    let (mut a, mut b) = (0, 0);
    for line in data.lines() {
        let (who, n) = line.split_at(1);
        let n: usize = n.parse().unwrap_or_else(|_| panic!("torn record {line:?}"));
        match who {
            "A" => {
                assert_eq!(n, a, "A out of order");
                a += 1
            }
            "B" => {
                assert_eq!(n, b, "B out of order");
                b += 1
            }
            _ => panic!("torn record {line:?}"),
        }
    }
    assert_eq!((a, b), (30000, 30000));
}

#[test]
fn a_reader_polling_the_file_sees_it_grow() {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("grows");
    // Each record must reach the reader before the next is written 300 ms
    // later; the time bound is 5 ms.
    let st = under(&[&testbin("tailer"), f.to_str().unwrap(), "8", "300"]);
    assert!(st.success(), "the reader missed records: {st:?}");
    // The control: with a 3 s bound it cannot.
    let slow = RunOptions { flush_interval_ms: 3000, ..opts() };
    let st = run(&args(&[&testbin("tailer"), f.to_str().unwrap(), "3", "300"]), &slow).unwrap();
    assert!(!st.success(), "a 3 s time bound still met 300 ms: the check cannot fail");
}

#[test]
fn enospc_on_a_small_tmpfs() {
    let t = tempfile::tempdir().unwrap();
    let mnt = t.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount").args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"]).arg(&mnt).status();
    if !ok.as_ref().is_ok_and(|s| s.success()) {
        // As root the test must run: a failed mount is a failure.
        assert!(!syscluster_testutil::is_root(), "mounting a tmpfs failed as root: {ok:?}");
        syscluster_testutil::need("tmpfs", "enospc_on_a_small_tmpfs: mounting a tmpfs needs root");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Unmount(mnt.clone());
    let out = mnt.join("out");
    let dd = |under_rt: bool| {
        let _ = fs::remove_file(&out);
        let a = ["dd", "if=/dev/zero", &format!("of={}", out.display()), "bs=8", "count=100000", "status=none"];
        let st = if under_rt { under(&a) } else { plain(&a) };
        (st.into_raw(), fs::read(&out).unwrap())
    };
    let (s1, f1) = dd(false);
    let (s2, f2) = dd(true);
    assert_eq!(s1, s2, "dd's exit status differs");
    assert_eq!(f1.len(), 256 * 1024, "plain dd did not fill the tmpfs");
    assert!(f1 == f2, "the full tmpfs holds different bytes");
    // The documented rule, exactly: the next write fails with ENOSPC.
    let _ = fs::remove_file(&out);
    let st = under(&[&testbin("enospc"), out.to_str().unwrap(), "stop", "100000"]);
    assert_eq!(st.code(), Some(1));
}

#[test]
fn cp_of_a_large_file() {
    same(|d| {
        let i = input(d, 8 << 20);
        vec!["cp".into(), i, format!("{d}/copy")]
    });
}

#[test]
fn static_and_setuid_programs_are_reported_and_run_unchanged() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("s.c");
    fs::write(&src, "#include <unistd.h>\nint main(void){for(int i=0;i<1000;i++) write(1,\"12345678\",8);return 3;}\n")
        .unwrap();
    let bin = t.path().join("static");
    let built = Command::new("gcc").arg("-static").arg("-o").arg(&bin).arg(&src).status().unwrap().success();
    assert!(built, "gcc -static failed (libc6-dev provides libc.a)");
    match check_program(&bin) {
        Interposable::No(why) => assert!(why.contains("statically linked"), "{why}"),
        Interposable::Yes => panic!("a static binary passed as interposable"),
    }
    let st = under(&["sh", "-c", &format!("{} > {}/out", bin.display(), t.path().display())]);
    assert_eq!(st.code(), Some(3));
    assert_eq!(fs::read(t.path().join("out")).unwrap().len(), 8000);

    // The same program dynamically linked: interposable, but not set-user-ID.
    let dynamic = t.path().join("dynamic");
    let built = Command::new("gcc").arg("-o").arg(&dynamic).arg(&src).status().unwrap().success();
    assert!(built, "gcc failed");
    assert_eq!(check_program(&dynamic), Interposable::Yes);
    let suid = t.path().join("suid");
    fs::copy(&dynamic, &suid).unwrap();
    fs::set_permissions(&suid, fs::Permissions::from_mode(0o4755)).unwrap();
    assert!(matches!(check_program(&suid), Interposable::No(w) if w.contains("set-user-ID")));
    // A script is judged by its interpreter.
    let script = t.path().join("script");
    fs::write(&script, format!("#!{}\n", bin.display())).unwrap();
    assert!(matches!(check_program(&script), Interposable::No(_)));
    // Through a chain of scripts as deep as the kernel follows; preload/test/exec-chain.test.sh
    // checks that the library's exec wrappers reach the same verdict.
    let mut prev = bin.clone();
    for depth in 1..=syscluster_supervisor::MAX_SCRIPT_DEPTH {
        let s = t.path().join(format!("chain{depth}"));
        fs::write(&s, format!("#!{}\n", prev.display())).unwrap();
        fs::set_permissions(&s, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(
            matches!(check_program(&s), Interposable::No(ref w) if w.contains("statically linked")),
            "a chain of {depth} scripts to a static program"
        );
        prev = s;
    }
}

#[test]
fn bad_input_is_a_one_line_error() {
    let e = run(&args(&["/no/such/program"]), &opts()).unwrap_err();
    assert_eq!(e.exit_code(), 127);
    assert!(e.to_string().contains("/no/such/program"));
    assert!(run(&[], &opts()).is_err());
    let bad = RunOptions { flush_interval_ms: 0, ..opts() };
    assert!(run(&args(&["true"]), &bad).unwrap_err().to_string().contains("flush interval"));
    assert!(find_library(Some(Path::new("/nonexistent.so"))).unwrap_err().to_string().contains("/nonexistent.so"));
    let lib = find_library(None).unwrap();
    assert!(lib.ends_with("libsyscluster-preload.so") && lib.is_absolute());
}
