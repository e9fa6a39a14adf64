//! `syscluster advise` on the corpus: each program gets exactly the
//! recommendations its pattern calls for, at the right nodes and (with
//! `record`) the right `file:line`; clean programs and the rewritten ones
//! get none. Also: output formats, the plan, the calibration cache.

use crate::util::*;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use syscluster_advise::plan::Plan;
use syscluster_advise::Advice;

/// `advise --format json` of a profile, without a calibration (the rules do
/// not depend on it; savings tests calibrate).
fn advise(profile: &Path) -> Advice {
    let o = run(syscluster().args(["advise", "-q", "--no-calibration", "--format", "json"]).arg(profile));
    assert!(o.status.success(), "advise failed: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("advise printed no advice JSON: {e}"))
}

/// Imports a strace log of `argv` and advises on it.
fn strace_advice(dir: &Path, argv: &[&str]) -> Advice {
    strace_profile(dir, argv);
    advise(&dir.join("strace.json"))
}

fn rules(a: &Advice) -> BTreeSet<String> {
    a.recommendations.iter().map(|r| r.rule.clone()).collect()
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The labels of the nodes each recommendation of `rule` changes.
fn labels(a: &Advice, rule: &str) -> Vec<Vec<String>> {
    a.recommendations.iter().filter(|r| r.rule == rule).map(|r| r.labels.clone()).collect()
}

fn prog(name: &str) -> String {
    corpus(name).to_str().unwrap().to_string()
}

fn p(d: &tempfile::TempDir, name: &str) -> String {
    d.path().join(name).to_str().unwrap().to_string()
}

#[test]
fn copy_loop_gets_copy_file_range_larger_block_and_looped_multicall() {
    let d = tmp();
    random_file(&d.path().join("in"), 400_000);
    strace_profile(d.path(), &[&prog("copy"), &p(&d, "in"), &p(&d, "out")]);
    // This machine, but without the kernel module (the test says so rather
    // than finds it: the module's guest has one).
    let mut h = syscluster_calibrate::host::describe(Path::new(syscluster_model::host::KMOD_DEVICE));
    h.kmod.usable = false;
    let host = d.path().join("host.json");
    h.save(&host).unwrap();
    let o = run(syscluster()
        .args(["advise", "-q", "--no-calibration", "--format", "json", "--host"])
        .arg(&host)
        .arg(d.path().join("strace.json")));
    assert!(o.status.success(), "advise failed: {}", stderr(&o));
    let a: Advice = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rules(&a), set(&["copy-offload", "larger-block", "looped-multicall"]));
    for r in ["copy-offload", "larger-block", "looped-multicall"] {
        assert_eq!(labels(&a, r), [["read(3)", "write(4)"]], "{r}");
    }
    let c = a.recommendations.iter().find(|r| r.rule == "copy-offload").unwrap();
    assert_eq!(c.mechanism, "copy_file_range", "both ends are regular files");
    assert!(c.saving.ns > 0.0 && c.saving.crossings_removed >= 190);
    assert!(
        !a.recommendations.iter().find(|r| r.rule == "looped-multicall").unwrap().applicable_here,
        "a host without the kernel module"
    );
}

#[test]
fn short_writes_get_coalescing() {
    let d = tmp();
    let a = strace_advice(d.path(), &[&prog("write8"), &p(&d, "w"), "2000"]);
    assert_eq!(rules(&a), set(&["coalesce-writes"]));
    assert_eq!(labels(&a, "coalesce-writes"), [["write(3)"]]);
    let r = &a.recommendations[0];
    assert!(r.how.contains("syscluster run --coalesce-writes"), "a regular file: {}", r.how);
    assert_eq!(r.saving.crossings_removed, 1998, "1999 consecutive writes become one");
}

#[test]
fn threads_and_children_get_coalescing_per_descriptor() {
    let d = tmp();
    std::fs::create_dir(d.path().join("t")).unwrap();
    let a = strace_advice(d.path(), &[&prog("threads"), &p(&d, "t"), "4", "1000"]);
    assert_eq!(rules(&a), set(&["coalesce-writes"]));
    let mut l = labels(&a, "coalesce-writes");
    l.sort();
    assert_eq!(l, [["write(5)"], ["write(6)"], ["write(7)"], ["write(8)"]]);
    let a = strace_advice(d.path(), &[&prog("forkexec"), &p(&d, "f"), "1000"]);
    assert_eq!(rules(&a), set(&["coalesce-writes"]), "the exec'd child's writes");
    // stdio flushed after every record: the writes come from fflush.
    let a = strace_advice(d.path(), &[&prog("stdio"), &p(&d, "s"), "1000"]);
    assert_eq!(rules(&a), set(&["coalesce-writes"]));
    assert_eq!(labels(&a, "coalesce-writes"), [["write(3)"]]);
}

#[test]
fn lseek_read_gets_pread() {
    let d = tmp();
    random_file(&d.path().join("data"), 64 * 1024);
    let a = strace_advice(d.path(), &[&prog("seekread"), &p(&d, "data"), "1000"]);
    assert_eq!(rules(&a), set(&["pread"]));
    assert_eq!(labels(&a, "pread"), [["lseek(3)", "read(3)"]]);
}

#[test]
fn select_gettimeofday_gets_the_specialized_call() {
    let d = tmp();
    let a = strace_advice(d.path(), &[&prog("selecttime"), "1000"]);
    assert_eq!(rules(&a), set(&["select-clock"]));
    // glibc's select is the pselect6 system call.
    assert_eq!(labels(&a, "select-clock"), [["pselect6", "gettimeofday"]]);
}

#[test]
fn read_sendto_server_gets_sendmmsg_and_looped_multicall() {
    let d = tmp();
    random_file(&d.path().join("page"), 200_000);
    let a = strace_advice(d.path(), &[&prog("server"), &p(&d, "page")]);
    assert_eq!(rules(&a), set(&["sendmmsg", "looped-multicall"]));
    assert_eq!(labels(&a, "sendmmsg"), [["read(3)", "sendto(4)"]]);
    assert_eq!(labels(&a, "looped-multicall"), [["read(3)", "sendto(4)"]]);
}

#[test]
fn open_fstat_read_close_gets_a_multicall() {
    let d = tmp();
    let dir = d.path().join("files");
    std::fs::create_dir(&dir).unwrap();
    assert!(run(Command::new(corpus("openstat")).arg(&dir).arg("200")).status.success());
    let a = strace_advice(d.path(), &[&prog("openstat"), dir.to_str().unwrap(), "200"]);
    assert_eq!(rules(&a), set(&["multicall"]));
    let l = &labels(&a, "multicall")[0];
    let want: BTreeSet<&str> = ["openat", "newfstatat(3)", "read(3)", "close(3)"].into();
    assert_eq!(l.iter().map(|s| s.as_str()).collect::<BTreeSet<_>>(), want);
    let s = a
        .sequences
        .iter()
        .find(|s| s.kind == "hot_path" && s.nodes.len() == 4)
        .expect("the open/fstat/read/close path");
    // The fd of fstat and read is openat's result (close starts the path).
    let open_at = s.labels.iter().position(|l| l == "openat").unwrap();
    let fed: BTreeSet<&str> =
        s.dependencies.iter().filter(|d| d.from == open_at).map(|d| s.labels[d.to].as_str()).collect();
    assert!(fed.contains("newfstatat(3)") && fed.contains("read(3)"), "{:?}", s.dependencies);
}

#[test]
fn redundant_calls() {
    let d = tmp();
    let f = p(&d, "r");
    let red = prog("redundant");
    assert_eq!(rules(&strace_advice(d.path(), &[&red, &f, "1000", "lseek"])), set(&["redundant-lseek"]));
    assert_eq!(rules(&strace_advice(d.path(), &[&red, &f, "1000", "getpid"])), set(&["redundant-getpid"]));
    let a = strace_advice(d.path(), &[&red, &f, "1000", "fstat"]);
    // fstat + pread of the same bytes each time: the fstat is redundant; the
    // pair is also a (kernel-module) multi-call.
    assert_eq!(rules(&a), set(&["redundant-fstat", "multicall"]));
    assert_eq!(labels(&a, "redundant-fstat"), [["newfstatat(3)"]]);
}

#[test]
fn stat_storm_reopen_datagrams_and_raw_clock() {
    let d = tmp();
    std::fs::create_dir(d.path().join("s")).unwrap();
    let a = strace_advice(d.path(), &[&prog("statstorm"), &p(&d, "s"), "300"]);
    assert_eq!(rules(&a), set(&["stat-storm"]));
    assert_eq!(a.recommendations[0].saving.bound, "upper_bound");
    // A configuration the program writes (it creates it) is never kept
    // open; one that exists before the run is.
    let a = strace_advice(d.path(), &[&prog("reopen"), &p(&d, "conf"), "300"]);
    assert!(!rules(&a).contains("reopen-same-file"), "{:?}", rules(&a));
    let a = strace_advice(d.path(), &[&prog("reopen"), &p(&d, "conf"), "300"]);
    assert!(rules(&a).contains("reopen-same-file"), "{:?}", rules(&a));
    assert_eq!(
        a.recommendations.iter().find(|r| r.rule == "reopen-same-file").unwrap().parameters["path"],
        p(&d, "conf")
    );
    let a = strace_advice(d.path(), &[&prog("udprecv"), "40"]);
    assert_eq!(rules(&a), set(&["sendmmsg", "recvmmsg"]));
    assert_eq!(labels(&a, "recvmmsg"), [["recvfrom(4)"]]);
    let a = strace_advice(d.path(), &[&prog("rawclock"), "1000"]);
    assert_eq!(rules(&a), set(&["clock-vdso"]));
}

/// No false positives: clean programs, and the corpus programs with the
/// recommended rewrite applied, get no recommendation at all.
#[test]
fn clean_and_rewritten_programs_get_nothing() {
    let d = tmp();
    random_file(&d.path().join("in"), 900_000);
    random_file(&d.path().join("data"), 64 * 1024);
    random_file(&d.path().join("page"), 200_000);
    let cases: Vec<Vec<String>> = vec![
        vec![prog("clean_bigcopy"), p(&d, "in"), p(&d, "o1")],
        vec![prog("clean_few")],
        vec![prog("clean_cpu"), "3000000".into()],
        vec![prog("clean_stdio"), p(&d, "o2"), "5000".into()],
        // CPU-time clocks: a system call the vDSO cannot avoid.
        vec![prog("cputime"), "2000".into()],
        vec![prog("copy_cfr"), p(&d, "in"), p(&d, "o3")],
        vec![prog("copy_block"), p(&d, "in"), p(&d, "o4"), "131072".into()],
        vec![prog("write8_coalesced"), p(&d, "o5"), "5000".into()],
        vec![prog("seekread_pread"), p(&d, "data"), "1000".into()],
        vec![prog("selecttime_vdso"), "1000".into()],
        vec![prog("server_sendmmsg"), p(&d, "page")],
    ];
    for argv in cases {
        let argv: Vec<&str> = argv.iter().map(|s| s.as_str()).collect();
        let a = strace_advice(d.path(), &argv);
        assert!(a.recommendations.is_empty(), "{}: {:?}", argv[0], rules(&a));
    }
}

/// Records with code locations (ptrace: no privileges needed).
fn record(dir: &Path, argv: &[&str]) -> std::path::PathBuf {
    let out = dir.join("rec.json");
    let o = run(syscluster().args(["record", "-q", "--backend", "ptrace", "-o"]).arg(&out).arg("--").args(argv));
    assert!(o.status.success() && out.exists(), "record failed: {}", stderr(&o));
    out
}

/// The `file:line` of each location of the recommendation of `rule`.
fn places(a: &Advice, rule: &str) -> BTreeSet<String> {
    a.recommendations
        .iter()
        .filter(|r| r.rule == rule)
        .flat_map(|r| r.locations.iter().map(|l| l.short.clone()))
        .collect()
}

#[test]
fn recommendations_point_at_the_right_lines() {
    let d = tmp();
    random_file(&d.path().join("in"), 400_000);
    random_file(&d.path().join("data"), 64 * 1024);
    let copy = record(d.path(), &[&prog("copy"), &p(&d, "in"), &p(&d, "out")]);
    let a = advise(&copy);
    assert!(a.profile.callsites);
    for r in ["copy-offload", "larger-block", "looped-multicall"] {
        assert_eq!(places(&a, r), set(&["copy.c:24", "copy.c:25"]), "{r}");
    }
    let s = a
        .sequences
        .iter()
        .find(|s| {
            s.kind == "loop"
                && s.labels == [format!("read(file {})", p(&d, "in")), format!("write(file {})", p(&d, "out"))]
        })
        .unwrap();
    assert_eq!(s.placement.class, "adjacent", "{:?}", s.placement);

    let seek = record(d.path(), &[&prog("seekread"), &p(&d, "data"), "1000"]);
    assert_eq!(places(&advise(&seek), "pread"), set(&["seekread.c:25"]));
    let w8 = record(d.path(), &[&prog("write8"), &p(&d, "w"), "2000"]);
    assert_eq!(places(&advise(&w8), "coalesce-writes"), set(&["write8.c:23"]));
    // Writes issued inside libc (fflush) point at the program's own call.
    let so = record(d.path(), &[&prog("stdio"), &p(&d, "so"), "1000"]);
    assert!(places(&advise(&so), "coalesce-writes").contains("stdio.c:34"));
    let st = record(d.path(), &[&prog("selecttime"), "1000"]);
    assert_eq!(places(&advise(&st), "select-clock"), set(&["selecttime.c:31", "selecttime.c:33"]));
    random_file(&d.path().join("page"), 200_000);
    let srv = record(d.path(), &[&prog("server"), &p(&d, "page")]);
    let a = advise(&srv);
    assert_eq!(places(&a, "sendmmsg"), set(&["server.c:32", "server.c:33"]));
    assert_eq!(places(&a, "looped-multicall"), set(&["server.c:32", "server.c:33"]));
}

#[test]
fn advise_reads_the_compilers_remarks() {
    // The copy loop's plan, compiled by `syscluster cc` with its remarks
    // kept: advise --remarks says which recommendation the compiler applied.
    let d = tmp();
    random_file(&d.path().join("in"), 400_000);
    let profile = record(d.path(), &[&prog("copy"), &p(&d, "in"), &p(&d, "out")]);
    let plan = d.path().join("plan.json");
    let o = run(syscluster()
        .args(["advise", "-q", "--no-calibration", "-o", "/dev/null", "--plan-out"])
        .arg(&plan)
        .arg(&profile));
    assert!(o.status.success(), "{}", stderr(&o));
    // Each location of copy.c holds its function's fingerprint and that of
    // the macros it uses, which the compiler recomputes (a disagreement
    // would leave the loop as it is).
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&plan).unwrap()).unwrap();
    let locs: Vec<&serde_json::Value> =
        v["clusters"].as_array().unwrap().iter().flat_map(|c| c["locations"].as_array().unwrap()).collect();
    let in_copy: Vec<_> = locs.iter().filter(|l| l["file"].as_str().is_some_and(|f| f.ends_with("copy.c"))).collect();
    assert!(
        !in_copy.is_empty() && in_copy.iter().all(|l| l["function_hash"].is_string() && l["macro_hash"].is_string()),
        "{locs:?}"
    );
    let remarks = d.path().join("remarks");
    let o = run(syscluster()
        .arg("cc")
        .arg("--plan")
        .arg(&plan)
        .arg("--assume-gain")
        .arg("--remarks")
        .arg(&remarks)
        .args(["-O2", "-g"])
        .arg(root().join("tests/corpus/copy.c"))
        .arg("-o")
        .arg(d.path().join("copy_sc")));
    assert!(o.status.success(), "syscluster cc: {}", stderr(&o));
    let o = run(syscluster()
        .args(["advise", "-q", "--no-calibration", "--format", "json", "--remarks"])
        .arg(&remarks)
        .arg(&profile));
    assert!(o.status.success(), "{}", stderr(&o));
    let a: Advice = serde_json::from_slice(&o.stdout).unwrap();
    let verdict = |rule: &str| a.recommendations.iter().find(|r| r.rule == rule).unwrap().compiler.clone().unwrap();
    let offload = verdict("copy-offload");
    assert!(offload.applied && offload.decided && offload.remark == "Clustered", "{offload:?}");
    assert!(offload.at.starts_with("copy.c:2"), "{offload:?}");
    // The other rules' calls are in that multi-call already.
    let block = verdict("larger-block");
    assert!(!block.applied && block.message.contains("already in the multi-call"), "{block:?}");
    // The text says it under each recommendation.
    let o = run(syscluster().args(["advise", "-q", "--no-calibration", "--remarks"]).arg(&remarks).arg(&profile));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("compiler: applied at copy.c:2"), "{text}");
    // Remarks of no use: one line, exit 1 (as a profile that cannot be read).
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = run(syscluster().args(["advise", "-q", "--no-calibration", "--remarks"]).arg(&empty).arg(&profile));
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("no remark files (*.opt.yaml)"), "{}", stderr(&o));
    std::fs::write(empty.join("x.opt.yaml"), "--- !Passed\nDebugLoc: { File: 'a.c' }\n").unwrap();
    let o = run(syscluster().args(["advise", "-q", "--no-calibration", "--remarks"]).arg(&empty).arg(&profile));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("x.opt.yaml: line 2: DebugLoc without File and Line"), "{}", stderr(&o));
}

/// The build-id `readelf -n` prints for a file.
fn readelf_build_id(path: &Path) -> Option<String> {
    let o = Command::new("readelf").arg("-n").arg(path).output().ok()?;
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(|s| s.trim().to_string()))
}

#[test]
fn plan_out_names_clusters_locations_and_build_ids() {
    let d = tmp();
    random_file(&d.path().join("in"), 400_000);
    let profile = record(d.path(), &[&prog("copy"), &p(&d, "in"), &p(&d, "out")]);
    let plan_path = d.path().join("plan.json");
    let o = run(syscluster()
        .args(["advise", "-q", "--no-calibration", "-o", "/dev/null", "--plan-out"])
        .arg(&plan_path)
        .arg(&profile));
    assert!(o.status.success(), "{}", stderr(&o));
    let plan = Plan::load(&plan_path).expect("a valid plan");
    let rules: BTreeSet<&str> = plan.clusters.iter().map(|c| c.rule.as_str()).collect();
    assert_eq!(rules, ["copy-offload", "larger-block", "looped-multicall"].into());
    let c = plan.clusters.iter().find(|c| c.rule == "copy-offload").unwrap();
    assert_eq!(
        c.calls.iter().map(|x| (x.syscall.as_str(), x.descriptor.clone())).collect::<Vec<_>>(),
        [("read", Some(format!("file {}", p(&d, "in")))), ("write", Some(format!("file {}", p(&d, "out"))))]
    );
    assert_eq!(c.calls[1].results.get("count"), Some(&0), "write's count is read's result");
    assert!(c.locations.iter().all(|l| l.module.ends_with("/bin/copy") && l.function.as_deref() == Some("main")));
    let m = plan.modules.iter().find(|m| m.path.ends_with("/bin/copy")).expect("the program's module");
    let want = readelf_build_id(&corpus("copy")).expect("gcc on Debian writes a build-id");
    assert_eq!(m.build_id.as_deref(), Some(want.as_str()));
}

#[test]
fn formats_and_bad_input() {
    let d = tmp();
    let a = strace_advice(d.path(), &[&prog("write8"), &p(&d, "w"), "2000"]);
    assert_eq!(a.advice_version, 1);
    let profile = d.path().join("strace.json");
    let o = run(syscluster().args(["advise", "-q", "--no-calibration"]).arg(&profile));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("#1 Coalesce consecutive small writes") && text.contains("[coalesce-writes]"), "{text}");
    let html = d.path().join("a.html");
    let o =
        run(syscluster().args(["advise", "-q", "--no-calibration", "--format", "html", "-o"]).arg(&html).arg(&profile));
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("data-rule=\"coalesce-writes\""));
    // Self-contained: nothing to fetch (the SVG namespace URI is a name, not a fetch).
    for fetch in ["src=", "<link", "url(http", "url(//", "@import", "fetch(", "XMLHttpRequest"] {
        assert!(!page.contains(fetch), "the page would fetch something: {fetch}");
    }
    // Not a profile, missing file: one line, exit 1.
    std::fs::write(d.path().join("junk.json"), "{\"a\": 1}").unwrap();
    for bad in [d.path().join("junk.json"), d.path().join("missing.json")] {
        let o = run(syscluster().args(["advise", "--no-calibration"]).arg(&bad));
        assert_eq!(o.status.code(), Some(1));
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.starts_with("syscluster: "), "{e}");
    }
}

#[test]
fn calibration_is_measured_cached_checked_and_used() {
    let d = tmp();
    let cache = d.path().join("cache");
    let cal_file = cache.join("syscluster/calibration.json");
    // libmulticall's figures are tested below, once.
    let sc = || {
        let mut c = syscluster();
        c.env("XDG_CACHE_HOME", &cache).env("SYSCLUSTER_MC_CALIBRATE", "none");
        c
    };
    // Without one, advise falls back to the profile's times and says so.
    let _ = strace_profile(d.path(), &[&prog("write8"), &p(&d, "w"), "2000"]);
    let profile = d.path().join("strace.json");
    let o = run(sc().args(["advise", "--format", "json"]).arg(&profile));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("no calibration"), "{}", stderr(&o));
    let a: Advice = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(a.costs.source, "profile");
    // Measure: seed 000 table 1 here, with the machine's identity.
    let o = run(sc().args(["calibrate", "-q", "--samples", "3"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("system call (getppid)") && out.contains("function call"), "{out}");
    let c = syscluster_advise::Calibration::load(&cal_file).unwrap().expect("a stored calibration");
    assert!(c.crossing.ratio > 10.0, "a crossing costs more than 10 function calls: {:?}", c.crossing);
    assert!(c.cost("write", "file", 8).is_some() && c.cost("copy_file_range", "file", 1 << 20).is_some());
    assert_eq!(c.machine, syscluster_advise::calibration::Machine::here());
    let o = run(sc().args(["advise", "-q", "--format", "json"]).arg(&profile));
    let a: Advice = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(a.costs.source, "calibration");
    assert_eq!(a.costs.crossing_ns, c.crossing.syscall_ns);
    // A calibration of another kernel is refused, with what to do.
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&cal_file).unwrap()).unwrap();
    v["machine"]["kernel"] = "4.19.0 #1 SMP".into();
    std::fs::write(&cal_file, serde_json::to_vec(&v).unwrap()).unwrap();
    let o = run(sc().args(["advise", "-q"]).arg(&profile));
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("stale calibration") && e.contains("4.19.0") && e.contains("syscluster calibrate"), "{e}");
    // … unless asked to measure again.
    let o = run(sc().args(["advise", "-q", "--recalibrate", "--format", "json"]).arg(&profile));
    assert!(o.status.success(), "{}", stderr(&o));
    let a: Advice = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(a.costs.source, "calibration");
    let c2 = syscluster_advise::Calibration::load(&cal_file).unwrap().unwrap();
    assert_eq!(c2.machine, syscluster_advise::calibration::Machine::here(), "rewritten for this machine");
    // A corrupt one is an error, not a silent fallback.
    std::fs::write(&cal_file, "{\"calibration_version\": 1, \"tool\": ").unwrap();
    let o = run(sc().args(["advise", "-q"]).arg(&profile));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("corrupt calibration"), "{}", stderr(&o));
    let o = run(sc().args(["advise", "-q", "--no-calibration"]).arg(&profile));
    assert!(o.status.success());
}

#[test]
fn calibration_includes_libmulticall_backends_when_built() {
    let mc = root().join("libmulticall/build/mc-calibrate");
    if !mc.exists() {
        need("libmulticall", &format!("libmulticall is not built here ({} is missing)", mc.display()));
        return;
    }
    let d = tmp();
    let o = run(syscluster().env("XDG_CACHE_HOME", d.path()).env_remove("SYSCLUSTER_MC_CALIBRATE").args([
        "calibrate",
        "--quick",
        "-q",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("libmulticall backends, measured by") && out.contains("io_uring:"), "{out}");
    // Stored twice: verbatim in syscluster's file, and where the library reads it.
    let c = syscluster_advise::Calibration::load(&d.path().join("syscluster/calibration.json")).unwrap().unwrap();
    let m = c.multicall.as_ref().expect("libmulticall's figures");
    assert_eq!(m.data["format_version"], 1);
    assert!(d.path().join("syscluster/multicall-calibration.json").exists());
    assert!(
        !syscluster_advise::calibration::MulticallDecisions::of(m).unwrap().min_run.is_empty(),
        "{}",
        m.data["decisions"]
    );
}

/// Issue 11 §2: advice is reproducible from files. The fixture's
/// calibration and host describe a machine that is not this one; advise on
/// them gives the stored output byte for byte, on any machine. After a
/// deliberate change to the rules or the cost model, `SYSCLUSTER_BLESS=1`
/// rewrites the stored output (read its diff before committing it).
#[test]
fn advice_is_reproducible_from_profile_calibration_and_host_files() {
    let dir = root().join("tests/fixtures/advise");
    let advise = |host: &Path, format: &str| {
        let o = run(syscluster()
            .current_dir(&dir)
            .args(["advise", "-q", "--calibration", "calibration.json"])
            .args(["--format", format, "--host"])
            .arg(host)
            .arg("profile.json"));
        assert!(o.status.success(), "advise --host {}: {}", host.display(), stderr(&o));
        o.stdout
    };
    for (format, golden) in [("text", "advice.txt"), ("json", "advice.json")] {
        let out = advise(Path::new("host.json"), format);
        let golden = dir.join(golden);
        if std::env::var_os("SYSCLUSTER_BLESS").is_some() {
            std::fs::write(&golden, &out).unwrap();
        }
        let want = std::fs::read(&golden).unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
        if out != want {
            let (o, w) = (String::from_utf8_lossy(&out), String::from_utf8_lossy(&want));
            let first =
                o.lines().zip(w.lines()).position(|(a, b)| a != b).unwrap_or(o.lines().count().min(w.lines().count()));
            panic!(
                "advise --format {format} differs from {} at line {}:\n  got:  {:?}\n  want: {:?}",
                golden.display(),
                first + 1,
                o.lines().nth(first),
                w.lines().nth(first)
            );
        }
    }
    // The costs are the calibration's, for the host the file describes: the
    // text says so, never "this machine" (issue 10).
    let text = String::from_utf8(advise(Path::new("host.json"), "text")).unwrap();
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.starts_with("syscluster advice for: (several commands) advised for the host host.json describes; costs from the calibration calibration.json, measured on Test CPU"),
        "{text}"
    );
    assert!(!words.contains("this machine"), "{text}");
    // The host file decides what applies: with the module and without the
    // vDSO, the looped multi-call applies and the clock rewrite does not.
    let rule = |a: &Advice, id: &str| {
        a.recommendations.iter().find(|r| r.rule == id).unwrap_or_else(|| panic!("no {id}")).applicable_here
    };
    let stored: Advice = serde_json::from_slice(&std::fs::read(dir.join("advice.json")).unwrap()).unwrap();
    assert!(!rule(&stored, "looped-multicall") && rule(&stored, "select-clock"));
    let t = tmp();
    let mut h: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("host.json")).unwrap()).unwrap();
    h["kmod"]["usable"] = true.into();
    h["vdso"] = false.into();
    let other = t.path().join("host.json");
    std::fs::write(&other, h.to_string()).unwrap();
    let a: Advice = serde_json::from_slice(&advise(&other, "json")).unwrap();
    assert!(rule(&a, "looped-multicall") && !rule(&a, "select-clock"));
    // The identity a calibration must match is the host's, not this machine's.
    h["machine"]["kernel"] = "6.2.0-other #1".into();
    std::fs::write(&other, h.to_string()).unwrap();
    let o = run(syscluster()
        .current_dir(&dir)
        .args(["advise", "-q", "--calibration", "calibration.json", "--host"])
        .arg(&other)
        .arg("profile.json"));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("stale calibration") && stderr(&o).contains("6.2.0-other"), "{}", stderr(&o));
    // A bad host file is a one-line error.
    std::fs::write(&other, "{\"host_version\": 1}").unwrap();
    let o = run(syscluster()
        .current_dir(&dir)
        .args(["advise", "-q", "--no-calibration", "--host"])
        .arg(&other)
        .arg("profile.json"));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("syscluster: bad host description") && stderr(&o).lines().count() == 1,
        "{}",
        stderr(&o)
    );
}

/// Issue 11 §2: given its host, advise asks this machine nothing. Traced
/// with strace, the CLI opens nothing under /proc, /dev or /sys and makes
/// no ioctl; without --host it does (it describes this host), which shows
/// that the trace would see such accesses.
#[test]
fn advise_with_a_host_file_reads_no_proc_or_dev() {
    let dir = root().join("tests/fixtures/advise");
    let t = tmp();
    let trace = |host: bool| {
        let log = t.path().join(format!("strace-{host}.log"));
        let mut c = Command::new("strace");
        c.env_remove("LD_LIBRARY_PATH").current_dir(&dir).args(["-f", "-o"]).arg(&log);
        c.arg(env!("CARGO_BIN_EXE_syscluster-cli")).args(["advise", "-q"]);
        if host {
            c.args(["--calibration", "calibration.json", "--host", "host.json"]);
        } else {
            // (The fixture's calibration is of another machine.)
            c.arg("--no-calibration");
        }
        let o = run(c.args(["--format", "json", "profile.json"]));
        assert!(o.status.success(), "{}", stderr(&o));
        let log = std::fs::read_to_string(&log).unwrap();
        assert!(log.contains("profile.json"), "strace saw the profile read: {log}");
        log.lines()
            .filter(|l| ["\"/proc", "\"/dev", "\"/sys", " ioctl("].iter().any(|w| l.contains(w)))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let with = trace(true);
    assert!(with.is_empty(), "advise --host asked this machine: {with:#?}");
    let without = trace(false);
    assert!(without.iter().any(|l| l.contains("/proc/sys/kernel/osrelease")), "{without:#?}");
}

#[test]
fn calibrate_lists_its_table_and_advise_writes_its_host() {
    let o = run(syscluster().args(["calibrate", "--list"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for m in syscluster_calibrate::measure::TABLE {
        let line = out.lines().find(|l| l.split_whitespace().next() == Some(m.name));
        let line = line.unwrap_or_else(|| panic!("no row {} in {out}", m.name));
        assert!(line.contains(&m.fills.field()), "{line}");
    }
    // The host advise used, written for --host elsewhere: this machine's.
    let t = tmp();
    let host = t.path().join("host.json");
    let profile = root().join("tests/fixtures/advise/profile.json");
    let o = run(syscluster()
        .args(["advise", "-q", "--no-calibration", "-o", "/dev/null", "--host-out"])
        .arg(&host)
        .arg(&profile));
    assert!(o.status.success(), "{}", stderr(&o));
    let h = syscluster_model::host::Host::load(&host).unwrap();
    assert_eq!(h.machine, syscluster_advise::calibration::Machine::here());
    assert_eq!(h, syscluster_calibrate::host::describe(Path::new(syscluster_model::host::KMOD_DEVICE)));
    // Measuring here for another host makes no sense.
    let o = run(syscluster().args(["advise", "--recalibrate", "--host"]).arg(&host).arg(&profile));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn folded_stacks_of_real_profiles() {
    let d = tmp();
    random_file(&d.path().join("in"), 100_000);
    let p_ = strace_profile(d.path(), &[&prog("copy"), &p(&d, "in"), &p(&d, "out")]);
    let o = run(syscluster().args(["report", "--format", "folded"]).arg(d.path().join("strace.json")));
    assert!(o.status.success());
    let f = String::from_utf8(o.stdout).unwrap();
    let total: u64 = f.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
    assert_eq!(total, p_.meta.total_calls);
    assert!(f.lines().any(|l| l.starts_with("[unknown];read ")), "no code locations in a strace log: {f}");
    let rec = record(d.path(), &[&prog("copy"), &p(&d, "in"), &p(&d, "out")]);
    let o = run(syscluster().args(["report", "--format", "folded"]).arg(&rec));
    let f = String::from_utf8(o.stdout).unwrap();
    assert!(f.lines().any(|l| l.starts_with("copy;main (copy.c:24);read ")), "{f}");
    assert!(f.lines().any(|l| l.starts_with("copy;main (copy.c:25);write ")), "{f}");
}
