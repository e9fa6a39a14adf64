//! Folded stacks: a golden file on a small synthetic profile, and the
//! grammar FlameGraph's flamegraph.pl and speedscope read.

use syscluster_model::profile::{Callsite, Location, Meta, Node, NodeKey};
use syscluster_model::{syscalls, Profile};
use syscluster_report::{by_name, ReportOptions};

fn loc(module: &str, offset: u64, function: Option<&str>, file: Option<&str>, line: Option<u32>) -> Location {
    Location {
        module: module.into(),
        offset,
        function: function.map(Into::into),
        file: file.map(Into::into),
        line,
        site: None,
    }
}

fn node(id: u32, name: &str, fd: Option<i64>, count: u64, sites: Vec<(Location, u64)>) -> Node {
    Node {
        id,
        syscall: name.into(),
        nr: syscalls::by_name(name).unwrap().nr,
        key: NodeKey { fd, ..Default::default() },
        count,
        errors: 0,
        kernel_ns: 0,
        blocked_ns: 0,
        callsites: sites.into_iter().map(|(location, count)| Callsite { location, count }).collect(),
    }
}

/// A copy program: read and write at two lines of main, a write from a
/// library function without debug info, loader calls without locations,
/// and two fd nodes of one call at one line (merged into one stack).
fn synthetic() -> Profile {
    let prog = "/usr/local/bin/copy";
    let nodes = vec![
        node(0, "read", Some(3), 100, vec![(loc(prog, 0x1180, Some("main"), Some("/src/copy.c"), Some(24)), 99)]),
        node(1, "write", Some(4), 99, vec![(loc(prog, 0x1170, Some("main"), Some("/src/copy.c"), Some(25)), 99)]),
        node(
            2,
            "write",
            Some(5),
            7,
            vec![
                (loc(prog, 0x1170, Some("main"), Some("/src/copy.c"), Some(25)), 5),
                (loc("/usr/lib/libfoo.so.1", 0x2a40, Some("foo_log"), None, None), 2),
            ],
        ),
        node(3, "mmap", None, 8, vec![]),
        node(4, "exit_group", None, 1, vec![(loc(prog, 0x1051, None, None, None), 1)]),
    ];
    let total = nodes.iter().map(|n| n.count).sum();
    Profile {
        format_version: 1,
        meta: Meta { tool: "test".into(), arch: "x86_64".into(), total_calls: total, ..Default::default() },
        nodes,
        ..Default::default()
    }
}

fn folded(p: &Profile) -> String {
    String::from_utf8(by_name("folded").unwrap().render(p, &ReportOptions::default())).unwrap()
}

#[test]
fn golden_synthetic_profile() {
    let got = folded(&synthetic());
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/synthetic.folded");
    if std::env::var_os("SYSCLUSTER_BLESS").is_some() {
        std::fs::write(&golden, &got).unwrap();
    }
    let want = std::fs::read_to_string(&golden).expect("the golden file");
    assert_eq!(got, want, "folded output changed; if on purpose, rerun with SYSCLUSTER_BLESS=1");
}

/// Checks the folded grammar and returns the total count.
pub fn parse(folded: &str) -> u64 {
    let mut total = 0;
    for line in folded.lines() {
        let (stack, count) = line.rsplit_once(' ').unwrap_or_else(|| panic!("no count: {line:?}"));
        let n: u64 = count.parse().unwrap_or_else(|_| panic!("bad count: {line:?}"));
        assert!(n > 0, "a zero count: {line:?}");
        let frames: Vec<&str> = stack.split(';').collect();
        assert!(frames.len() >= 2 && frames.iter().all(|f| !f.is_empty()), "empty frame: {line:?}");
        total += n;
    }
    total
}

#[test]
fn every_call_is_in_one_stack() {
    let p = synthetic();
    let f = folded(&p);
    assert_eq!(parse(&f), p.meta.total_calls);
    let mut lines: Vec<&str> = f.lines().collect();
    let sorted = {
        let mut s = lines.clone();
        s.sort();
        s
    };
    assert_eq!(lines, sorted, "sorted, so that the output is stable");
    lines.dedup();
    assert_eq!(lines.len(), f.lines().count(), "equal stacks merged");
}

#[test]
fn frames_never_contain_the_separator() {
    let mut p = synthetic();
    p.nodes[0].callsites[0].location.function = Some("operator;weird\nname".into());
    let f = folded(&p);
    assert_eq!(parse(&f), p.meta.total_calls);
    assert!(f.contains("copy;operator:weird name (copy.c:24);read 99"), "{f}");
}
