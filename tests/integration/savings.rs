//! What cannot fail from machine noise of the advisor's savings: that the
//! advice on recorded programs refers to the untraced run (the recorder's
//! calibrated cost taken out) and that no saving exceeds it.  The timed
//! comparison of estimated and measured savings is a benchmark:
//! bench/advise-savings/advise_savings.rs, run by `bench/advise-savings.sh`.

use crate::util::*;
use syscluster_advise::Advice;

/// dd with 8-byte blocks and a Python loop of 8-byte writes, recorded (BPF
/// where it may be loaded, else ptrace) and advised with a calibration of
/// this machine: every share is of the untraced run, estimated with the
/// recorder's cost taken out (under BPF, of the program's CPU time, which
/// the recorder measures), and no saving exceeds it (issue 10 item 4:
/// "saves ~47.94 ms" of a 40 ms program).
#[test]
fn advice_on_recorded_programs_refers_to_the_untraced_run() {
    let d = tmp();
    let cache = d.path().join("cache");
    let o = run(syscluster().env("XDG_CACHE_HOME", &cache).env("SYSCLUSTER_MC_CALIBRATE", "none").args([
        "calibrate",
        "-q",
        "--quick",
    ]));
    assert!(o.status.success(), "calibrate: {}", stderr(&o));
    let cal = syscluster_advise::Calibration::load(&cache.join("syscluster/calibration.json"))
        .unwrap()
        .expect("a calibration");
    let out = d.path().join("out");
    let out_s = out.to_str().unwrap().to_string();
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        (
            "dd bs=8",
            ["dd", "if=/dev/zero", &format!("of={out_s}"), "bs=8", "count=50000", "status=none"].iter().map(|s| s.to_string()).collect(),
            "looped-multicall",
        ),
        (
            "python writes of 8 B",
            vec![
                "python3".into(),
                "-c".into(),
                format!("import os\nf = os.open({out_s:?}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)\nfor i in range(100000):\n    os.write(f, b'12345678')\n"),
            ],
            "coalesce-writes",
        ),
    ];
    for (what, argv, rule) in cases {
        let prof = d.path().join(format!("{}.json", rule));
        let o = run(syscluster().args(["record", "-q", "-o"]).arg(&prof).arg("--").args(&argv));
        assert!(o.status.success(), "{what}: record: {}", stderr(&o));
        let p = syscluster_model::Profile::load(&prof).unwrap();
        assert!(
            cal.tracer(&p.meta.backend, &p.meta.mode).is_some(),
            "{what}: the calibration has no cost for the recorder {}/{} that recorded it: {:?}",
            p.meta.backend,
            p.meta.mode,
            cal.tracers
        );
        let o = run(syscluster().env("XDG_CACHE_HOME", &cache).args(["advise", "-q", "--format", "json"]).arg(&prof));
        assert!(o.status.success(), "{what}: advise: {}", stderr(&o));
        let a: Advice = serde_json::from_slice(&o.stdout).unwrap();
        assert!(a.costs.run_untraced && a.costs.tracer_ns_per_call.is_some(), "{what}: {:?}", a.costs);
        let of_cpu = p.meta.backend == "bpf";
        assert_eq!(p.meta.cpu_ns.is_some(), of_cpu, "{what}: the program's CPU time is recorded under BPF only");
        assert!(
            a.costs.run_ns < p.meta.duration_ns as f64,
            "{what}: the untraced run ({} ns) is not shorter than the recorded one ({} ns)",
            a.costs.run_ns,
            p.meta.duration_ns
        );
        assert!(
            a.recommendations.iter().any(|r| r.rule == rule),
            "{what}: no {rule}: {:?}",
            a.recommendations.iter().map(|r| &r.rule).collect::<Vec<_>>()
        );
        for r in &a.recommendations {
            let s = &r.saving;
            assert!(s.ns <= a.costs.run_ns, "{what}: {} saves {} ns of a {} ns run", r.rule, s.ns, a.costs.run_ns);
            let expected = if of_cpu { "untraced CPU time, estimated" } else { "untraced run, estimated" };
            assert_eq!(s.share_of, expected, "{what}: {}", r.rule);
            assert!(
                (s.share_of_run - s.ns / a.costs.run_ns).abs() < 1e-9,
                "{what}: {}: the share is not of the untraced run",
                r.rule
            );
        }
        let o = run(syscluster().env("XDG_CACHE_HOME", &cache).args(["advise", "-q"]).arg(&prof));
        let text = String::from_utf8_lossy(&o.stdout);
        let expected = if of_cpu { "of the untraced CPU time, estimated" } else { "of the untraced run, estimated" };
        assert!(text.contains(expected), "{what}: {text}");
    }
}
