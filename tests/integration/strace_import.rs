//! `import-strace` of real strace logs of the corpus: the exact edge
//! weights each program's header comment states.

use crate::util::*;

#[test]
fn copy_program_of_seed_000() {
    let d = tmp();
    let input = d.path().join("in");
    random_file(&input, 10 * 4096 + 100); // k = 11 blocks
    let out = d.path().join("out");
    let p =
        strace_profile(d.path(), &[corpus("copy").to_str().unwrap(), input.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(std::fs::read(&input).unwrap(), std::fs::read(&out).unwrap());
    let g = Graph(&p);
    assert_eq!(g.edge("read(3)", "write(4)"), 11);
    assert_eq!(g.edge("write(4)", "read(3)"), 11);
    assert_eq!(g.count("write(4)"), 11);
    // The loop is found, entered at read, with its share of all crossings.
    let l =
        p.sequences.loops.iter().find(|s| s.nodes.iter().any(|&n| p.label(n) == "write(4)")).expect("the copy loop");
    assert_eq!(
        p.label(l.nodes[0]),
        "read(3)",
        "loops: {:?}",
        p.sequences.loops.iter().map(|s| s.nodes.iter().map(|&n| p.label(n)).collect::<Vec<_>>()).collect::<Vec<_>>()
    );
    assert_eq!(l.weight, 11);
    assert_eq!(l.crossings, 22);
    assert!((l.share - 22.0 / p.meta.total_calls as f64).abs() < 1e-9);
    // Data dependency: write's count is read's result in every iteration.
    let (r, w) = (
        p.nodes.iter().find(|n| p.label(n.id) == "read(3)").unwrap().id,
        p.nodes.iter().find(|n| p.label(n.id) == "write(4)").unwrap().id,
    );
    let e = p.edges.iter().find(|e| e.from == r && e.to == w).unwrap();
    assert_eq!(e.result_matches.iter().find(|m| m.arg == 2).map(|m| m.count), Some(11));
    // I/O patterns of both files.
    let fin = p.io_patterns.iter().find(|f| f.path == input.to_str().unwrap()).expect("input file pattern");
    assert_eq!((fin.opens, fin.reads, fin.bytes_read), (1, 12, 10 * 4096 + 100));
    assert_eq!(fin.sequential_share, 1.0);
    let fout = p.io_patterns.iter().find(|f| f.path == out.to_str().unwrap()).expect("output file pattern");
    assert_eq!((fout.writes, fout.bytes_written), (11, 10 * 4096 + 100));
    assert_eq!(p.meta.command[1..], [input.to_str().unwrap(), out.to_str().unwrap()]);
}

#[test]
fn loop_of_8_byte_writes() {
    let d = tmp();
    let f = d.path().join("w");
    let p = strace_profile(d.path(), &[corpus("write8").to_str().unwrap(), f.to_str().unwrap(), "1000"]);
    let g = Graph(&p);
    assert_eq!(g.edge("write(3)", "write(3)"), 999);
    assert_eq!(g.edge("write(3)", "close(3)"), 1);
    let vp = p.value_profiles.iter().find(|v| v.syscall == "write" && v.arg == "count").unwrap();
    assert_eq!((vp.top[0].value, vp.top[0].count), (8, 1000));
    let io = p.io_patterns.iter().find(|x| x.path == f.to_str().unwrap()).unwrap();
    assert_eq!(io.class, "short writes");
    assert_eq!(io.bytes_written, 8000);
}

#[test]
fn open_fstat_read_close_of_many_files() {
    let d = tmp();
    let dir = d.path().join("files");
    std::fs::create_dir(&dir).unwrap();
    let prog = corpus("openstat");
    // A first run creates the files, so that the traced run only reads.
    assert!(run(std::process::Command::new(&prog).arg(&dir).arg("40")).status.success());
    let p = strace_profile(d.path(), &[prog.to_str().unwrap(), dir.to_str().unwrap(), "40"]);
    let g = Graph(&p);
    assert_eq!(g.edge("newfstatat(3)", "read(3)"), 40);
    assert_eq!(g.edge("read(3)", "close(3)"), 40);
    assert_eq!(g.edge("openat", "newfstatat(3)"), 41, "40 files + the loader's ld.so.cache");
    assert_eq!(g.edge("access", "access"), 39);
    let small = p.io_patterns.iter().filter(|f| f.path.starts_with(dir.to_str().unwrap())).count();
    assert_eq!(small, 40);
    assert!(p
        .io_patterns
        .iter()
        .filter(|f| f.path.starts_with(dir.to_str().unwrap()))
        .all(|f| f.class == "one-shot small file"));
}

#[test]
fn lseek_then_read() {
    let d = tmp();
    let f = d.path().join("data");
    random_file(&f, 64 * 1024);
    let p = strace_profile(d.path(), &[corpus("seekread").to_str().unwrap(), f.to_str().unwrap(), "200"]);
    let g = Graph(&p);
    assert_eq!(g.edge("lseek(3)", "read(3)"), 200);
    assert_eq!(g.edge("read(3)", "lseek(3)"), 199);
    let io = p.io_patterns.iter().find(|x| x.path == f.to_str().unwrap()).unwrap();
    assert_eq!((io.seeks, io.reads), (200, 200));
    assert_eq!(io.class, "random access");
}

#[test]
fn threads_are_separate_chains() {
    let d = tmp();
    let p = strace_profile(d.path(), &[corpus("threads").to_str().unwrap(), d.path().to_str().unwrap(), "4", "300"]);
    let g = Graph(&p);
    for fd in 5..9 {
        let w = format!("write({fd})");
        assert_eq!(g.edge(&w, &w), 299, "{w}");
        for other in 5..9 {
            if other != fd {
                assert_eq!(g.edge(&w, &format!("write({other})")), 0, "no edge across threads");
            }
        }
    }
    assert_eq!(p.meta.threads, 5);
    assert_eq!(p.meta.processes, 1, "the four threads belong to the one process");
}

#[test]
fn fork_and_exec_of_a_writer() {
    let d = tmp();
    let f = d.path().join("w");
    let p = strace_profile(d.path(), &[corpus("forkexec").to_str().unwrap(), f.to_str().unwrap(), "50"]);
    let g = Graph(&p);
    assert_eq!(g.edge("write(3)", "write(3)"), 49);
    assert_eq!(g.count("execve"), 2);
    assert_eq!(p.meta.processes, 2);
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 400);
}

#[test]
fn killed_mid_run() {
    for (how, tail) in [("segv", None), ("kill", Some("kill")), ("term", Some("kill"))] {
        let d = tmp();
        let f = d.path().join("w");
        let p = strace_profile(d.path(), &[corpus("killed").to_str().unwrap(), f.to_str().unwrap(), "20", how]);
        let g = Graph(&p);
        assert_eq!(g.edge("write(3)", "write(3)"), 19, "{how}");
        if let Some(last) = tail {
            assert_eq!(g.edge("write(3)", "getpid"), 1, "{how}");
            assert_eq!(g.edge("getpid", last), 1, "{how}");
        } else {
            assert_eq!(g.count("getpid"), 0);
        }
    }
}

#[test]
fn import_is_deterministic_and_lenient_mode_counts_bad_lines() {
    let d = tmp();
    let f = d.path().join("w");
    let _ = strace_profile(d.path(), &[corpus("write8").to_str().unwrap(), f.to_str().unwrap(), "10"]);
    let log = d.path().join("strace.log");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str("this is not strace output\n");
    let bad = d.path().join("bad.log");
    std::fs::write(&bad, &text).unwrap();
    let out = d.path().join("p.json");
    let o = run(syscluster().args(["import-strace", "-q", "--lenient"]).arg(&bad).arg("-o").arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    let p = syscluster_model::Profile::load(&out).unwrap();
    assert_eq!(p.lost_events.by_cause.get("unparsable_line"), Some(&1));
    assert_eq!(p.lost_events.total, 1);
    let o = run(syscluster().args(["report"]).arg(&out));
    let first = String::from_utf8_lossy(&o.stdout).lines().next().unwrap().to_string();
    assert!(first.starts_with("WARNING: 1 calls lost"), "first line: {first}");
}
