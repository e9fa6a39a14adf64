//! The real-program suite (issue 10): programs from Debian's packages that
//! nobody here wrote, each recorded (`syscluster record`), reported,
//! advised and run under `syscluster run`, with the structure its profile
//! must have asserted and its outputs compared with a plain run:
//!
//! - memcached (an event-driven server) under memcaslap, on 127.0.0.1;
//! - python3 with OpenSSL loaded (hashlib, ssl) writing small records;
//! - `make -j2` of a small C project (tests/realprog/cproj);
//! - git on a repository of 3,000 files (tests/realprog/git-work.sh);
//! - python3's `http.server` (a web server) sending 150 files on 127.0.0.1.
//!
//! The programs' inputs live in tests/realprog/; scripts/install-deps.sh
//! installs the packages. A missing program skips its test, saying so,
//! except where it is required (the program's name in SYSCLUSTER_REQUIRE, or
//! CI=true), where it fails (util::need).

use crate::util::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use syscluster_model::Profile;

/// The program `name` of Debian package `package`, or None (after saying
/// so) where it is missing — a failure under CI.
fn realprog(name: &str) -> PathBuf {
    root().join("tests/realprog").join(name)
}

/// `syscluster record -q -o OUT -- ARGV` in `cwd`; the command's output
/// and the profile.
fn record(cwd: &Path, out: &Path, argv: &[&str]) -> (Output, Profile) {
    let o = run(syscluster().current_dir(cwd).args(["record", "-q", "-o"]).arg(out).arg("--").args(argv));
    assert!(o.status.success(), "record {argv:?}: {:?}: {}", o.status, stderr(&o));
    (o, Profile::load(out).expect("load the profile"))
}

/// `report` (text) and `advise --format json` of a profile.
fn report_and_advise(profile: &Path) -> (String, Value) {
    let o = run(syscluster().arg("report").arg(profile));
    assert!(o.status.success(), "report: {}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let o = run(syscluster().args(["advise", "--format", "json"]).arg(profile));
    assert!(o.status.success(), "advise: {}", stderr(&o));
    (text, serde_json::from_slice(&o.stdout).expect("advise --format json is JSON"))
}

fn rules(advice: &Value) -> Vec<(String, Vec<String>)> {
    advice["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let labels = r["labels"].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_string()).collect();
            (r["rule"].as_str().unwrap().to_string(), labels)
        })
        .collect()
}

/// What no advice may say of any program (issue 10, items 4 and 5): a
/// saving larger than the run; "one function" for calls in different
/// modules; keeping open a file the program writes.
fn check_no_wrong_advice(name: &str, p: &Profile, advice: &Value) {
    for r in advice["recommendations"].as_array().unwrap() {
        let share = r["saving"]["share_of_run"].as_f64().unwrap();
        assert!(share > 0.0 && share <= 1.0, "{name}: {} saves {share} of the run", r["rule"]);
        if r["rule"] == "reopen-same-file" {
            let path = r["parameters"]["path"].as_str().unwrap_or_default();
            let io = p.io_patterns.iter().find(|io| io.path == path);
            assert!(io.is_none_or(|io| io.writes == 0), "{name}: keep open {path}, which is written");
        }
    }
    for s in advice["sequences"].as_array().unwrap() {
        if s["placement"]["class"] == "one_function" {
            let modules: std::collections::BTreeSet<_> = s["placement"]["functions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap().split([':', '+']).next().unwrap().to_string())
                .collect();
            assert_eq!(modules.len(), 1, "{name}: one function across modules: {}", s["placement"]);
        }
    }
}

/// Per process, what the runtime did, from `syscluster run -v`'s stderr:
/// `syscluster run: NAME[PID]: deferred=D direct=W …` → (NAME, D, W).
fn runtime_lines(err: &str) -> Vec<(String, u64, u64)> {
    let field = |l: &str, k: &str| -> u64 {
        let v = l.split(' ').find_map(|w| w.strip_prefix(k)).unwrap_or_else(|| panic!("no {k} in {l}"));
        v.parse().unwrap()
    };
    err.lines()
        .filter_map(|l| l.strip_prefix("syscluster run: "))
        .filter(|l| l.contains("deferred="))
        .map(|l| (l.split('[').next().unwrap().to_string(), field(l, "deferred="), field(l, "direct=")))
        .collect()
}

/// `syscluster run -v -- ARGV` in `cwd`.
fn run_v(cwd: &Path, argv: &[&str]) -> Output {
    let o = run(syscluster().current_dir(cwd).args(["run", "-v", "--"]).args(argv));
    assert!(o.status.success(), "run {argv:?}: {:?}: {}", o.status, stderr(&o));
    assert!(!stderr(&o).contains("unchanged"), "run {argv:?}: the runtime gave up: {}", stderr(&o));
    o
}

// ---------------------------------------------------------------------------
// memcached under memcaslap

/// A port on 127.0.0.1 free a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits for `child` at most `secs` seconds, then kills it.
fn wait_bounded(mut child: Child, secs: u64, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("{what} did not end within {secs} s: {}", stderr(&o));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Waits (20 s at most) until the server `child` started listens on
/// 127.0.0.1:`port`; kills it and fails the test if it never does. The
/// child and its pid.
fn listening(child: Child, port: u16, what: &str) -> (Child, libc::pid_t) {
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if start.elapsed() > Duration::from_secs(20) {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let o = child.wait_with_output().unwrap();
            panic!("{what} never listened on {port}: {}", stderr(&o));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, pid)
}

/// One request and its answer, the server's correctness in one exchange.
fn memcached_answers(port: u16) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"set suite-key 0 0 11\r\nhello world\r\nget suite-key\r\n").unwrap();
    let want = b"STORED\r\nVALUE suite-key 0 11\r\nhello world\r\nEND\r\n";
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while got.len() < want.len() {
        let n = s.read(&mut buf).expect("memcached's answer");
        assert!(n > 0, "memcached closed the connection after {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want));
}

/// Starts memcached (one worker thread per `threads`) on 127.0.0.1 under
/// `syscluster SUB ARGS…`, loads it with memcaslap (`conns` connections,
/// `ops` operations), checks an answer, stops it with SIGTERM; returns
/// the supervisor's output and the port.
fn serve_memcached(memcached: &Path, memcaslap: &Path, sub: &[&str], conns: u32, ops: u32) -> (Output, u16) {
    let port = free_port();
    let mut server = vec![memcached.to_str().unwrap().to_string()];
    if is_root() {
        server.extend(["-u".into(), "root".into()]);
    }
    server.extend(["-l", "127.0.0.1", "-U", "0", "-t", "2", "-p"].map(String::from));
    server.push(port.to_string());
    let child = syscluster()
        .args(sub)
        .arg("--")
        .args(&server)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start syscluster");
    let (child, pid) = listening(child, port, "memcached");
    let load = Command::new(memcaslap)
        .args(["-s", &format!("127.0.0.1:{port}"), "-T", "1", "-c", &conns.to_string(), "-x", &ops.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start memcaslap");
    let load = wait_bounded(load, 30, "memcaslap");
    memcached_answers(port);
    // SIGTERM to syscluster, which passes it on: memcached shuts down.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let o = wait_bounded(child, 20, "memcached after SIGTERM");
    assert!(load.status.success(), "memcaslap failed: {}{}", String::from_utf8_lossy(&load.stdout), stderr(&load));
    let report = String::from_utf8_lossy(&load.stdout);
    assert!(report.contains("get_misses: 0"), "memcaslap: {report}");
    assert!(o.status.success(), "{sub:?} memcached: {:?}: {}", o.status, stderr(&o));
    (o, port)
}

#[test]
fn memcached_request_loop_is_one_loop_and_runs_under_the_runtime() {
    let (Some(memcached), Some(memcaslap)) =
        (program("memcached", "memcached"), program("memcaslap", "libmemcached-tools"))
    else {
        return;
    };
    let d = tmp();
    let ops = 4000u64;
    let mut shapes = Vec::new();
    for conns in [4u32, 16] {
        let out = d.path().join(format!("memcached-{conns}.json"));
        let (_, port) =
            serve_memcached(&memcached, &memcaslap, &["record", "-q", "-o", out.to_str().unwrap()], conns, ops as u32);
        let p = Profile::load(&out).expect("the server's profile");
        assert_eq!(p.meta.node_key.as_str(), "descriptor");
        let name = format!("memcached, {conns} connections");
        // One node per call on the connections, whatever their number.
        let conn = |s: &str| format!("{s}(accepted tcp 127.0.0.1:{port})");
        let g = Graph(&p);
        assert!(
            g.count(&conn("read")) > ops && g.count(&conn("sendmsg")) >= ops,
            "{name}: {:?}",
            g.heavy_edges(ops / 10)
        );
        for call in ["read", "sendmsg"] {
            let nodes = p.nodes.iter().filter(|n| n.syscall == call && p.label(n.id).contains("accepted")).count();
            assert_eq!(nodes, 1, "{name}: {call} of the connections is {nodes} nodes");
        }
        // The request loop is found once in each of its two forms: read →
        // sendmsg → read while a connection has requests waiting, and
        // through epoll_wait when the worker waits for the next one. How
        // the requests split between the two depends on the connections.
        let labels = |l: &syscluster_model::profile::Sequence| {
            let mut v: Vec<_> = l.nodes.iter().map(|&n| p.label(n)).collect();
            v.sort();
            v
        };
        let mut runs = 0;
        for form in
            [vec![conn("read"), conn("sendmsg")], vec!["epoll_wait(epoll)".into(), conn("read"), conn("sendmsg")]]
        {
            let loops: Vec<_> = p.sequences.loops.iter().filter(|l| labels(l) == form).collect();
            assert_eq!(loops.len(), 1, "{name}: the request loop {form:?} is found {} times", loops.len());
            runs += loops[0].weight;
        }
        assert!(runs * 2 >= ops && runs <= ops, "{name}: the request loop ran {runs} times for {ops} requests");
        let shares: f64 = p.sequences.loops.iter().map(|l| l.share).sum();
        assert!(shares <= 1.0 + 1e-9, "{name}: loop shares add up to {:.1} %", shares * 100.0);
        // The busy nodes on descriptors, ports aside, do not change with the
        // connections (the clock thread's sleeps count the seconds).
        let busy: std::collections::BTreeSet<_> = p
            .nodes
            .iter()
            .filter(|n| n.count >= ops / 20 && n.key.has_descriptor())
            .map(|n| p.label(n.id).replace(&port.to_string(), "P"))
            .collect();
        shapes.push(busy);

        let (text, advice) = report_and_advise(&out);
        assert!(text.contains(&conn("read")), "{name}: report without the connection's reads");
        check_no_wrong_advice(&name, &p, &advice);
        // Each request's answer is computed between its read and its send:
        // no rewrite applies to the request loop (no multi-call, no
        // coalescing of socket writes, no sendfile of what was not read
        // from a file).
        for (rule, l) in rules(&advice) {
            assert!(!l.iter().any(|l| l.contains("accepted")), "{name}: {rule} recommended for {l:?}");
        }
    }
    assert_eq!(shapes[0], shapes[1], "memcached's busy nodes differ between 4 and 16 connections");

    // Under the runtime: interposed (not given up on), answering; nothing
    // deferred, since it writes only to sockets, which are never deferred.
    let (o, _) = serve_memcached(&memcached, &memcaslap, &["run", "-v"], 8, ops as u32);
    let err = stderr(&o);
    assert!(!err.contains("unchanged"), "memcached ran unchanged: {err}");
    let lines = runtime_lines(&err);
    assert!(lines.iter().any(|(n, deferred, _)| n == "memcached" && *deferred == 0), "memcached under run: {err}");
}

// ---------------------------------------------------------------------------
// a web server sending files: python3 -m http.server

/// GET /PATH over HTTP/1.0 on 127.0.0.1:PORT; the body.
fn http_get(port: u16, path: &str) -> Vec<u8> {
    let mut c = TcpStream::connect(("127.0.0.1", port)).expect("connect to the web server");
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(c, "GET /{path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    c.read_to_end(&mut answer).expect("the web server's answer");
    let head = answer.windows(4).position(|w| w == b"\r\n\r\n").expect("an HTTP header");
    assert!(answer.starts_with(b"HTTP/1.0 200"), "GET /{path}: {}", String::from_utf8_lossy(&answer[..head]));
    answer.split_off(head + 4)
}

#[test]
fn a_web_server_sending_many_files_gets_sendfile_advice() {
    let Some(_) = program("python3", "python3") else { return };
    // Debian's interpreter and its http.server, not a wrapper first on PATH.
    let python = "/usr/bin/python3";
    let d = tmp();
    let www = d.path().join("www");
    std::fs::create_dir(&www).unwrap();
    let pages = 150;
    for i in 0..pages {
        // 200,000 bytes: four reads of Python's 64 KiB block each, then end of file.
        let body: Vec<u8> = (0..200_000u32).map(|j| (j.wrapping_mul(31).wrapping_add(i * 7) % 251) as u8).collect();
        std::fs::write(www.join(format!("p{i}.bin")), body).unwrap();
    }
    let port = free_port();
    let out = d.path().join("http.json");
    let child = syscluster()
        .args(["record", "-q", "-o"])
        .arg(&out)
        .args(["--", python, "-m", "http.server", "--bind", "127.0.0.1", "--directory"])
        .arg(&www)
        .arg(port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start syscluster record");
    let (child, pid) = listening(child, port, "http.server");
    for i in 0..pages {
        let body = http_get(port, &format!("p{i}.bin"));
        assert_eq!(body, std::fs::read(www.join(format!("p{i}.bin"))).unwrap(), "page {i}");
    }
    // Ctrl-C as a user stops it: http.server exits 0 on KeyboardInterrupt,
    // and the recording is whole.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let o = wait_bounded(child, 30, "http.server after SIGINT");
    assert!(o.status.success(), "record http.server: {:?}: {}", o.status, stderr(&o));
    let p = Profile::load(&out).expect("the web server's profile");
    // Each page is read in passing: the reads are one node, `many files`,
    // and the sends one, the connections accepted from the listener.
    let g = Graph(&p);
    let (read, send) = ("read(many files)".to_string(), format!("sendto(accepted tcp 127.0.0.1:{port})"));
    assert!(g.count(&read) >= 4 * pages as u64, "{:?}", g.heavy_edges(100));
    assert!(g.count(&send) >= 4 * pages as u64, "{:?}", g.heavy_edges(100));
    let (_, advice) = report_and_advise(&out);
    check_no_wrong_advice("http.server", &p, &advice);
    let found = rules(&advice);
    assert!(
        found.iter().any(|(rule, l)| rule == "sendfile" && l == &[read.clone(), send.clone()]),
        "no sendfile for {read} → {send}: {found:?}"
    );
}

// ---------------------------------------------------------------------------
// python3 with OpenSSL

#[test]
fn python_with_openssl_loaded_has_its_short_writes_coalesced() {
    let Some(python) = program("python3", "python3") else { return };
    // Debian's interpreter, not a wrapper found first on PATH.
    let python = if Path::new("/usr/bin/python3").exists() { PathBuf::from("/usr/bin/python3") } else { python };
    let python = python.to_str().unwrap();
    let d = tmp();
    let script = realprog("records.py");
    let script = script.to_str().unwrap();
    let n = 20_000u64;
    let plain = run(Command::new(python).arg(script).arg(d.path().join("plain.out")).arg(n.to_string()));
    assert!(plain.status.success(), "{}", stderr(&plain));
    let want = std::fs::read(d.path().join("plain.out")).unwrap();
    assert!(
        String::from_utf8_lossy(&plain.stdout).starts_with("OpenSSL "),
        "{}",
        String::from_utf8_lossy(&plain.stdout)
    );

    let json = d.path().join("python.json");
    let (o, p) = record(d.path(), &json, &[python, script, "recorded.out", &n.to_string()]);
    assert_eq!(o.stdout, plain.stdout, "python3's output differs under record");
    assert_eq!(std::fs::read(d.path().join("recorded.out")).unwrap(), want);
    // One write per record, a self loop on the output file's node.
    let g = Graph(&p);
    assert!(g.edge("write(file recorded.out)", "write(file recorded.out)") >= n - 1, "{:?}", g.heavy_edges(n / 2));
    let (_, advice) = report_and_advise(&json);
    check_no_wrong_advice("python3", &p, &advice);
    let rules = rules(&advice);
    assert!(
        rules.iter().any(|(r, l)| r == "coalesce-writes" && l == &["write(file recorded.out)"]),
        "python3: coalescing the records' writes is not advised: {rules:?}"
    );
    assert!(!rules.iter().any(|(r, _)| r == "reopen-same-file" || r == "copy-offload"), "{rules:?}");

    // libcrypto and libssl are loaded, and the runtime still interposes.
    let o = run_v(d.path(), &[python, script, "run.out", &n.to_string()]);
    assert_eq!(o.stdout, plain.stdout, "python3's output differs under run");
    assert_eq!(std::fs::read(d.path().join("run.out")).unwrap(), want, "the file differs under run");
    let lines = runtime_lines(&stderr(&o));
    let deferred: u64 = lines.iter().filter(|l| l.0.starts_with("python3")).map(|l| l.1).sum();
    assert!(deferred >= n - 10, "python3: {deferred} of {n} writes deferred: {}", stderr(&o));
}

// ---------------------------------------------------------------------------
// make -j2 of a small C project

/// A fresh copy of tests/realprog/cproj in `dir`.
fn c_project(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for e in std::fs::read_dir(realprog("cproj")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    dir.to_path_buf()
}

const BUILT: [&str; 5] = ["main.o", "words.o", "table.o", "checksum.o", "wordstat"];

fn built(dir: &Path) -> BTreeMap<&'static str, Vec<u8>> {
    BUILT.iter().map(|f| (*f, std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}")))).collect()
}

#[test]
fn make_j2_is_recorded_with_all_its_children_and_builds_the_same_under_run() {
    let (Some(make), Some(_)) = (program("make", "make"), program("cc", "gcc")) else { return };
    let make = make.to_str().unwrap();
    let d = tmp();
    let plain = c_project(&d.path().join("plain"));
    let o = run(Command::new(make).arg("-j2").current_dir(&plain));
    assert!(o.status.success(), "make: {}", stderr(&o));
    let want = built(&plain);
    let out = run(&mut Command::new(plain.join("wordstat")));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "18 words, checksum 9fcc18af\n");

    let rec = c_project(&d.path().join("recorded"));
    let json = d.path().join("make.json");
    let (o, p) = record(&rec, &json, &[make, "-j2"]);
    let lines = |b: &[u8]| {
        let mut v: Vec<String> = String::from_utf8_lossy(b).lines().map(String::from).collect();
        v.sort();
        v
    };
    let commands = run(Command::new(make).args(["-n", "-B"]).current_dir(&plain));
    assert_eq!(lines(&o.stdout), lines(&commands.stdout), "make's output");
    assert_eq!(built(&rec), want, "the build differs under record");
    // Every child is found: one successful execve per process (make's own
    // by the launcher), a compiler and an assembler per file, the link.
    let execve: u64 = p.nodes.iter().filter(|n| n.syscall == "execve").map(|n| n.count - n.errors).sum();
    assert_eq!(execve, p.meta.processes, "execve'd programs against processes");
    assert!(p.meta.processes >= 1 + 4 * 3 + 3, "{} processes for 4 compilations and a link", p.meta.processes);
    for f in BUILT {
        assert!(Graph(&p).count(&format!("write(file {f})")) > 0, "nothing written to {f}");
    }
    // The processes' graphs are merged: what every process does (the
    // loader reading the libraries, each a few times) is one node, and its
    // loop over the libraries one loop, whatever the processes.
    let g = Graph(&p);
    assert!(g.count("read(many files)") >= p.meta.processes, "{} processes: {:?}", p.meta.processes, g.heavy_edges(50));
    assert!(
        p.sequences
            .loops
            .iter()
            .any(|l| l.weight >= p.meta.processes && l.nodes.iter().any(|&n| p.label(n) == "mmap(many files)")),
        "no loop over the libraries: {:?}",
        g.heavy_edges(50)
    );
    let (text, advice) = report_and_advise(&json);
    assert!(text.contains(&format!("{} processes", p.meta.processes)), "{text}");
    check_no_wrong_advice("make -j2", &p, &advice);
    // ld's libbfd seeks through stdio: bfd_seek calls fseek, and libc makes
    // the lseek and the write or read. The rewrite shown is of those stdio
    // calls, never of an lseek the code does not make.
    for r in advice["recommendations"].as_array().unwrap() {
        let sites: BTreeSet<String> =
            r["locations"].as_array().unwrap().iter().map(|l| l["location"].to_string()).collect();
        if (r["rule"] == "pread" || r["rule"] == "pwrite") && sites.len() == 1 {
            let before = r["before"].as_str().unwrap();
            assert!(before.starts_with("fseek(") && !before.contains("lseek("), "make -j2: {}: {before}", r["rule"]);
        }
    }
    // Code locations are the programs' own code, never libc's stdio nor
    // the loader (issue 10, item 8): make's output, which it writes through
    // stdio, is located in make, and so is every location of the advice.
    let in_libc = |m: &str| {
        let base = m.rsplit('/').next().unwrap_or(m);
        base.starts_with("libc.so") || base.starts_with("ld-linux")
    };
    let stdout_writes: Vec<&str> = p
        .nodes
        .iter()
        .filter(|n| n.syscall == "write" && n.key.descriptor.as_deref() == Some("stdout"))
        .flat_map(|n| n.callsites.iter().map(|c| c.location.module.as_str()))
        .collect();
    assert!(
        !stdout_writes.is_empty() && stdout_writes.iter().all(|m| m.rsplit('/').next() == Some("make")),
        "make's output located in make: {stdout_writes:?}"
    );
    for r in advice["recommendations"].as_array().unwrap() {
        for l in r["locations"].as_array().unwrap() {
            let m = l["location"]["module"].as_str().unwrap();
            assert!(!in_libc(m), "make -j2: {} located in {m}: {l}", r["rule"]);
        }
    }

    // Under the runtime: every process interposed, the same build.
    let ran = c_project(&d.path().join("ran"));
    let o = run_v(&ran, &[make, "-j2"]);
    assert_eq!(built(&ran), want, "the build differs under run");
    let lines = runtime_lines(&stderr(&o));
    assert_eq!(
        lines.len() as u64,
        p.meta.processes,
        "the runtime in {} processes of {}: {}",
        lines.len(),
        p.meta.processes,
        stderr(&o)
    );
    for prog in ["make", "cc1", "as", "ld"] {
        assert!(lines.iter().any(|l| l.0 == prog), "no runtime in {prog}: {}", stderr(&o));
    }
}

// ---------------------------------------------------------------------------
// git on 3,000 files

/// The tree of `make-tree.py` in `dir`.
fn git_tree(dir: &Path, python: &str) -> PathBuf {
    let o = run(Command::new(python).arg(realprog("make-tree.py")).arg(dir).args(["30", "100"]));
    assert!(o.status.success(), "make-tree.py: {}", stderr(&o));
    dir.to_path_buf()
}

/// Every object file of a repository: path → bytes.
fn objects(repo: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut v = BTreeMap::new();
    let base = repo.join(".git/objects");
    for dir in std::fs::read_dir(&base).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.is_file() {
                v.insert(f.strip_prefix(&base).unwrap().to_path_buf(), std::fs::read(&f).unwrap());
            }
        }
    }
    v
}

#[test]
fn git_on_three_thousand_files_is_recorded_and_run_unchanged() {
    let (Some(git), Some(python)) = (program("git", "git"), program("python3", "python3")) else { return };
    let python = python.to_str().unwrap();
    let d = tmp();
    let script = realprog("git-work.sh");
    let script = script.to_str().unwrap();
    let files = 3000u64;
    let plain = git_tree(&d.path().join("plain"), python);
    let want = run(Command::new("sh").arg(script).current_dir(&plain));
    assert!(want.status.success(), "git: {}", stderr(&want));
    let text = String::from_utf8_lossy(&want.stdout);
    assert!(text.contains(" M d07/f042.txt\n") && text.contains(" all the files\n"), "{text}");
    let want_objects = objects(&plain);
    assert!(want_objects.len() as u64 > files, "{} objects for {files} files", want_objects.len());

    let rec = git_tree(&d.path().join("recorded"), python);
    let json = d.path().join("git.json");
    let (o, p) = record(&rec, &json, &["sh", script]);
    assert_eq!(o.stdout, want.stdout, "git's output differs under record");
    assert_eq!(objects(&rec), want_objects, "the repository differs under record");
    // sh and its five gits.
    assert!(p.meta.processes >= 6, "{} processes", p.meta.processes);
    // git add reads each file once and writes each blob to a temporary
    // file of its own: calls in passing on many files, one node each, not
    // one per file, and git add's loop over the files is one loop.
    let g = Graph(&p);
    assert!(
        g.count("read(many files)") >= files && g.count("write(many files)") >= files,
        "{:?}",
        g.heavy_edges(files / 2)
    );
    assert!(p.nodes.len() < 500, "{} nodes for {files} files", p.nodes.len());
    let over_files = |call: &str| {
        p.sequences.loops.iter().any(|l| l.weight * 10 >= files * 9 && l.nodes.iter().any(|&n| p.label(n) == call))
    };
    assert!(over_files("read(many files)") && over_files("write(many files)"), "{:?}", g.heavy_edges(files / 2));
    let (_, advice) = report_and_advise(&json);
    check_no_wrong_advice("git", &p, &advice);

    let ran = git_tree(&d.path().join("ran"), python);
    let o = run_v(&ran, &["sh", script]);
    assert_eq!(o.stdout, want.stdout, "git's output differs under run");
    assert_eq!(objects(&ran), want_objects, "the repository differs under run");
    let fsck = run(Command::new(&git).args(["fsck", "--strict", "--no-progress"]).current_dir(&ran));
    assert!(fsck.status.success(), "git fsck after run: {}", stderr(&fsck));
    // The runtime was in every git; each object is one write to its own
    // file, below the four short writes a file must see to be buffered.
    let lines = runtime_lines(&stderr(&o));
    let gits: Vec<_> = lines.iter().filter(|l| l.0 == "git").collect();
    assert!(gits.len() >= 5, "the runtime in {} gits: {}", gits.len(), stderr(&o));
    assert!(gits.iter().map(|l| l.2).sum::<u64>() >= files, "{gits:?}");
}
