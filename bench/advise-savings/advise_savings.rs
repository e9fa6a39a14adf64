//! The advisor's estimates against measurements: for each corpus
//! recommendation this machine can apply, the program is profiled, the
//! advice (with a fresh calibration) gives the estimated saving, the
//! rewritten program (the rewrite applied as the recommendation says) and
//! the original both run, and the measured saving must be within a factor
//! of 2 of the estimate.
//!
//! Time is the CPU time (user + system) of the program, from wait4: on a
//! shared machine it moves less than wall time. Each side runs 9 times,
//! alternating, and the least disturbed run (the minimum) counts, as in the
//! calibration. A case whose ratio falls outside the bound is measured
//! again, at most twice: noise passes, a wrong model does not.
//!
//! A timed test, so a benchmark: this target is left out of `cargo test`
//! (`test = false` in Cargo.toml) and run by `bench/advise-savings.sh`,
//! which copies the table (target/tmp/advise-savings.md) into
//! docs/BENCHMARKS.md.

#[path = "../../tests/integration/util.rs"]
#[allow(dead_code)]
mod util;

use crate::util::*;
use std::path::Path;
use std::process::{Command, Stdio};
use syscluster_advise::Advice;

/// CPU time of one run of `argv`, ns; output files are removed first so
/// that no run pays for truncating the previous one's.
fn cpu_ns(argv: &[String], outputs: &[&Path]) -> f64 {
    for o in outputs {
        let _ = std::fs::remove_file(o);
    }
    let child = Command::new(&argv[0])
        .args(&argv[1..])
        .env_remove("LD_LIBRARY_PATH")
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {argv:?}: {e}"));
    let mut status = 0;
    // SAFETY: zeroed rusage is valid; wait4 reaps the child we spawned.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut ru) };
    assert_eq!(pid, child.id() as i32, "wait4: {}", std::io::Error::last_os_error());
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{argv:?} failed: status {status:#x}");
    let t = |tv: libc::timeval| tv.tv_sec as f64 * 1e9 + tv.tv_usec as f64 * 1e3;
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// (before, after): the least disturbed of `reps` alternating runs of each.
fn measure(before: &[String], after: &[String], outputs: &[&Path], reps: usize) -> (f64, f64) {
    let (mut b, mut a) = (f64::MAX, f64::MAX);
    for _ in 0..reps {
        b = b.min(cpu_ns(before, outputs));
        a = a.min(cpu_ns(after, outputs));
    }
    (b, a)
}

struct Case {
    rule: &'static str,
    what: &'static str,
    before: Vec<String>,
    after: Vec<String>,
    outputs: Vec<std::path::PathBuf>,
}

#[test]
fn estimated_savings_are_within_a_factor_of_2_of_measured_ones() {
    let d = tmp();
    let cache = d.path().join("cache");
    // libmulticall's figures play no part in these estimates.
    let calibrate = || {
        let o = run(syscluster().env("XDG_CACHE_HOME", &cache).env("SYSCLUSTER_MC_CALIBRATE", "none").args([
            "calibrate",
            "-q",
            "--samples",
            "15",
        ]));
        assert!(o.status.success(), "calibrate: {}", stderr(&o));
    };
    calibrate();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let c = |name: &str| s(&corpus(name));
    random_file(&d.path().join("data"), 64 * 1024);
    random_file(&d.path().join("big"), 40 << 20);
    random_file(&d.path().join("page"), 20 << 20);
    let (data, big, page, out) =
        (s(&d.path().join("data")), s(&d.path().join("big")), s(&d.path().join("page")), d.path().join("out"));
    let n = "100000".to_string();
    let cases = vec![
        Case {
            rule: "pread",
            what: "seekread → seekread_pread, 100,000 lseek+read of 512 B",
            before: vec![c("seekread"), data.clone(), n.clone()],
            after: vec![c("seekread_pread"), data.clone(), n.clone()],
            outputs: vec![],
        },
        Case {
            rule: "coalesce-writes",
            what: "write8 → write8_coalesced (64 KiB buffer), 100,000 writes of 8 B",
            before: vec![c("write8"), s(&out), n.clone()],
            after: vec![c("write8_coalesced"), s(&out), n.clone()],
            outputs: vec![out.clone()],
        },
        Case {
            rule: "coalesce-writes",
            what: "write8 → the same binary under `syscluster run --coalesce-writes`, 100,000 writes of 8 B",
            before: vec![c("write8"), s(&out), n.clone()],
            after: vec![
                s(&std::path::Path::new(env!("CARGO_BIN_EXE_syscluster-cli")).with_file_name("syscluster")),
                "run".into(),
                "--coalesce-writes".into(),
                "--".into(),
                c("write8"),
                s(&out),
                n.clone(),
            ],
            outputs: vec![out.clone()],
        },
        Case {
            rule: "copy-offload",
            what: "copy → copy_cfr, 40 MiB in 4 KiB blocks",
            before: vec![c("copy"), big.clone(), s(&out)],
            after: vec![c("copy_cfr"), big.clone(), s(&out)],
            outputs: vec![out.clone()],
        },
        Case {
            rule: "larger-block",
            what: "copy_block 4 KiB → 128 KiB, 40 MiB",
            before: vec![c("copy_block"), big.clone(), s(&out), "4096".into()],
            after: vec![c("copy_block"), big.clone(), s(&out), "131072".into()],
            outputs: vec![out.clone()],
        },
        Case {
            rule: "select-clock",
            what: "selecttime → selecttime_vdso, 100,000 select + gettimeofday",
            before: vec![c("selecttime"), n.clone()],
            after: vec![c("selecttime_vdso"), n.clone()],
            outputs: vec![],
        },
        Case {
            rule: "sendmmsg",
            what: "server → server_sendmmsg, 20 MiB in 1 KiB datagrams",
            before: vec![c("server"), page.clone()],
            after: vec![c("server_sendmmsg"), page.clone()],
            outputs: vec![],
        },
    ];
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for case in &cases {
        let dir = d.path().join(case.rule);
        std::fs::create_dir_all(&dir).unwrap();
        let argv: Vec<&str> = case.before.iter().map(|x| x.as_str()).collect();
        strace_profile(&dir, &argv);
        // A calibration disturbed by other work can price a rewrite as no
        // cheaper, and the rule then (rightly) stays silent: measure again once.
        let advise = || {
            let o = run(syscluster()
                .env("XDG_CACHE_HOME", &cache)
                .args(["advise", "-q", "--format", "json"])
                .arg(dir.join("strace.json")));
            assert!(o.status.success(), "advise: {}", stderr(&o));
            let a: Advice = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(a.costs.source, "calibration");
            a.recommendations.into_iter().find(|r| r.rule == case.rule)
        };
        let r = match advise() {
            Some(r) => r,
            None => {
                eprintln!("{}: no {} recommendation; calibrating again", case.what, case.rule);
                calibrate();
                advise().unwrap_or_else(|| panic!("{}: no {} recommendation, twice calibrated", case.what, case.rule))
            }
        };
        assert!(r.applicable_here);
        let estimate = r.saving.ns;
        let outputs: Vec<&Path> = case.outputs.iter().map(|p| p.as_path()).collect();
        let mut tries = Vec::new();
        let (mut before, mut after, mut ratio) = (0.0, 0.0, 0.0);
        for _ in 0..3 {
            (before, after) = measure(&case.before, &case.after, &outputs, 9);
            ratio = (before - after) / estimate;
            tries.push(format!("{ratio:.2}"));
            if (0.5..=2.0).contains(&ratio) {
                break;
            }
        }
        eprintln!(
            "{}: estimated {:.1} ms, measured {:.1} ms ({:.1} → {:.1} ms), ratio {}",
            case.rule,
            estimate / 1e6,
            (before - after) / 1e6,
            before / 1e6,
            after / 1e6,
            tries.join(", ")
        );
        rows.push(format!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} |",
            case.rule,
            case.what,
            estimate / 1e6,
            before / 1e6,
            after / 1e6,
            (before - after) / 1e6,
            ratio
        ));
        if !(0.5..=2.0).contains(&ratio) {
            failures.push(format!("{}: measured/estimated = {} (tries)", case.rule, tries.join(", ")));
        }
    }
    let cal = syscluster_advise::Calibration::load(&cache.join("syscluster/calibration.json")).unwrap().unwrap();
    let table = format!(
        "Measured on {} (crossing {:.0} ns, function call {:.1} ns).\n\n| rule | program, before → after | estimated saving (ms) | before (ms CPU) | after (ms CPU) | measured saving (ms) | measured / estimated |\n|---|---|---|---|---|---|---|\n{}\n",
        cal.machine,
        cal.crossing.syscall_ns,
        cal.crossing.function_call_ns,
        rows.join("\n")
    );
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(dir.join("advise-savings.md"), &table).unwrap();
    eprintln!("{table}");
    assert!(failures.is_empty(), "estimates off by more than 2×: {failures:?}\n{table}");
}
