//! Every backend sees the same program: for each deterministic
//! single-threaded corpus program, the graphs from `bpf aggregate`,
//! `bpf events`, `ptrace` and `import-strace` of a strace log agree on every
//! edge of weight ≥ 2 (issue 2).

use crate::util::*;
use std::path::Path;
use syscluster_model::Profile;

fn record(dir: &Path, name: &str, args: &[&str], argv: &[String]) -> Result<Profile, String> {
    let out = dir.join(format!("{name}.json"));
    // Keyed by fd number, as aggregate mode and `strace_profile` key them.
    let o = run(syscluster()
        .current_dir(dir)
        .args(["record", "-q", "--node-key", "fd", "-o"])
        .arg(&out)
        .args(args)
        .arg("--")
        .args(argv));
    if !out.exists() {
        return Err(stderr(&o));
    }
    Ok(Profile::load(&out).expect("load recorded profile"))
}

/// The programs, each with arguments that make it run the same way every
/// time; their inputs are prepared in `dir`.
fn programs(dir: &Path) -> Vec<(&'static str, Vec<String>)> {
    let p = |s: &Path| s.to_str().unwrap().to_string();
    random_file(&dir.join("in"), 7 * 4096 + 17);
    random_file(&dir.join("data"), 64 * 1024);
    std::fs::create_dir_all(dir.join("files")).unwrap();
    // openstat creates its files on the first run: make them exist already.
    assert!(run(std::process::Command::new(corpus("openstat")).arg(dir.join("files")).arg("20")).status.success());
    // So does reopen with its file.
    assert!(run(std::process::Command::new(corpus("reopen")).arg(dir.join("conf")).arg("1")).status.success());
    vec![
        ("copy", vec![p(&corpus("copy")), p(&dir.join("in")), p(&dir.join("out"))]),
        ("write8", vec![p(&corpus("write8")), p(&dir.join("w")), "300".into()]),
        ("openstat", vec![p(&corpus("openstat")), p(&dir.join("files")), "20".into()]),
        ("seekread", vec![p(&corpus("seekread")), p(&dir.join("data")), "100".into()]),
        ("killed-segv", vec![p(&corpus("killed")), p(&dir.join("k")), "30".into(), "segv".into()]),
        ("killed-kill", vec![p(&corpus("killed")), p(&dir.join("k")), "30".into(), "kill".into()]),
        ("selecttime", vec![p(&corpus("selecttime")), "200".into()]),
        ("server", vec![p(&corpus("server")), p(&dir.join("data"))]),
        ("forkexec", vec![p(&corpus("forkexec")), p(&dir.join("f")), "40".into()]),
        ("reopen", vec![p(&corpus("reopen")), p(&dir.join("conf")), "30".into()]),
    ]
}

#[test]
fn all_backends_agree_on_heavy_edges() {
    let d = tmp();
    let mut bpf_skipped = None;
    for (name, argv) in programs(d.path()) {
        let dir = d.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let argv_str: Vec<&str> = argv.iter().map(|s| s.as_str()).collect();
        let reference = Graph(&strace_profile(&dir, &argv_str)).heavy_edges(2);
        assert!(!reference.is_empty(), "{name}: strace saw no heavy edge");
        let mut backends = vec![("ptrace", vec!["--backend", "ptrace"])];
        if bpf_skipped.is_none() {
            backends.push(("bpf-aggregate", vec!["--backend", "bpf", "--mode", "aggregate"]));
            backends.push(("bpf-events", vec!["--backend", "bpf", "--mode", "events"]));
        }
        for (label, args) in backends {
            match record(&dir, label, &args, &argv) {
                Ok(p) => {
                    assert!(p.lost_events.total == 0, "{name} under {label} lost events: {:?}", p.lost_events);
                    assert_eq!(Graph(&p).heavy_edges(2), reference, "{name}: {label} and strace disagree");
                }
                Err(e) if label.starts_with("bpf") && e.contains("BPF is not available") && !is_root() => {
                    need("bpf", &format!("the BPF backends: {e}"));
                    bpf_skipped = Some(e);
                }
                Err(e) => panic!("{name} under {label}: {e}"),
            }
        }
    }
}
