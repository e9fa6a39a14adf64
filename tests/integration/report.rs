//! The report formats: text fits 80 columns, JSON parses back to the same
//! profile, dot renders with Graphviz; merge adds counts.

use crate::util::*;
use syscluster_model::Profile;

fn copy_profile(d: &std::path::Path) -> std::path::PathBuf {
    let input = d.join("in");
    random_file(&input, 5 * 4096);
    let _ = strace_profile(
        d,
        &[corpus("copy").to_str().unwrap(), input.to_str().unwrap(), d.join("out").to_str().unwrap()],
    );
    d.join("strace.json")
}

#[test]
fn text_fits_80_columns_and_has_every_section() {
    let d = tmp();
    let p = copy_profile(d.path());
    let o = run(syscluster().arg("report").arg(&p));
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "too wide ({}): {line}", line.chars().count());
    }
    for section in
        ["Top system calls", "Top edges", "Hot sequences", "Loops", "Value profiles", "I/O patterns", "Losses"]
    {
        assert!(text.contains(section), "missing {section}");
    }
    assert!(text.lines().next().unwrap().starts_with("syscluster profile of:"), "no losses: the title comes first");
    assert!(text.contains("read(3) → write(4)"));
}

#[test]
fn json_is_the_profile() {
    let d = tmp();
    let p = copy_profile(d.path());
    let o = run(syscluster().args(["report", "--format", "json"]).arg(&p));
    let back = Profile::from_slice(&o.stdout, "stdout").expect("report json parses as a profile");
    assert_eq!(back, Profile::load(&p).unwrap());
}

#[test]
fn dot_renders_with_graphviz() {
    let d = tmp();
    let p = copy_profile(d.path());
    let o = run(syscluster().args(["report", "--format", "dot", "-o"]).arg(d.path().join("g.dot")).arg(&p));
    assert!(o.status.success());
    let dot = std::fs::read_to_string(d.path().join("g.dot")).unwrap();
    assert!(dot.contains("->"));
    let svg = run(std::process::Command::new("dot").arg("-Tsvg").arg(d.path().join("g.dot")));
    assert!(svg.status.success(), "dot failed: {}", stderr(&svg));
    let svg = String::from_utf8_lossy(&svg.stdout);
    assert!(svg.contains("<svg") && svg.contains("read(3)"));
    // The heaviest edge is drawn widest.
    let widths: Vec<f64> = dot
        .lines()
        .filter_map(|l| l.split("penwidth=").nth(1))
        .map(|w| w.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert!(widths[0] >= *widths.last().unwrap());
}

#[test]
fn merge_adds_counts() {
    let d = tmp();
    let p = copy_profile(d.path());
    let out = d.path().join("m.json");
    let o = run(syscluster().arg("merge").arg(&p).arg(&p).arg("-o").arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    let one = Profile::load(&p).unwrap();
    let two = Profile::load(&out).unwrap();
    assert_eq!(two.meta.total_calls, 2 * one.meta.total_calls);
    assert_eq!(two.meta.runs, 2);
    let (g1, g2) = (Graph(&one), Graph(&two));
    assert_eq!(g2.edge("read(3)", "write(4)"), 2 * g1.edge("read(3)", "write(4)"));
    let v1 = one.value_profiles.iter().find(|v| v.syscall == "read" && v.arg == "count").unwrap();
    let v2 = two.value_profiles.iter().find(|v| v.syscall == "read" && v.arg == "count").unwrap();
    assert_eq!(v2.observations, 2 * v1.observations);
    assert_eq!(v2.top[0].count, 2 * v1.top[0].count);
    // Profiles keyed differently merge by name, and say so.
    let f = d.path().join("descriptor.json");
    let log = d.path().join("strace.log");
    let o = run(syscluster().args(["import-strace", "-q"]).arg(&log).arg("-o").arg(&f));
    assert!(o.status.success(), "{}", stderr(&o));
    let x = d.path().join("x.json");
    let o = run(syscluster().arg("merge").arg(&p).arg(&f).arg("-o").arg(&x));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("merged by system call name"), "{}", stderr(&o));
    let named = Profile::load(&x).unwrap();
    assert_eq!(named.meta.node_key, syscluster_model::profile::NodeKeyMode::Name);
    assert_eq!(Graph(&named).edge("read", "write"), 2 * g1.edge("read(3)", "write(4)"));
}
