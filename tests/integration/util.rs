//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use syscluster_model::Profile;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A corpus program, built on first use.
pub fn corpus(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let st = Command::new("make").args(["-s", "-C"]).arg(root().join("tests/corpus")).status().expect("run make");
        assert!(st.success(), "building tests/corpus failed");
    });
    let p = root().join("tests/corpus/bin").join(name);
    assert!(p.exists(), "no corpus program {name}");
    p
}

/// `syscluster`, the command users type: the launcher (preload/launcher)
/// that build.rs puts beside `syscluster-cli`.
pub fn syscluster_path() -> std::path::PathBuf {
    let p = Path::new(env!("CARGO_BIN_EXE_syscluster-cli")).with_file_name("syscluster");
    assert!(p.exists(), "build.rs puts the syscluster launcher beside syscluster-cli");
    p
}

/// The `syscluster` binary under test. Cargo's LD_LIBRARY_PATH is removed:
/// the dynamic loader would search it and change the calls programs make.
///
/// Its cache (`XDG_CACHE_HOME`: the calibrations) is the test run's own,
/// empty at the start: no test depends on what `syscluster calibrate` left
/// on this machine (a test that needs a calibration makes one, in a cache
/// of its own).
pub fn syscluster() -> Command {
    let mut c = Command::new(syscluster_path());
    c.env_remove("LD_LIBRARY_PATH").env("XDG_CACHE_HOME", test_cache());
    c
}

/// The cache directory of this test run (removed when it ends, with the
/// temporary directory it is in).
pub fn test_cache() -> &'static Path {
    static CACHE: OnceLock<tempfile::TempDir> = OnceLock::new();
    CACHE.get_or_init(|| tempfile::Builder::new().prefix("sc-test-cache-").tempdir().expect("temp dir")).path()
}

pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// Runs `cmd` and returns its output, failing the test if it cannot start.
/// Runs `cmd` to its end.  A `make` of the tests' own never sees the
/// `make test` around them (its jobserver descriptors, its "Entering
/// directory" lines): the variables make passes down are removed.
pub fn run(cmd: &mut Command) -> Output {
    for v in ["MAKEFLAGS", "MAKELEVEL", "MFLAGS"] {
        cmd.env_remove(v);
    }
    cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `argv` under `strace -f -ttt -T` and imports the log, nodes keyed
/// by fd number (the tests that use it name nodes `read(3)`).
pub fn strace_profile(dir: &Path, argv: &[&str]) -> Profile {
    let log = dir.join("strace.log");
    let o =
        run(Command::new("strace").env_remove("LD_LIBRARY_PATH").args(["-f", "-ttt", "-T", "-o"]).arg(&log).args(argv));
    assert!(log.exists(), "strace wrote no log: {}", stderr(&o));
    let json = dir.join("strace.json");
    let o = run(syscluster().args(["import-strace", "-q", "--node-key", "fd"]).arg(&log).arg("-o").arg(&json));
    assert!(o.status.success(), "import-strace failed: {}", stderr(&o));
    Profile::load(&json).expect("load imported profile")
}

/// Edge weights by node labels: `g.edge("read(3)", "write(4)")`.
pub struct Graph<'a>(pub &'a Profile);

impl Graph<'_> {
    fn id(&self, label: &str) -> Option<u32> {
        self.0.nodes.iter().find(|n| self.0.label(n.id) == label).map(|n| n.id)
    }

    /// The weight of edge `from → to`, 0 if absent.
    pub fn edge(&self, from: &str, to: &str) -> u64 {
        let (Some(a), Some(b)) = (self.id(from), self.id(to)) else { return 0 };
        self.0.edges.iter().find(|e| e.from == a && e.to == b).map_or(0, |e| e.weight)
    }

    /// Calls of the node labelled `label`, 0 if absent.
    pub fn count(&self, label: &str) -> u64 {
        self.id(label).map_or(0, |id| self.0.node(id).count)
    }

    /// All edges of weight ≥ `min`, by labels, sorted.
    pub fn heavy_edges(&self, min: u64) -> Vec<(String, String, u64)> {
        let mut v: Vec<_> = self
            .0
            .edges
            .iter()
            .filter(|e| e.weight >= min)
            .map(|e| (self.0.label(e.from), self.0.label(e.to), e.weight))
            .collect();
        v.sort();
        v
    }
}

/// A file of `len` pseudo-random bytes.
pub fn random_file(path: &Path, len: usize) {
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let data: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(path, data).expect("write input file");
}

// The fail-closed rule (docs/TESTING.md), shared with every crate's tests.
pub use syscluster_testutil::{have, is_root, need, program};

/// A tmpfs of `size` (mount's syntax) mounted at `dir/mnt` and unmounted
/// when dropped; None, after saying why, where mounting needs root we lack.
pub struct SmallTmpfs(pub PathBuf);

impl SmallTmpfs {
    pub fn mount(dir: &Path, size: &str, test: &str) -> Option<SmallTmpfs> {
        let mnt = dir.join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let o = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(&mnt).output();
        match o {
            Ok(o) if o.status.success() => Some(SmallTmpfs(mnt)),
            o => {
                assert!(!is_root(), "{test}: mounting a tmpfs failed as root: {o:?}");
                need("tmpfs", &format!("{test}: mounting a tmpfs needs root"));
                None
            }
        }
    }
}

impl Drop for SmallTmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// The recorders to try, as `record` flags: ptrace always; BPF in both
/// modes where the tests run as root (CI), where it must work.
pub fn record_backends() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut v = vec![("ptrace", vec!["--backend", "ptrace"])];
    if have("bpf", is_root(), "BPF needs root; only ptrace tried") {
        v.push(("bpf-events", vec!["--backend", "bpf", "--mode", "events"]));
        v.push(("bpf-aggregate", vec!["--backend", "bpf", "--mode", "aggregate"]));
    }
    v
}
