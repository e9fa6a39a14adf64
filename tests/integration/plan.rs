//! `syscluster run --plan` end to end: record a corpus program, advise with
//! `--plan-out`, run it under the plan. Each applicable rule leaves the
//! program's output and exit status as they were and removes the crossings
//! it promises (counted with `syscluster stat`, exactly where the program is
//! deterministic); inapplicable clusters are reported and left alone; stale,
//! invalid and foreign plans are refused before the program runs.
//! preload/test (planned.c) checks the semantics in depth: EFAULT, ENOSPC,
//! fork/vfork/threads, every way to observe a pending offset.

use crate::util::*;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use syscluster_advise::plan::Plan;

/// Records `argv` (ptrace: code locations, no privileges) and writes the
/// plan of its advice to `dir/NAME.plan`.
fn plan_of(dir: &Path, name: &str, argv: &[&str]) -> PathBuf {
    let profile = dir.join(format!("{name}.json"));
    let o = run(syscluster().args(["record", "-q", "--backend", "ptrace", "-o"]).arg(&profile).arg("--").args(argv));
    assert!(o.status.success(), "record failed: {}", stderr(&o));
    let plan = dir.join(format!("{name}.plan"));
    let o = run(syscluster()
        .args(["advise", "-q", "--no-calibration", "-o", "/dev/null", "--plan-out"])
        .arg(&plan)
        .arg(&profile));
    assert!(o.status.success(), "advise failed: {}", stderr(&o));
    plan
}

/// `syscluster run [opts] -- argv`.
fn run_with(opts: &[&str], argv: &[&str]) -> Output {
    run(syscluster().arg("run").args(opts).arg("--").args(argv))
}

/// System calls by name of one run of `cmd` (`syscluster stat --json`).
fn counts(cmd: &[OsString]) -> BTreeMap<String, u64> {
    let o = run(syscluster().args(["stat", "--json", "--"]).args(cmd));
    assert!(o.status.success(), "stat failed: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stat --json");
    v["by_syscall"]
        .as_object()
        .unwrap_or_else(|| panic!("no counts: {}", stderr(&o)))
        .iter()
        .map(|(k, x)| (k.clone(), x["median"].as_u64().unwrap()))
        .collect()
}

fn os(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

/// `syscluster run OPTS -- ARGV` as a command line for `stat`.
fn under(opts: &[&str], argv: &[&str]) -> Vec<OsString> {
    let mut v = vec![OsString::from(crate::util::syscluster_path()), "run".into()];
    v.extend(os(opts));
    v.push("--".into());
    v.extend(os(argv));
    v
}

/// The plan at `plan` without its clusters: a run under it does all the
/// checking a run under the plan does, and applies nothing (the baseline
/// for exact counts).
fn empty(plan: &Path) -> PathBuf {
    let mut p = Plan::load(plan).unwrap();
    p.clusters.clear();
    let out = plan.with_extension("empty");
    std::fs::write(&out, p.to_json()).unwrap();
    out
}

fn n(c: &BTreeMap<String, u64>, name: &str) -> u64 {
    c.get(name).copied().unwrap_or(0)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn coalesce_writes_at_the_planned_site() {
    let d = tmp();
    let w8 = corpus("write8");
    let plan = plan_of(d.path(), "w8", &[s(&w8), s(&d.path().join("rec")), "2000"]);
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    let plain = run(Command::new(&w8).arg(&a).arg("20000"));
    let o = run_with(&["-v", "--plan", s(&plan)], &[s(&w8), s(&b), "20000"]);
    assert_eq!(o.status.code(), plain.status.code(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert!(stderr(&o).contains("coalesced at write8.c:23"), "-v says where: {}", stderr(&o));
    // 20000 writes of 8 bytes: 4 made before deferring starts, then every
    // 8193rd goes out with a full 64 KiB buffer in one writev (2 of them),
    // and the last 3610 records in one write at close. (60 s bound: no
    // flush by time.)
    let plain = counts(&os(&[s(&w8), s(&a), "20000"]));
    let planned = counts(&under(&["--flush-interval", "60000", "--plan", s(&plan)], &[s(&w8), s(&b), "20000"]));
    assert_eq!(n(&plain, "write"), 20000);
    assert_eq!((n(&planned, "write"), n(&planned, "writev")), (5, 2), "{planned:?}");
}

/// A program with two write sites: COUNT records to A, then COUNT to B.
const TWO_SITES: &str = r#"
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    int a = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644), b = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    long n = atol(argv[3]);
    for (long i = 0; i < n; i++)
        if (write(a, "aaaaaaa\n", 8) != 8)
            return 1;
    for (long i = 0; i < n; i++)
        if (write(b, "bbbbbbb\n", 8) != 8)
            return 1;
    return 0;
}
"#;

#[test]
fn only_the_planned_site_is_coalesced() {
    let d = tmp();
    std::fs::write(d.path().join("two.c"), TWO_SITES).unwrap();
    let exe = d.path().join("two");
    let o = run(Command::new("gcc").args(["-O2", "-g", "-o"]).arg(&exe).arg(d.path().join("two.c")));
    assert!(o.status.success(), "gcc: {}", stderr(&o));
    let f = |x: &str| d.path().join(x).to_str().unwrap().to_string();
    let full = plan_of(d.path(), "two", &[s(&exe), &f("a0"), &f("b0"), "2000"]);
    // Keep the cluster of A's writes only.
    let mut plan = Plan::load(&full).unwrap();
    assert_eq!(plan.clusters.len(), 2, "one cluster per write site");
    plan.clusters.retain(|c| c.calls[0].descriptor == Some(format!("file {}", f("a0"))));
    assert_eq!(plan.clusters.len(), 1);
    let only_a = d.path().join("a.plan");
    std::fs::write(&only_a, plan.to_json()).unwrap();
    let o = run_with(&["--plan", s(&only_a)], &[s(&exe), &f("a1"), &f("b1"), "5000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let plain = run(Command::new(&exe).args([&f("a2"), &f("b2"), "5000"]));
    assert!(plain.status.success());
    for x in ["a", "b"] {
        assert_eq!(std::fs::read(f(&format!("{x}1"))).unwrap(), std::fs::read(f(&format!("{x}2"))).unwrap());
    }
    // B's 5000 writes are made as they are; of A's, the first 4 (before
    // deferring starts) and one that writes out the other 4996 when B's
    // first write, made directly, must not overtake them.
    let c =
        counts(&under(&["--flush-interval", "60000", "--plan", s(&only_a)], &[s(&exe), &f("a3"), &f("b3"), "5000"]));
    assert_eq!((n(&c, "write"), n(&c, "writev")), (5000 + 5, 0), "{c:?}");
}

#[test]
fn clock_from_the_vdso_at_the_planned_site() {
    let d = tmp();
    let st = corpus("selecttime");
    let plan = plan_of(d.path(), "st", &[s(&st), "1000"]);
    let o = run_with(&["-v", "--plan", s(&plan)], &[s(&st), "5000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("selecttime.c:33") && e.contains("stays a system call"),
        "-v: the clock applied, the select left: {e}"
    );
    let plain = counts(&os(&[s(&st), "5000"]));
    let planned = counts(&under(&["--plan", s(&plan)], &[s(&st), "5000"]));
    assert_eq!(n(&plain, "gettimeofday"), 5000);
    assert_eq!(n(&planned, "gettimeofday"), 0, "{planned:?}");
    assert_eq!(n(&planned, "pselect6"), 5000, "the wait stays");
}

#[test]
fn getpid_from_the_cache_at_the_planned_site() {
    let d = tmp();
    let red = corpus("redundant");
    let f = |x: &str| d.path().join(x).to_str().unwrap().to_string();
    let plan = plan_of(d.path(), "gp", &[s(&red), &f("r0"), "1000", "getpid"]);
    let plain = run(Command::new(&red).args([&f("r1"), "3000", "getpid"]));
    let o = run_with(&["--plan", s(&plan)], &[s(&red), &f("r2"), "3000", "getpid"]);
    assert_eq!(o.status.code(), plain.status.code(), "{}", stderr(&o));
    assert_eq!(std::fs::read(f("r1")).unwrap(), std::fs::read(f("r2")).unwrap());
    // Against the runtime loaded without a plan (its own, its guardian's
    // and the supervisor's getpid counted alike: both coalesce, so both
    // start a guardian): the program's 3000 are gone.
    let base =
        counts(&under(&["--coalesce-writes", "--plan", s(&empty(&plan))], &[s(&red), &f("r3"), "3000", "getpid"]));
    let planned = counts(&under(&["--coalesce-writes", "--plan", s(&plan)], &[s(&red), &f("r4"), "3000", "getpid"]));
    assert!(n(&base, "getpid") >= 3000);
    assert_eq!(n(&planned, "getpid"), n(&base, "getpid") - 3000, "{planned:?}");
}

#[test]
fn lseek_read_become_pread_at_the_planned_sites() {
    let d = tmp();
    let data = d.path().join("data");
    random_file(&data, 64 * 1024);
    let sr = corpus("seekread");
    let plan = plan_of(d.path(), "sr", &[s(&sr), s(&data), "1000"]);
    let o = run_with(&["-v", "--plan", s(&plan)], &[s(&sr), s(&data), "3000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("seekread.c:25"), "{}", stderr(&o));
    // 3000 lseek + read pairs: 3000 preads, and one lseek when the file is
    // closed (the pending offset set). A 60 s bound: no setting by time.
    let base = counts(&under(&["--coalesce-writes", "--plan", s(&empty(&plan))], &[s(&sr), s(&data), "3000"]));
    let planned = counts(&under(&["--flush-interval", "60000", "--plan", s(&plan)], &[s(&sr), s(&data), "3000"]));
    assert_eq!(n(&base, "lseek"), 3000);
    assert_eq!(n(&planned, "lseek"), 1, "{planned:?}");
    // The reads became preads; what is left are the program's others and,
    // in the planned run only, the guardian's start reading
    // /proc/self/maps (it starts at the first pending offset: docs/RUNTIME.md,
    // "Start-up").
    let reads_left = n(&planned, "read") + 3000 - n(&base, "read");
    assert!(reads_left <= 4, "{reads_left} reads more than the base's 3000 fewer: {planned:?}");
    // (and the supervisor's look at the instruction before each of the two
    // sites, to refuse raw syscall instructions)
    assert_eq!(n(&planned, "pread64"), n(&base, "pread64") + 3000 + 2);
}

#[test]
fn inapplicable_clusters_are_reported_and_left_alone() {
    let d = tmp();
    let input = d.path().join("in");
    random_file(&input, 400_000);
    let copy = corpus("copy");
    let plan = plan_of(d.path(), "cp", &[s(&copy), s(&input), s(&d.path().join("o0"))]);
    let o = run_with(&["--plan", s(&plan)], &[s(&copy), s(&input), s(&d.path().join("o1"))]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    for (rule, why) in [
        ("copy-offload", "source change"),
        ("larger-block", "program's own buffer"),
        ("looped-multicall", "kernel module"),
    ] {
        let line = e.lines().find(|l| l.contains(rule)).unwrap_or_else(|| panic!("{rule} not reported: {e}"));
        assert!(line.contains("is not applied") && line.contains(why), "{line}");
        assert!(line.contains("copy.c:24"), "where: {line}");
    }
    assert_eq!(e.lines().count(), 3, "once each: {e}");
    assert_eq!(std::fs::read(&input).unwrap(), std::fs::read(d.path().join("o1")).unwrap());
    // Nothing applied: the runtime is not even loaded.
    let plain = counts(&under(&["--plan", s(&empty(&plan))], &[s(&copy), s(&input), s(&d.path().join("o2"))]));
    let planned = counts(&under(&["--plan", s(&plan)], &[s(&copy), s(&input), s(&d.path().join("o3"))]));
    // The same reads and writes, but for the supervisor's one write per
    // line it printed.
    assert_eq!((n(&planned, "read"), n(&planned, "write")), (n(&plain, "read"), n(&plain, "write") + 3));

    let page = d.path().join("page");
    random_file(&page, 200_000);
    let server = corpus("server");
    let plan = plan_of(d.path(), "srv", &[s(&server), s(&page)]);
    let o = run_with(&["--plan", s(&plan)], &[s(&server), s(&page)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("sendmmsg (server.c:32, server.c:33) is not applied") && e.contains("sendto's result"), "{e}");
    let c = counts(&under(&["--plan", s(&plan)], &[s(&server), s(&page)]));
    let base = counts(&under(&["--plan", s(&empty(&plan))], &[s(&server), s(&page)]));
    let plain = counts(&os(&[s(&server), s(&page)]));
    assert_eq!(n(&plain, "sendto"), 196, "200 000 bytes in 1 KiB datagrams");
    assert_eq!(n(&c, "sendto"), n(&base, "sendto"), "each sent as it is");
}

/// Builds `src` (write8.c with `edit` applied) into `dir/w8`.
fn build_write8(dir: &Path, edit: (&str, &str), flags: &[&str]) -> PathBuf {
    let text = std::fs::read_to_string(root().join("tests/corpus/write8.c")).unwrap();
    assert!(text.contains(edit.0));
    let src = dir.join("w8.c");
    std::fs::write(&src, text.replace(edit.0, edit.1)).unwrap();
    let exe = dir.join("w8");
    let o = run(Command::new("gcc").args(["-O2", "-g"]).args(flags).arg("-o").arg(&exe).arg(&src));
    assert!(o.status.success(), "gcc: {}", stderr(&o));
    exe
}

#[test]
fn a_stale_plan_is_refused_before_the_program_runs() {
    let d = tmp();
    let same = ("\"01234567\", 8) != 8", "\"01234567\", 8) != 8");
    let changed = ("\"01234567\", 8) != 8", "\"0123456\", 7) != 7");
    for (flags, what) in [(&[][..], "build-id"), (&["-Wl,--build-id=none"][..], "is not the code")] {
        let exe = build_write8(d.path(), same, flags);
        let plan = plan_of(d.path(), "w8", &[s(&exe), s(&d.path().join("rec")), "2000"]);
        let p = Plan::load(&plan).unwrap();
        if flags.is_empty() {
            assert!(p.modules[0].build_id.is_some());
        } else {
            assert!(p.modules[0].build_id.is_none());
            assert!(
                p.clusters[0].locations.iter().all(|l| l.code_hash.is_some()),
                "code hashes stand in for the build-id"
            );
        }
        // Unchanged: applied.
        let out = d.path().join("out");
        let o = run_with(&["-v", "--plan", s(&plan)], &[s(&exe), s(&out), "100"]);
        assert!(o.status.success() && stderr(&o).contains("coalesced at w8.c:23"), "{}", stderr(&o));
        std::fs::remove_file(&out).unwrap();
        // Rebuilt from a changed source: refused, and the program never ran.
        build_write8(d.path(), changed, flags);
        let o = run_with(&["--plan", s(&plan)], &[s(&exe), s(&out), "100"]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(125), "{e}");
        assert_eq!(e.lines().count(), 1, "one line: {e}");
        assert!(e.contains("stale plan") && e.contains(s(&exe)) && e.contains(what), "{e}");
        assert!(e.contains("record the program again"), "{e}");
        assert!(!out.exists(), "the program ran");
    }
}

#[test]
fn invalid_and_foreign_plans_are_refused() {
    let d = tmp();
    let out = d.path().join("out");
    let w8 = corpus("write8");
    std::fs::write(d.path().join("junk"), "not json").unwrap();
    std::fs::write(d.path().join("v9"), "{\"plan_version\": 9}").unwrap();
    std::fs::write(d.path().join("nover"), "{\"clusters\": []}").unwrap();
    for (file, says) in [
        ("junk", "is not JSON"),
        ("v9", "plan_version 9"),
        ("nover", "no plan_version"),
        ("missing", "cannot read plan"),
    ] {
        let o = run_with(&["--plan", s(&d.path().join(file))], &[s(&w8), s(&out), "10"]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(125), "{file}: {e}");
        assert_eq!(e.lines().count(), 1, "{file}: {e}");
        assert!(e.starts_with("syscluster: ") && e.contains(says), "{file}: {e}");
        assert!(!out.exists(), "{file}: the program ran");
    }
    // A plan for selecttime given to write8.
    let plan = plan_of(d.path(), "st", &[s(&corpus("selecttime")), "1000"]);
    let o = run_with(&["--plan", s(&plan)], &[s(&w8), s(&out), "10"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(125), "{e}");
    assert!(e.contains("was made for") && e.contains("selecttime") && e.contains("write8"), "{e}");
    assert!(!out.exists());
}

#[test]
fn planned_writes_on_a_full_disk() {
    // As docs/RUNTIME.md defines: the same bytes on disk, and a later
    // write fails with ENOSPC (write8 says so and exits 1, as plain).
    let d = tmp();
    let Some(tmpfs) = SmallTmpfs::mount(d.path(), "256k", "planned_writes_on_a_full_disk") else {
        return;
    };
    let mnt = &tmpfs.0;
    let w8 = corpus("write8");
    let plan = plan_of(d.path(), "w8", &[s(&w8), s(&d.path().join("rec")), "2000"]);
    let f = mnt.join("f");
    let plain = run(Command::new(&w8).arg(&f).arg("100000"));
    let before = std::fs::read(&f).unwrap();
    std::fs::remove_file(&f).unwrap();
    let o = run_with(&["--plan", s(&plan)], &[s(&w8), s(&f), "100000"]);
    assert_eq!(plain.status.code(), Some(1));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stderr(&plain), stderr(&o), "the same message");
    assert!(stderr(&o).contains("No space left on device"));
    assert!(before == std::fs::read(&f).unwrap(), "the full tmpfs holds different bytes");
}

/// A plan names files, and they may be anything: a device that never ends,
/// a FIFO that blocks the open — refused at once with one line, before the
/// program runs.
#[test]
fn plans_naming_files_that_are_not_regular_are_refused_at_once() {
    let d = tmp();
    let out = d.path().join("out");
    let w8 = corpus("write8");
    let fifo = d.path().join("fifo");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let plan = plan_of(d.path(), "w8", &[s(&w8), s(&d.path().join("rec")), "2000"]);
    let mut cases = vec![("/dev/zero".to_string(), "/dev/zero is a character device, not a regular file".to_string())];
    cases.push((s(&fifo).to_string(), format!("{} is a FIFO, not a regular file", s(&fifo))));
    for (module, kind) in [("/dev/zero", "a character device"), (s(&fifo), "a FIFO")] {
        let mut p = Plan::load(&plan).unwrap();
        p.modules.push(syscluster_advise::plan::Module {
            path: module.into(),
            build_id: Some("00aa".into()),
            status: "ok".into(),
        });
        let f = d.path().join(format!("bad-module-{}.plan", cases.len()));
        std::fs::write(&f, p.to_json()).unwrap();
        cases.push((s(&f).to_string(), format!("{module} is {kind}, not a regular file")));
    }
    for (file, says) in cases {
        let started = std::time::Instant::now();
        let o = run_with(&["--plan", &file], &[s(&w8), s(&out), "10"]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(125), "{file}: {e}");
        assert_eq!(e.lines().count(), 1, "{file}: {e}");
        assert!(e.contains(&says), "{file}: {e}");
        assert!(!out.exists(), "{file}: the program ran");
        // Not a timing assertion on the program: a refusal that read /dev/zero
        // or waited on the FIFO would take minutes or forever.
        assert!(started.elapsed().as_secs() < 60, "{file}: took {:?}", started.elapsed());
    }
}

/// 10,000 clusters: the environment cannot carry them all, nor the library
/// hold them; the run goes ahead with the first sites and says which
/// clusters are not applied — never "Argument list too long", never a
/// silent subset.
#[test]
fn a_plan_larger_than_the_runtime_holds_says_what_is_left_out() {
    let d = tmp();
    let w8 = corpus("write8");
    let plan = plan_of(d.path(), "w8", &[s(&w8), s(&d.path().join("rec")), "2000"]);
    let mut p = Plan::load(&plan).unwrap();
    let first =
        p.clusters.iter().find(|c| c.mechanism == "writev-coalescing").expect("write8's plan coalesces").clone();
    p.clusters = (1..=10_000)
        .map(|id| {
            let mut c = first.clone();
            c.id = id;
            c
        })
        .collect();
    let big = d.path().join("big.plan");
    std::fs::write(&big, p.to_json()).unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    let plain = run(Command::new(&w8).arg(&a).arg("5000"));
    let o = run_with(&["--plan", s(&big)], &[s(&w8), s(&b), "5000"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), plain.status.code(), "{e}");
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let per = first.locations.len();
    let want = format!("plan: {} call sites of {} clusters (#", (10_000 - 512 / per) * per, 10_000 - 512 / per);
    assert!(e.contains(&want) && e.contains("are not applied: the runtime holds at most 512 sites"), "{e}");
    assert!(!e.contains("Argument list too long") && !e.contains("cannot hold"), "{e}");
}
