//! Servers keyed by what their descriptors are (issue 10, item 3): an
//! event-driven server (tests/corpus/tcpserver.c) under a load generator
//! (tcpload.c) on 127.0.0.1. Its request loop is one loop whatever the
//! number of connections, under every backend that follows descriptors;
//! keyed by fd number, the same graph grows with the connections.

use crate::util::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use syscluster_model::Profile;

/// Runs `syscluster ARGS... -- tcpserver` (or, with `strace`, the server
/// under `strace -f -ttt -T`, imported with `import`) while `tcpload` makes
/// `conns` connections of `reqs` requests; returns the profile.
fn serve(dir: &Path, name: &str, record: &[&str], import: Option<&[&str]>, conns: u32, reqs: u32) -> Profile {
    // One name for every run, so that the server's own files are the same
    // nodes in each.
    let port_file = dir.join("server.port");
    let _ = std::fs::remove_file(&port_file);
    let out = dir.join(format!("{name}.json"));
    let log = dir.join(format!("{name}.log"));
    let server =
        [corpus("tcpserver").to_str().unwrap().to_string(), port_file.to_str().unwrap().into(), conns.to_string()];
    let mut child = match import {
        Some(_) => Command::new("strace")
            .env_remove("LD_LIBRARY_PATH")
            .args(["-f", "-ttt", "-T", "-o"])
            .arg(&log)
            .args(&server)
            .stderr(Stdio::piped())
            .spawn()
            .expect("run strace"),
        None => syscluster()
            .args(["record", "-q", "-o"])
            .arg(&out)
            .args(record)
            .arg("--")
            .args(&server)
            .stderr(Stdio::piped())
            .spawn()
            .expect("run syscluster record"),
    };
    let start = Instant::now();
    let port = loop {
        if let Ok(s) = std::fs::read_to_string(&port_file) {
            break s.trim().to_string();
        }
        if start.elapsed() > Duration::from_secs(20) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("{name}: the server never wrote its port: {}", stderr(&o));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let load = run(Command::new(corpus("tcpload")).args([port, conns.to_string(), reqs.to_string()]));
    if !load.status.success() {
        let _ = child.kill();
    }
    let o = child.wait_with_output().unwrap();
    assert!(load.status.success(), "{name}: tcpload failed: {}", stderr(&load));
    assert!(o.status.success(), "{name}: the server failed: {}", stderr(&o));
    if let Some(args) = import {
        let o = run(syscluster().args(["import-strace", "-q"]).args(args).arg(&log).arg("-o").arg(&out));
        assert!(o.status.success(), "{name}: import-strace failed: {}", stderr(&o));
    }
    Profile::load(&out).expect("load the server's profile")
}

/// Checks that the request loop — `epoll_wait`, `read` and `write` of a
/// connection — is found once, runs for most requests, and that the loop
/// shares add up to at most 100 %. (Other loops may pass through the same
/// calls with what the request loop leaves: a connection's end, `read` = 0,
/// `epoll_ctl`, `close`, and the next one's `accept4`.)
fn check_one_loop(name: &str, p: &Profile, reqs: u64) {
    let labels = |l: &syscluster_model::profile::Sequence| {
        let mut v = l.nodes.iter().map(|&n| p.label(n)).collect::<Vec<_>>();
        v.sort();
        v
    };
    let all: Vec<_> = p.sequences.loops.iter().map(|l| (labels(l), l.share)).collect();
    let request = |l: &&syscluster_model::profile::Sequence| {
        let v = labels(l);
        v.len() == 3
            && v[0] == "epoll_wait(epoll)"
            && v[1].starts_with("read(accepted tcp 127.0.0.1:")
            && v[2].starts_with("write(accepted tcp 127.0.0.1:")
    };
    let loops: Vec<_> = p.sequences.loops.iter().filter(request).collect();
    assert_eq!(loops.len(), 1, "{name}: the request loop is found {} times: {all:?}", loops.len());
    let l = loops[0];
    assert!(l.weight * 2 >= reqs && l.weight <= reqs, "{name}: the loop ran {} times for {reqs} requests", l.weight);
    assert!(l.share <= 1.0 && l.share >= 0.5, "{name}: the loop's share is {}", l.share);
    let shares: f64 = p.sequences.loops.iter().map(|l| l.share).sum();
    assert!(shares <= 1.0 + 1e-9, "{name}: loop shares add up to {:.1} %: {all:?}", shares * 100.0);
}

/// Nodes of more than one call: the graph without start-up noise.
fn nodes(p: &Profile) -> usize {
    p.nodes.iter().filter(|n| n.count >= 2).count()
}

/// A way to record: its name, the flags of `syscluster record`, or (Some)
/// the flags of strace whose log is imported.
type Backend<'a> = (&'a str, Vec<&'a str>, Option<Vec<&'a str>>);

#[test]
fn a_servers_request_loop_is_one_loop_whatever_the_connections() {
    let d = tmp();
    let mut backends: Vec<Backend> = vec![
        ("ptrace", vec!["--backend", "ptrace"], None),
        ("strace", vec![], Some(vec![])),
        ("bpf-events", vec!["--backend", "bpf", "--mode", "events"], None),
    ];
    if !have("bpf", is_root(), "BPF needs root: the bpf backend is not tested") {
        backends.retain(|b| b.0 != "bpf-events");
    }
    for (name, record, import) in &backends {
        let mut graphs = Vec::new();
        for conns in [3u32, 12] {
            let reqs = 40;
            let p = serve(d.path(), &format!("{name}-{conns}"), record, import.as_deref(), conns, reqs);
            assert_eq!(p.meta.node_key.as_str(), "descriptor");
            check_one_loop(&format!("{name}, {conns} connections"), &p, (conns * reqs) as u64);
            graphs.push(p);
        }
        // The same nodes for 3 and 12 connections; a few more edges at most
        // (how the connections interleave), not 12 more of each kind.
        let labels = |p: &Profile| p.nodes.iter().map(|n| p.label(n.id)).collect::<std::collections::BTreeSet<_>>();
        assert_eq!(labels(&graphs[0]), labels(&graphs[1]), "{name}: the nodes differ with the number of connections");
        let (e3, e12) = (graphs[0].edges.len(), graphs[1].edges.len());
        assert!(e12 <= e3 + 4, "{name}: {e3} edges for 3 connections, {e12} for 12");
    }
}

#[test]
fn keyed_by_fd_number_the_same_server_splits_by_connection() {
    // The counterpart: what the descriptor key fixes, and what --node-key
    // fd still gives.
    let d = tmp();
    let few = serve(d.path(), "fd-3", &["--backend", "ptrace", "--node-key", "fd"], None, 3, 20);
    let many = serve(d.path(), "fd-12", &["--backend", "ptrace", "--node-key", "fd"], None, 12, 20);
    assert_eq!(many.meta.node_key.as_str(), "fd");
    let (n3, n12) = (nodes(&few), nodes(&many));
    // (12 connections at once: the server's fds 5 to 16.)
    assert!(n12 >= n3 + 2 * 9, "12 connections should add read(N)/write(N) nodes: {n3} → {n12}");
    let sum: f64 = many.sequences.loops.iter().map(|l| l.share).sum();
    assert!(sum <= 1.0 + 1e-9, "loop shares add up to {:.1} %", sum * 100.0);
    // The strace import takes the flag too.
    let p = serve(d.path(), "fd-strace", &[], Some(&["--node-key", "fd"]), 3, 10);
    assert_eq!(p.meta.node_key.as_str(), "fd");
    assert!(p.nodes.iter().any(|n| n.key.fd.is_some()) && p.nodes.iter().all(|n| n.key.descriptor.is_none()));
}
