//! `verify`'s table, rendered through the one `Render` trait (the cli's
//! tests/integration/verify.rs reads the same rows from the real command).

use syscluster_report::{text::Text, Exit, Render, ReportOptions, Variant, Verification};

fn variant(command: &str, exit: Exit, wall: Vec<u64>, crossings: Vec<u64>) -> Variant {
    Variant {
        command: command.split(' ').map(String::from).collect(),
        exit,
        files: (1, 2, 0),
        user: wall.iter().map(|w| w / 2).collect(),
        system: wall.iter().map(|w| w / 4).collect(),
        wall,
        crossings,
    }
}

#[test]
fn the_same_in_every_run() {
    let v = Verification {
        runs: 1,
        original: variant("./prog out", Exit::Code(0), vec![2_000_000], vec![1000]),
        candidate: variant("syscluster run -- ./prog out", Exit::Code(0), vec![1_000_000], vec![12]),
        ..Default::default()
    };
    let want = "\
syscluster verify (1 run each, interleaved)
  original:  ./prog out
  candidate: syscluster run -- ./prog out

  (median of runs)               original        candidate
  exit                                  0                0
  files created                         1                1
  files changed                         2                2
  files deleted                         0                0
  wall                            0.002 s          0.001 s
  user                            0.001 s          0.001 s
  system                          0.001 s          0.000 s
  crossings                          1000               12

same: stdout, stderr, exit status and files are identical in every run
";
    assert_eq!(String::from_utf8(Text.render(&v, &ReportOptions::default())).unwrap(), want);
}

#[test]
fn differences_under_injected_faults() {
    let v = Verification {
        runs: 3,
        original: variant("a", Exit::Code(1), vec![3_000_000, 1_000_000, 2_000_000], vec![]),
        candidate: variant("b", Exit::Signal(15), vec![5_000_000, 5_000_000, 4_000_000], vec![]),
        traced: true,
        faults_injected: vec!["write:ENOSPC@3".into(), "read:EIO@1".into()],
        fs_limit: Some(65536),
        differences: (1..=10).map(|i| (1 + i % 3, format!("difference {i}"))).collect(),
    };
    let want = "\
syscluster verify (3 runs each, interleaved)
  original:  a
  candidate: b
  faults:    write:ENOSPC@3 injected in both; read:EIO@1 injected in both
  each copy on a tmpfs of 65536 bytes

  (median of runs)               original        candidate
  exit                                  1       killed(15)
  files created                         1                1
  files changed                         2                2
  files deleted                         0                0
  wall (ptrace)                   0.002 s          0.005 s

DIFFERENT (10 differences):
  - run 2: difference 1
  - run 3: difference 2
  - run 1: difference 3
  - run 2: difference 4
  - run 3: difference 5
  - run 1: difference 6
  - run 2: difference 7
  - run 3: difference 8
  … and 2 more
";
    assert_eq!(String::from_utf8(Text.render(&v, &ReportOptions::default())).unwrap(), want);
}
