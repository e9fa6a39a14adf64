//! The BPF backend on the real kernel, recording the programs of
//! `tests/corpus/` (built here by `make -C tests/corpus` when the test
//! starts) and checking the exact edge weights their header comments state,
//! in both modes.
//!
//! Tests that need BPF skip, with a message, where this process may not load
//! it (no CAP_BPF + CAP_PERFMON, nor CAP_SYS_ADMIN); where it may, a failure
//! to load is a failure.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::sync::Once;
use syscluster_model::profile::{NodeKeyMode, Profile};
use syscluster_record::{record, Backend, ExitStatus, Mode, RecordError, RecordOptions, Recording};

const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// The capability sets of the calling thread (capget(2), version 3).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}
const CAP_V3: u32 = 0x2008_0522;

fn caps() -> [CapData; 2] {
    let mut h = CapHeader { version: CAP_V3, pid: 0 };
    let mut d = [CapData::default(); 2];
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut h, d.as_mut_ptr()) };
    assert_eq!(r, 0, "capget: {}", std::io::Error::last_os_error());
    d
}

fn has_cap(d: &[CapData; 2], cap: u32) -> bool {
    d[(cap / 32) as usize].effective & (1 << (cap % 32)) != 0
}

/// Whether this thread may load tracing BPF programs.
fn bpf_permitted() -> bool {
    let d = caps();
    has_cap(&d, CAP_SYS_ADMIN) || (has_cap(&d, CAP_BPF) && has_cap(&d, CAP_PERFMON))
}

/// Drops `list` from the calling thread's effective and permitted sets
/// (capabilities belong to threads: the rest of the process keeps them).
fn drop_caps(list: &[u32]) {
    let mut d = caps();
    for &c in list {
        let (i, bit) = ((c / 32) as usize, 1u32 << (c % 32));
        d[i].effective &= !bit;
        d[i].permitted &= !bit;
        d[i].inheritable &= !bit;
    }
    let mut h = CapHeader { version: CAP_V3, pid: 0 };
    let r = unsafe { libc::syscall(libc::SYS_capset, &mut h, d.as_ptr()) };
    assert_eq!(r, 0, "capset: {}", std::io::Error::last_os_error());
}

/// Skips the calling test (returning from it) where BPF may not be loaded,
/// or fails where `bpf` is required (docs/TESTING.md).
macro_rules! require_bpf {
    () => {
        if !bpf_permitted() {
            // As root BPF must load: a failure there fails the test.
            assert!(!syscluster_testutil::is_root(), "root may not load BPF programs here");
            syscluster_testutil::need(
                "bpf",
                "this process may not load BPF programs (needs CAP_BPF and CAP_PERFMON, or root)",
            );
            return;
        }
    };
}

fn corpus(prog: &str) -> OsString {
    static BUILD: Once = Once::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    BUILD.call_once(|| {
        let ok = std::process::Command::new("make").arg("-s").arg("-C").arg(&dir).status().map(|s| s.success());
        assert!(matches!(ok, Ok(true)), "make -C tests/corpus failed");
    });
    dir.join("bin").join(prog).into_os_string()
}

/// Nodes keyed by fd number, which both modes record (the descriptor key is
/// tested on a server in tests/integration/servers.rs).
fn opts(mode: Mode) -> RecordOptions {
    let mut o = RecordOptions { backend: Some(Backend::Bpf), mode, ring_buffer_bytes: 8 << 20, ..Default::default() };
    o.builder.node_key = NodeKeyMode::Fd;
    o
}

fn opts_key(mode: Mode, key: NodeKeyMode) -> RecordOptions {
    let mut o = opts(mode);
    o.builder.node_key = key;
    o
}

/// Records corpus program `prog` with `args`.
fn rec(o: &RecordOptions, prog: &str, args: &[&OsStr]) -> Recording {
    let mut argv = vec![corpus(prog)];
    argv.extend(args.iter().map(|a| a.to_os_string()));
    match record(&argv, o) {
        Ok(r) => r,
        Err(e) => panic!("recording {prog} ({:?} mode) failed: {e}", o.mode),
    }
}

fn id(p: &Profile, label: &str) -> Option<u32> {
    (0..p.nodes.len() as u32).find(|&i| p.label(i) == label)
}

/// The weight of the edge `from -> to`; a node is `name` or `name(fd)`.
fn edge(p: &Profile, from: &str, to: &str) -> u64 {
    let (Some(a), Some(b)) = (id(p, from), id(p, to)) else { return 0 };
    p.edges.iter().filter(|e| e.from == a && e.to == b).map(|e| e.weight).sum()
}

fn count(p: &Profile, label: &str) -> u64 {
    id(p, label).map_or(0, |i| p.node(i).count)
}

const MODES: [Mode; 2] = [Mode::Aggregate, Mode::Events];

fn n(v: u64) -> OsString {
    v.to_string().into()
}

#[test]
fn write8_edges_and_counts() {
    require_bpf!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for mode in MODES {
        let r = rec(&opts(mode), "write8", &[out.as_os_str(), &n(5000)]);
        let p = &r.profile;
        assert_eq!(r.exit, ExitStatus::Code(0));
        assert_eq!(edge(p, "write(3)", "write(3)"), 4999, "{mode:?}");
        assert_eq!(edge(p, "write(3)", "close(3)"), 1, "{mode:?}");
        assert_eq!(count(p, "write(3)"), 5000, "{mode:?}");
        assert_eq!(count(p, "execve"), 1, "{mode:?}: counting starts at the command's execve");
        assert_eq!(count(p, "exit_group"), 1, "{mode:?}: a call that never returns is counted");
        assert!(p.node(id(p, "write(3)").unwrap()).kernel_ns > 0, "{mode:?}: time in the kernel");
        assert_eq!((p.meta.processes, p.meta.threads), (1, 1), "{mode:?}");
        assert_eq!(std::fs::metadata(&out).unwrap().len(), 40000, "the program's output is unchanged");
        assert_eq!(p.lost_events.total, 0, "{mode:?}: {:?}", p.lost_events);
        assert_eq!(p.meta.total_calls, p.nodes.iter().map(|n| n.count).sum::<u64>());
    }
}

#[test]
fn copy_edges() {
    require_bpf!();
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in"), dir.path().join("out"));
    let data: Vec<u8> = (0..300 * 4096 + 100).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&input, &data).unwrap();
    let k = 301;
    for mode in MODES {
        let r = rec(&opts(mode), "copy", &[input.as_os_str(), output.as_os_str()]);
        let p = &r.profile;
        assert_eq!(edge(p, "read(3)", "write(4)"), k, "{mode:?}");
        assert_eq!(edge(p, "write(4)", "read(3)"), k, "{mode:?}");
        assert_eq!(edge(p, "read(3)", "exit_group"), 1, "{mode:?}: the last read returns 0");
        assert_eq!(std::fs::read(&output).unwrap(), data);
    }
}

/// Both modes build the same graph: same nodes with the same counts and
/// errors, same edges with the same weights.
#[test]
fn modes_agree() {
    require_bpf!();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::write(&input, vec![7u8; 50 * 4096]).unwrap();
    let out = dir.path().join("out");
    let graph = |mode| {
        let p = rec(&opts(mode), "copy", &[input.as_os_str(), out.as_os_str()]).profile;
        let mut nodes: Vec<(String, u64, u64)> =
            (0..p.nodes.len() as u32).map(|i| (p.label(i), p.node(i).count, p.node(i).errors)).collect();
        let mut edges: Vec<(String, String, u64)> =
            p.edges.iter().map(|e| (p.label(e.from), p.label(e.to), e.weight)).collect();
        nodes.sort();
        edges.sort();
        (nodes, edges)
    };
    let (a, e) = (graph(Mode::Aggregate), graph(Mode::Events));
    assert!(a.0.iter().any(|n| n.2 > 0), "some calls fail at startup (access of ld.so.preload): errors are counted");
    assert_eq!(a, e);
}

#[test]
fn node_key_name() {
    require_bpf!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for mode in MODES {
        let r = rec(&opts_key(mode, NodeKeyMode::Name), "write8", &[out.as_os_str(), &n(300)]);
        let p = &r.profile;
        assert_eq!(edge(p, "write", "write"), 299, "{mode:?}");
        assert_eq!(edge(p, "write", "close"), 1, "{mode:?}");
        assert!(p.nodes.iter().all(|n| n.key.fd.is_none()), "{mode:?}");
    }
}

#[test]
fn openstat_edges() {
    require_bpf!();
    let dir = tempfile::tempdir().unwrap();
    // A first run creates the files, so that the recorded runs only read.
    rec(&opts(Mode::Aggregate), "openstat", &[dir.path().as_os_str(), &n(80)]);
    for mode in MODES {
        let small = rec(&opts(mode), "openstat", &[dir.path().as_os_str(), &n(30)]).profile;
        let large = rec(&opts(mode), "openstat", &[dir.path().as_os_str(), &n(80)]).profile;
        // glibc's fstat is newfstatat(fd, "", AT_EMPTY_PATH): its directory
        // fd keys the node.
        for p in [(&small, 30), (&large, 80)] {
            assert_eq!(edge(p.0, "newfstatat(3)", "read(3)"), p.1, "{mode:?}");
            assert_eq!(edge(p.0, "read(3)", "close(3)"), p.1, "{mode:?}");
        }
        // openat and close(3) also occur while the loader maps libc: the
        // loop's share is the difference between two runs.
        assert_eq!(edge(&large, "openat", "newfstatat(3)") - edge(&small, "openat", "newfstatat(3)"), 50, "{mode:?}");
        assert_eq!(edge(&large, "close(3)", "openat") - edge(&small, "close(3)", "openat"), 50, "{mode:?}");
    }
}

#[test]
fn seekread_edges() {
    require_bpf!();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, vec![1u8; 64 << 10]).unwrap();
    for mode in MODES {
        let p = rec(&opts(mode), "seekread", &[file.as_os_str(), &n(700)]).profile;
        assert_eq!(edge(&p, "lseek(3)", "read(3)"), 700, "{mode:?}");
        assert_eq!(edge(&p, "read(3)", "lseek(3)"), 699, "{mode:?}");
        assert_eq!(edge(&p, "read(3)", "close(3)"), 1, "{mode:?}");
    }
}

/// Transitions are per thread: however four writers interleave, each
/// thread's writes chain only to its own.
#[test]
fn threads_transitions_are_per_thread() {
    require_bpf!();
    let dir = tempfile::tempdir().unwrap();
    let (threads, per) = (4u64, 20_000u64);
    for mode in MODES {
        let p = rec(&opts(mode), "threads", &[dir.path().as_os_str(), &n(threads), &n(per)]).profile;
        for i in 0..threads {
            let w = format!("write({})", 5 + i); // fds 3 and 4 are the start barrier pipe
            assert_eq!(edge(&p, &w, &w), per - 1, "{mode:?} {w}");
            for j in 0..threads {
                if i != j {
                    assert_eq!(edge(&p, &w, &format!("write({})", 5 + j)), 0, "{mode:?}: no cross-thread edge");
                }
            }
        }
        assert_eq!(p.meta.threads, threads + 1, "{mode:?}");
        assert_eq!(p.meta.processes, 1, "{mode:?}");
        assert_eq!(p.lost_events.total, 0, "{mode:?}: {:?}", p.lost_events);
    }
}

/// Tasks whose state does not fit the array (here: all but one) are kept
/// in the hash map, with the same results.
#[test]
fn task_states_beyond_the_array() {
    require_bpf!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    syscluster_record::bpf::with_task_slots(0, || {
        for mode in MODES {
            let p = rec(&opts(mode), "threads", &[dir.path().as_os_str(), &n(4), &n(3000)]).profile;
            for i in 0..4 {
                let w = format!("write({})", 5 + i);
                assert_eq!(edge(&p, &w, &w), 2999, "{mode:?} {w}");
            }
            assert_eq!(p.meta.threads, 5, "{mode:?}");
            let p = rec(&opts(mode), "forkexec", &[out.as_os_str(), &n(500)]).profile;
            assert_eq!(edge(&p, "write(3)", "write(3)"), 499, "{mode:?}");
            assert_eq!(p.lost_events.total, 0, "{mode:?}: {:?}", p.lost_events);
        }
    });
}

/// The forked child is followed through its exec of write8.
#[test]
fn forkexec_follows_the_child() {
    require_bpf!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for mode in MODES {
        let r = rec(&opts(mode), "forkexec", &[out.as_os_str(), &n(1000)]);
        let p = &r.profile;
        assert_eq!(r.exit, ExitStatus::Code(0));
        assert_eq!(edge(p, "write(3)", "write(3)"), 999, "{mode:?}");
        assert_eq!(count(p, "execve"), 2, "{mode:?}: the command's and the child's");
        assert_eq!(count(p, "exit_group"), 2, "{mode:?}");
        assert_eq!(p.meta.processes, 2, "{mode:?}");
        assert_eq!(std::fs::metadata(&out).unwrap().len(), 8000);
    }
}

/// A program killed mid-run: the calls up to the kill are counted and the
/// exit status is the signal.
#[test]
fn killed_programs() {
    require_bpf!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for mode in MODES {
        let r = rec(&opts(mode), "killed", &[out.as_os_str(), &n(400), OsStr::new("segv")]);
        assert_eq!(r.exit, ExitStatus::Signal(libc::SIGSEGV), "{mode:?}");
        assert_eq!(edge(&r.profile, "write(3)", "write(3)"), 399, "{mode:?}");
        assert_eq!(count(&r.profile, "exit_group"), 0, "{mode:?}");

        let r = rec(&opts(mode), "killed", &[out.as_os_str(), &n(400), OsStr::new("kill")]);
        let p = &r.profile;
        assert_eq!(r.exit, ExitStatus::Signal(libc::SIGKILL), "{mode:?}");
        assert_eq!(edge(p, "write(3)", "write(3)"), 399, "{mode:?}");
        assert_eq!(edge(p, "write(3)", "getpid"), 1, "{mode:?}");
        assert_eq!(edge(p, "getpid", "kill"), 1, "{mode:?}");
        assert_eq!(count(p, "kill"), 1, "{mode:?}: the kill that never returned is counted");
    }
}

/// The line of `corpus/<file>` that holds `needle`.
fn line_of(file: &str, needle: &str) -> u32 {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus").join(file)).unwrap();
    text.lines().position(|l| l.contains(needle)).expect(needle) as u32 + 1
}

/// Events mode finds the code location of every call in the kernel: all
/// of write8's writes come from its one write call.
#[test]
fn code_locations_in_events_mode() {
    require_bpf!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let p = rec(&opts(Mode::Events), "write8", &[out.as_os_str(), &n(2000)]).profile;
    assert!(p.meta.collected.callsites);
    let w = p.node(id(&p, "write(3)").unwrap());
    assert_eq!(w.callsites.len(), 1, "{:?}", w.callsites);
    let loc = &w.callsites[0].location;
    assert_eq!(w.callsites[0].count, 2000);
    assert!(loc.module.ends_with("/write8"), "{loc:?}");
    assert_eq!(loc.file.as_deref().map(|f| f.ends_with("write8.c")), Some(true), "{loc:?}");
    assert_eq!(loc.line, Some(line_of("write8.c", "write(fd,")), "{loc:?}");
    assert_eq!(loc.function.as_deref(), Some("main"));
    let close = p.node(id(&p, "close(3)").unwrap());
    assert_eq!(close.callsites[0].location.line, Some(line_of("write8.c", "close(fd)")));
}

/// Aggregate mode with callsite node keys: the graph's nodes are calls at
/// code locations.
#[test]
fn callsite_node_keys_in_aggregate_mode() {
    require_bpf!();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::write(&input, vec![3u8; 40 * 4096]).unwrap();
    let out = dir.path().join("out");
    for mode in MODES {
        let p = rec(&opts_key(mode, NodeKeyMode::Callsite), "copy", &[input.as_os_str(), out.as_os_str()]).profile;
        let read = format!("read@copy.c:{}", line_of("copy.c", "while ((n = read("));
        let write = format!("write@copy.c:{}", line_of("copy.c", "write(out,"));
        assert_eq!(
            edge(&p, &read, &write),
            40,
            "{mode:?}: {:?}",
            (0..p.nodes.len() as u32).map(|i| p.label(i)).collect::<Vec<_>>()
        );
        assert_eq!(edge(&p, &write, &read), 40, "{mode:?}");
        assert_eq!(p.node(id(&p, &read).unwrap()).callsites.len(), 1, "{mode:?}");
    }
}

/// A ring buffer far too small for the calls: every dropped call is
/// counted, so recorded + lost is exactly what aggregate mode counts.
#[test]
fn ring_buffer_losses_are_counted() {
    require_bpf!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let args = [out.as_os_str(), &n(300_000)];
    let all = rec(&opts(Mode::Aggregate), "write8", &args).profile.meta.total_calls;
    let mut o = opts(Mode::Events);
    o.ring_buffer_bytes = 4096;
    let p = rec(&o, "write8", &args).profile;
    let lost = p.lost_events.by_cause.get("ring_buffer_full").copied().unwrap_or(0);
    assert!(lost > 0, "a 4 KiB ring must overflow on 300000 calls");
    let untracked = p.lost_events.by_cause.get("untracked_thread").copied().unwrap_or(0);
    assert_eq!(p.lost_events.total, lost + untracked, "{:?}", p.lost_events);
    assert_eq!(p.meta.total_calls + lost, all, "recorded {} + lost {lost}", p.meta.total_calls);
    // No edge spans a gap: the chain restarts after lost records.
    let w = edge(&p, "write(3)", "write(3)");
    assert!(w < count(&p, "write(3)"), "{w}");
}

/// Where BPF may not be loaded, `record` says so before the command runs:
/// here a thread without CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN.
#[test]
fn unavailable_before_the_command_runs() {
    require_bpf!();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    // write8 creates the file it writes: the marker exists if it ran.
    let argv: Vec<OsString> = vec![corpus("write8"), marker.clone().into_os_string(), n(1)];
    for mode in MODES {
        let argv = argv.clone();
        let result = std::thread::spawn(move || {
            drop_caps(&[CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN]);
            assert!(!bpf_permitted());
            record(&argv, &opts(mode)).map(|r| r.exit)
        })
        .join()
        .unwrap();
        match result {
            Err(RecordError::BpfUnavailable(why)) => assert!(why.contains("needs root"), "{why}"),
            other => panic!("{mode:?}: expected BpfUnavailable, got {other:?}"),
        }
        assert!(!marker.exists(), "{mode:?}: the command ran");
    }
}

#[test]
fn command_not_found() {
    require_bpf!();
    for mode in MODES {
        let argv: Vec<OsString> = vec!["/nonexistent/program".into()];
        match record(&argv, &opts(mode)) {
            Err(RecordError::Launch(e)) => assert!(e.to_string().contains("not found"), "{e}"),
            other => panic!("{mode:?}: {:?}", other.map(|r| r.exit)),
        }
    }
}

#[test]
fn descriptor_keys_in_events_mode_and_fd_numbers_in_aggregate_mode() {
    require_bpf!();
    let out = std::env::temp_dir().join(format!("syscluster-desc-{}", std::process::id()));
    for (mode, want) in [(Mode::Events, NodeKeyMode::Descriptor), (Mode::Aggregate, NodeKeyMode::Fd)] {
        let p = rec(&opts_key(mode, NodeKeyMode::Descriptor), "write8", &[out.as_os_str(), &n(300)]).profile;
        assert_eq!(p.meta.node_key, want, "{mode:?}");
        let label = match want {
            NodeKeyMode::Fd => "write(3)".to_string(),
            _ => format!("write(file {})", out.display()),
        };
        assert_eq!(edge(&p, &label, &label), 299, "{mode:?}");
    }
    let _ = std::fs::remove_file(&out);
}
