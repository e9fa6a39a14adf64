//! `syscluster run` and `syscluster stat` through the command line (the
//! runtime's own tests in crates/runtime and runtime/test cover the
//! semantics in depth).

use crate::util::*;

#[test]
fn run_keeps_output_and_exit_status() {
    let d = tmp();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    let o = run(std::process::Command::new(corpus("write8")).arg(&a).arg("5000"));
    assert!(o.status.success());
    let o = run(syscluster().args(["run", "--"]).arg(corpus("write8")).arg(&b).arg("5000"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    // The exit status passes through, signals as 128 + N.
    let o = run(syscluster().args(["run", "--"]).arg(corpus("killed")).arg(d.path().join("k")).arg("10").arg("segv"));
    assert_eq!(o.status.code(), Some(128 + 11));
    assert_eq!(std::fs::read(d.path().join("k")).unwrap(), b"killme!\n".repeat(10), "acknowledged writes survive SIGSEGV");
    let o = run(syscluster().args(["run", "--", "/no/such/cmd"]));
    assert_eq!(o.status.code(), Some(127));
    assert!(stderr(&o).contains("command not found"));
}

#[test]
fn stat_json_counts_and_times() {
    let d = tmp();
    let o = run(syscluster().args(["stat", "--json", "-r", "2", "--"]).arg(corpus("write8")).arg(d.path().join("w")).arg("300"));
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stat --json is JSON");
    assert_eq!(v["format_version"], 1);
    assert_eq!(v["runs"], 2);
    assert_eq!(v["wall_ns"]["runs"].as_array().unwrap().len(), 2);
    assert!(v["wall_ns"]["min"].as_u64().unwrap() > 0);
    if v["crossings"].is_null() {
        panic!("no crossings counted: {}", stderr(&o));
    }
    // write8 makes exactly 300 writes.
    assert_eq!(v["by_syscall"]["write"]["median"], 300);
    assert_eq!(v["by_syscall"]["close"]["min"].as_u64().unwrap() >= 1, true);
}
