//! `stat`'s table and JSON, rendered through the one `Render` trait.

use std::collections::BTreeMap;
use syscluster_report::{json::Json, text::Text, Render, ReportOptions, Stat};

fn stat() -> Stat {
    let mut by_syscall = BTreeMap::new();
    by_syscall.insert("write".to_string(), vec![10, 30, 20]);
    by_syscall.insert("read".to_string(), vec![5, 5, 5]);
    by_syscall.insert("close".to_string(), vec![1, 1, 2]);
    Stat {
        command: vec!["prog".into(), "-x".into()],
        runs: 3,
        counting_backend: "bpf".into(),
        wall: vec![3_000_000_000, 1_000_000_000, 2_000_000_000],
        user: vec![1_500_000, 1_000_000, 2_000_000],
        system: vec![0, 0, 1_000_000],
        crossings: vec![16, 36, 27],
        by_syscall,
    }
}

#[test]
fn text_table() {
    let out = Text.render(&stat(), &ReportOptions { top: 2, ..Default::default() });
    let want = "\
syscluster stat: prog -x (3 runs)
                          min         median            max
  wall                1.000 s        2.000 s        3.000 s
  user                0.001 s        0.002 s        0.002 s
  system              0.000 s        0.000 s        0.001 s
  crossings                16             27             36

  crossings by system call (median; counted with bpf):
              20  write
               5  read
               1  (1 other calls)
";
    assert_eq!(String::from_utf8(out).unwrap(), want);
}

#[test]
fn text_without_counts_has_no_crossings() {
    let s = Stat { crossings: Vec::new(), by_syscall: BTreeMap::new(), runs: 1, ..stat() };
    let out = String::from_utf8(Text.render(&s, &ReportOptions::default())).unwrap();
    assert!(out.starts_with("syscluster stat: prog -x (1 run)\n"), "{out}");
    assert!(!out.contains("crossings"), "{out}");
}

#[test]
fn json_parses_back() {
    let out = Json.render(&stat(), &ReportOptions::default());
    assert_eq!(out.last(), Some(&b'\n'));
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["format_version"], syscluster_model::formats::STAT_VERSION);
    assert_eq!(v["runs"], 3);
    assert_eq!(v["wall_ns"]["median"], 2_000_000_000u64);
    assert_eq!(v["crossings"]["max"], 36);
    assert_eq!(v["by_syscall"]["write"]["runs"], serde_json::json!([10, 30, 20]));
    let none = Json.render(&Stat { crossings: Vec::new(), ..stat() }, &ReportOptions::default());
    let v: serde_json::Value = serde_json::from_slice(&none).unwrap();
    assert!(v["crossings"].is_null());
}
