//! A profile holds the program's calls and names them as the user knows
//! them (issue 10, item 6): not the recorder's PATH search, not a mangled
//! symbol of the recorder for the launch, not the target of a symbolic link
//! for a program started through it.

use crate::util::*;
use syscluster_model::Profile;

#[test]
fn path_search_and_launch_are_not_the_programs() {
    let d = tmp();
    let bin = corpus("write8").parent().unwrap().to_path_buf();
    // Four directories without the program before the one that has it.
    let path = format!("/nonexistent/a:/nonexistent/b:{0}/none:/proc:{1}", d.path().display(), bin.display());
    for (label, args) in record_backends() {
        let out = d.path().join(format!("{label}.json"));
        let o = run(syscluster()
            .env("PATH", &path)
            .args(["record", "-q", "-o"])
            .arg(&out)
            .args(&args)
            .args(["--", "write8"])
            .arg(d.path().join("w"))
            .arg("10"));
        assert!(o.status.success(), "{label}: {}", stderr(&o));
        let p = Profile::load(&out).unwrap();
        let execve: Vec<_> = p.nodes.iter().filter(|n| n.syscall == "execve").collect();
        assert_eq!(
            execve.iter().map(|n| n.count).sum::<u64>(),
            1,
            "{label}: only the program's own execve: {execve:?}"
        );
        assert_eq!(execve[0].errors, 0, "{label}");
        for n in &p.nodes {
            for c in &n.callsites {
                let f = c.location.function.as_deref().unwrap_or("");
                assert!(
                    !f.starts_with("_ZN") && !f.contains("syscluster_record"),
                    "{label}: {} at {:?}",
                    n.syscall,
                    c.location
                );
            }
        }
        if label != "bpf-aggregate" {
            // (aggregate mode has code locations only as node keys)
            let launch = &execve[0].callsites;
            assert_eq!(launch.len(), 1, "{label}: {launch:?}");
            assert_eq!(launch[0].location.module, "[syscluster launch]", "{label}");
        }
    }
}

#[test]
fn program_started_through_a_link_is_named_as_typed() {
    let d = tmp();
    let link = d.path().join("logger");
    std::os::unix::fs::symlink(corpus("write8"), &link).unwrap();
    for (label, args) in record_backends() {
        if label == "bpf-aggregate" {
            continue; // no code locations without --node-key callsite
        }
        let out = d.path().join(format!("{label}.json"));
        let o = run(syscluster()
            .args(["record", "-q", "-o"])
            .arg(&out)
            .args(&args)
            .arg("--")
            .arg(&link)
            .arg(d.path().join("w"))
            .arg("10"));
        assert!(o.status.success(), "{label}: {}", stderr(&o));
        let p = Profile::load(&out).unwrap();
        let write = p.nodes.iter().find(|n| n.syscall == "write" && n.count >= 10).expect("the writes");
        let modules: Vec<&str> = write.callsites.iter().map(|c| c.location.module.as_str()).collect();
        assert_eq!(modules, [link.to_str().unwrap()], "{label}: the program by the name it was started with");
    }
}

/// Time blocked is not time working (issue 10, item 6): BPF measures each
/// call's time off the CPU; the report shows working and blocked time apart.
#[test]
fn blocked_time_is_apart_from_working_time() {
    let d = tmp();
    for (label, args) in record_backends() {
        let out = d.path().join(format!("{label}.json"));
        let o = run(syscluster().args(["record", "-q", "-o"]).arg(&out).args(&args).args([
            "--",
            "sh",
            "-c",
            "sleep 0.3; exit 0",
        ]));
        assert!(o.status.success(), "{label}: {}", stderr(&o));
        let p = Profile::load(&out).unwrap();
        let report = String::from_utf8(run(syscluster().arg("report").arg(&out)).stdout).unwrap();
        if label == "ptrace" {
            assert!(!p.meta.collected.blocked_time, "ptrace does not measure it");
            assert!(!report.contains("blocked"), "{report}");
            continue;
        }
        assert!(p.meta.collected.blocked_time, "{label}");
        let sleep =
            p.nodes.iter().find(|n| n.syscall == "clock_nanosleep" || n.syscall == "nanosleep").expect("the sleep");
        assert!(sleep.blocked_ns >= 250_000_000, "{label}: a 0.3 s sleep is blocked: {sleep:?}");
        assert!(sleep.working_ns() * 10 < sleep.kernel_ns, "{label}: and hardly working: {sleep:?}");
        let wait = p.nodes.iter().find(|n| n.syscall == "wait4").expect("sh waits for sleep");
        assert!(wait.blocked_ns >= 250_000_000, "{label}: {wait:?}");
        assert!(report.contains(" blocked (off the CPU"), "{label}: {report}");
        let working: u64 = p.nodes.iter().map(|n| n.working_ns()).sum();
        assert!(
            working < p.meta.duration_ns,
            "{label}: working time {working} within the wall time {}",
            p.meta.duration_ns
        );
    }
}

/// Hot sequences are cut to fit 80 columns, or $COLUMNS; not with --wide.
#[test]
fn report_wide_cuts_nothing() {
    let d = tmp();
    let out = d.path().join("p.json");
    let o = run(syscluster().args(["record", "-q", "--backend", "ptrace", "-o"]).arg(&out).args([
        "--",
        "sh",
        "-c",
        "ls / >/dev/null; ls / >/dev/null",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    let p = Profile::load(&out).unwrap();
    let longest = p
        .sequences
        .hot_paths
        .iter()
        .take(15)
        .map(|s| s.nodes.iter().map(|&n| p.label(n)).collect::<Vec<_>>().join(" → "))
        .max_by_key(|l| l.chars().count())
        .expect("a hot path");
    assert!(longest.chars().count() > 50, "a sequence longer than 80 columns leave it: {longest}");
    let report = |columns: Option<&str>, wide: bool| {
        let mut c = syscluster();
        match columns {
            Some(n) => c.env("COLUMNS", n),
            None => c.env_remove("COLUMNS"),
        };
        c.arg("report").arg(&out);
        if wide {
            c.arg("--wide");
        }
        String::from_utf8(run(&mut c).stdout).unwrap()
    };
    let sequences = |text: &str| -> Vec<String> {
        let start = text.find("Hot sequences").expect("the section");
        text[start..].lines().skip(3).take_while(|l| !l.is_empty()).map(str::to_string).collect()
    };
    let narrow = report(None, false);
    assert!(sequences(&narrow).iter().all(|l| l.chars().count() <= 80), "{narrow}");
    assert!(!narrow.contains(&longest), "cut at 80 columns");
    assert!(report(Some("300"), false).contains(&longest), "$COLUMNS is honoured");
    assert!(report(None, true).contains(&longest), "--wide cuts nothing");
}
