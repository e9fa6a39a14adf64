//! The ptrace backend on the corpus programs: exact edge weights from their
//! header comments, threads, children, signals, exit status, pass-through of
//! stdin/stdout/stderr, a missing command, and agreement with strace.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Once, RwLock};
use syscluster_model::Profile;
use syscluster_record::{record, Backend, ExitStatus, LaunchError, RecordError, RecordOptions, Recording};

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
