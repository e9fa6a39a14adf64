//! `run --plan`: checks a plan (docs/PLAN_FORMAT.md) against the program
//! about to run, decides which of its clusters the runtime can apply to an
//! unmodified binary without changing what it does, and hands the library
//! their code locations as `$SYSCLUSTER_PLAN` (the format below).  The
//! library resolves each location to a return address in every process
//! and applies the cluster's mechanism to the calls made from there only.
//!
//! The library's format is the plan line format (docs/PLAN_FORMAT.md, "The
//! plan line format"; version and limits in data/formats.tsv), one record
//! per line, fields separated by tabs:
//!
//! ```text
//! syscluster-plan/1
//! buffer  BYTES                                  coalescing buffer per file
//! module  INDEX  BUILD-ID|-  PATH
//! site    KIND  MODULE  OFFSET  NR  PARAM  CLUSTER  LABEL
//! ```
//!
//! What [`decide`] writes for the plans of tests/fixtures/formats/plan-line
//! is compared with that directory's files, which `preload/test/planline.c`
//! reads with the library's parser.

use std::fmt::Write as _;
use std::path::Path;
use syscluster_model::plan::{Cluster, Plan, PlanLocation};

/// The first line of `$SYSCLUSTER_PLAN`.
pub const SPEC_HEADER: &str = syscluster_model::formats::PLAN_LINE_HEADER;

/// The sites and modules the library holds (data/formats.tsv, shared with
/// `preload/src/plan_line.c`).
pub const MAX_SITES: usize = syscluster_model::formats::PLAN_LINE_MAX_SITES;
pub const MAX_MODULES: usize = syscluster_model::formats::PLAN_LINE_MAX_MODULES;
/// The largest coalescing buffer a plan asks for.
pub const MAX_BUFFER: usize = syscluster_model::formats::PLAN_LINE_MAX_BUFFER;
/// The longest `$SYSCLUSTER_PLAN` the kernel passes: one environment string
/// is at most 32 pages (MAX_ARG_STRLEN), name and NUL included.
pub const MAX_SPEC: usize = 32 * 4096 - "SYSCLUSTER_PLAN=".len() - 1;

/// A plan made ready for the library.
#[derive(Clone, Debug, Default)]
pub struct Prepared {
    /// The value of `$SYSCLUSTER_PLAN`; empty when nothing can be applied.
    pub spec: String,
    /// What is applied where, one line per cluster (for `-v`).
    pub applied: Vec<String>,
    /// Clusters, or calls of clusters, not applied, with the reason.
    pub refused: Vec<String>,
}

/// How the runtime treats one call of a cluster.
enum Treatment {
    /// Applied at its locations: the site kind for the library.
    Site(&'static str),
    /// Part of the cluster but left as it is (the wait of select-clock).
    Stays(&'static str),
    /// Not applied, and why.
    Refused(String),
}

/// What the runtime does with a call `syscall` of a cluster applied by
/// `mechanism` (docs/RUNTIME.md, "Plans").
fn treatment(mechanism: &str, syscall: &str) -> Treatment {
    use Treatment::*;
    match (mechanism, syscall) {
        ("writev-coalescing", "write" | "writev") => Site("write"),
        ("vdso-clock", "gettimeofday" | "clock_gettime" | "time") => Site("clock"),
        ("vdso-clock", _) => Stays("stays a system call"),
        ("cache-id", "getpid") => Site("pid"),
        ("cache-id", "gettid") => Site("tid"),
        ("cache-id", _) => Refused(format!(
            "{syscall}'s answer can change without a call of this process (a user namespace's uid/gid map \
             written by another process), so a cached one could be stale"
        )),
        ("pread", "lseek") => Site("seek"),
        ("pread", "read") => Site("read"),
        _ => Refused("this call is not part of what the runtime applies for the cluster".into()),
    }
}

/// Why the runtime cannot apply a cluster at all, `None` when it can.
fn refusal(c: &Cluster) -> Option<String> {
    let why = match c.mechanism.as_str() {
        "writev-coalescing" | "vdso-clock" | "cache-id" | "pread" => return None,
        "copy_file_range" | "sendfile" | "splice" => {
            "as far as a binary can tell the program may look at the buffer between the read and the write, \
             so the copy must stay in user space: it needs a source change (`syscluster advise` shows the sketch)"
        }
        "larger-buffer" => {
            "the block size is the size of the program's own buffer: it needs a source change \
             (`syscluster advise` shows the sketch)"
        }
        "multi-call" => {
            "the calls are separate calls with the program's own code between them: an unmodified binary \
             cannot hand them to one multi-call (a source change or the compiler plugin, and the kernel \
             module for one crossing)"
        }
        "looped-multi-call" => {
            "a looped multi-call needs the kernel module (multicall.ko) and the loop rewritten around it: \
             a source change or the compiler plugin"
        }
        "sendmmsg" | "read + sendmmsg (batch_send)" => {
            "each sendto's result (EAGAIN, ENOBUFS, EPERM from a firewall, ECONNREFUSED, EMSGSIZE) is known \
             only when the datagram is sent: deferring sends would acknowledge datagrams that may fail, so \
             batching needs a source change"
        }
        "recvmmsg" => {
            "taking datagrams early would empty the socket behind the program's back (poll, select, FIONREAD \
             and other readers would see it empty): it needs a source change"
        }
        "keep-open" => {
            "another process can replace or change the file between two opens: reusing the first \
             descriptor could read the old file"
        }
        "cache-metadata" | "cache-stat" => {
            "another process can change a file's metadata at any time: a cached answer could be stale"
        }
        "track-offset" => {
            "the offset belongs to the open file description, which other processes sharing it can move: \
             a cached answer could be stale"
        }
        "pwrite" => "the runtime does not apply pwrite (only pread): it needs a source change",
        "writev-batch" => {
            "a loop's writes of one block are batched where the program is rebuilt (`syscluster cc --plan`: \
             the loop gives its iterations to writev); an unmodified binary's are coalesced by \
             `syscluster run --coalesce-writes BYTES` with BYTES above the block size"
        }
        _ => "this runtime does not know the mechanism",
    };
    Some(why.to_string())
}

/// The `file:line`s of a cluster's locations, for messages.
fn places<'a>(ls: impl Iterator<Item = &'a PlanLocation>) -> String {
    let mut v: Vec<String> = ls.map(PlanLocation::short).collect();
    v.dedup();
    v.join(", ")
}

/// Loads `plan_file`, refuses it if it is invalid, made for another
/// program than any of `programs` (the executable and, for a script, its
/// interpreter), or stale; otherwise decides what can be applied.
/// `threshold`: planned write sites defer writes shorter than this.
pub fn prepare(plan_file: &Path, programs: &[&Path], threshold: usize) -> Result<Prepared, String> {
    let name = plan_file.display().to_string();
    let plan = Plan::load(plan_file)?;
    if !programs.iter().any(|p| plan.module_of(p).is_some()) {
        let made_for = plan.profile.command.first().cloned().unwrap_or_else(|| "an unnamed program".into());
        return Err(format!(
            "plan {name} was made for {made_for}, not for {}: none of its modules is this program \
             (record this program and run `syscluster advise --plan-out`)",
            programs[0].display()
        ));
    }
    plan.check_modules(&name)?;
    Ok(decide(&plan, threshold))
}

/// Can the library be told of module `m`: an absolute path without a tab
/// or a newline, and a build-id it reads (lowercase hex, at most
/// `PLAN_LINE_MAX_BUILD_ID` bytes)?
fn passable(m: &syscluster_model::plan::Module) -> bool {
    let id_ok = m.build_id.as_deref().is_none_or(|id| {
        !id.is_empty()
            && id.len() % 2 == 0
            && id.len() <= 2 * syscluster_model::formats::PLAN_LINE_MAX_BUILD_ID
            && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    });
    id_ok && m.path.starts_with('/') && !m.path.contains(['\t', '\n'])
}

/// What the runtime applies of `plan`, planned writes deferred below
/// `threshold`: the plan line text for the library and what to tell.
pub fn decide(plan: &Plan, threshold: usize) -> Prepared {
    let mut out = Prepared::default();
    let mut sites = String::new();
    let mut buffer: usize = 64 * 1024;
    let mut modules = String::new();
    for (i, m) in plan.modules.iter().enumerate().take(MAX_MODULES) {
        if passable(m) {
            let id = m.build_id.as_deref().unwrap_or("-");
            let _ = writeln!(modules, "module\t{i}\t{id}\t{}", m.path);
        }
    }
    // Room for the sites: what the library holds, what the environment passes.
    let longest_buffer = format!("\nbuffer\t{MAX_BUFFER}\n");
    let mut room = MAX_SPEC.saturating_sub(SPEC_HEADER.len() + longest_buffer.len() + modules.len());
    let (mut n_sites, mut dropped, mut dropped_clusters) = (0usize, 0usize, Vec::new());
    for c in &plan.clusters {
        let head = format!("plan cluster #{} {}", c.id, c.rule);
        if let Some(why) = refusal(c) {
            out.refused.push(format!("{head} ({}) is not applied: {why}", places(c.locations.iter())));
            continue;
        }
        let (mut done, mut stays) = (Vec::new(), Vec::new());
        for l in &c.locations {
            let not = |why: &str| format!("{head}: {} at {} is not applied: {why}", l.syscall, l.short());
            let kind = match treatment(&c.mechanism, &l.syscall) {
                Treatment::Site(k) => k,
                Treatment::Stays(why) => {
                    stays.push(format!("{} at {} {why}", l.syscall, l.short()));
                    continue;
                }
                Treatment::Refused(why) => {
                    out.refused.push(not(&why));
                    continue;
                }
            };
            // The number comes with the cluster's call of that name.
            let Some(nr) = c.calls.iter().find(|x| x.syscall == l.syscall).map(|x| x.nr) else {
                out.refused.push(not("the plan has no call of that name"));
                continue;
            };
            // The call into libc, which the library's wrappers see: past
            // the language's runtime when the location is the user's code.
            let site = l.site_offset();
            if syscluster_model::elf::raw_syscall_at(Path::new(&l.module), site) {
                out.refused.push(not(if l.site.is_some() {
                    "the program's language runtime makes the call itself, with a raw syscall instruction (as Go \
                     does), which no library can interpose"
                } else {
                    "it is a raw syscall instruction, which no library can interpose"
                }));
                continue;
            }
            let module = plan.modules.iter().position(|m| m.path == l.module);
            let Some(m) = module.filter(|&m| passable(&plan.modules[m])) else {
                out.refused.push(not(
                    "its module cannot be passed to the library (its path is not absolute or holds a tab or a \
                     newline, or its build-id is not lowercase hexadecimal of at most 64 bytes)",
                ));
                continue;
            };
            if nr > i32::MAX as u32 || c.id > i32::MAX as u32 {
                out.refused.push(not("its cluster id or system call number is beyond what the library reads (an int)"));
                continue;
            }
            let param = if kind == "write" { threshold } else { 0 };
            let label = l.short().replace(['\t', '\n'], " ");
            let line = format!("site\t{kind}\t{m}\t{:x}\t{nr}\t{param}\t{}\t{label}\n", site, c.id);
            if m >= MAX_MODULES || n_sites == MAX_SITES || line.len() > room {
                dropped += 1;
                if dropped_clusters.last() != Some(&c.id) {
                    dropped_clusters.push(c.id);
                }
                continue;
            }
            room -= line.len();
            n_sites += 1;
            sites.push_str(&line);
            done.push(format!("{} ({})", l.short(), l.syscall));
        }
        if c.mechanism == "writev-coalescing" {
            let b = c.parameters.get("buffer").and_then(|b| b.replace(',', "").parse::<usize>().ok());
            buffer = buffer.max(b.unwrap_or(0).min(MAX_BUFFER));
        }
        if !done.is_empty() {
            let mut line = format!("{head}: {} {}", what(&c.mechanism, threshold), done.join(", "));
            if !stays.is_empty() {
                let _ = write!(line, "; {}", stays.join(", "));
            }
            out.applied.push(line);
        }
    }
    if dropped > 0 {
        let mut ids: Vec<String> = dropped_clusters.iter().take(8).map(|i| format!("#{i}")).collect();
        if dropped_clusters.len() > ids.len() {
            ids.push(format!("and {} more", dropped_clusters.len() - ids.len()));
        }
        out.refused.push(format!(
            "plan: {dropped} call sites of {} clusters ({}) are not applied: the runtime holds at most \
             {MAX_SITES} sites in {MAX_MODULES} modules, passed in {MAX_SPEC} bytes of environment \
             ({n_sites} sites applied, the first in the plan's order)",
            dropped_clusters.len(),
            ids.join(", ")
        ));
    }
    if !sites.is_empty() {
        out.spec = format!("{SPEC_HEADER}\nbuffer\t{buffer}\n{modules}{sites}");
    }
    out
}

/// What the runtime does at a cluster's sites, for `-v`.
fn what(mechanism: &str, threshold: usize) -> String {
    match mechanism {
        "writev-coalescing" => format!("writes shorter than {threshold} bytes to regular files coalesced at"),
        "vdso-clock" => "the clock read from the vDSO at".into(),
        "cache-id" => "the id answered from a per-process cache at".into(),
        "pread" => "lseek + read made one pread (the offset kept until anything can observe it) at".into(),
        _ => "applied at".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One cluster of a test plan: rule, mechanism, calls with their
    /// location offsets, and the last field.
    type Cluster<'a> = (&'a str, &'a str, &'a [(&'a str, u32, u64)], &'a str);

    /// A plan for `module` with one cluster per (rule, mechanism, calls
    /// with their location offsets).
    fn plan(module: &str, clusters: &[Cluster]) -> Plan {
        let cs: Vec<String> = clusters
            .iter()
            .enumerate()
            .map(|(i, (rule, mech, calls, params))| {
                let c: Vec<String> = calls
                    .iter()
                    .map(|(n, nr, _)| format!(r#"{{"syscall":"{n}","nr":{nr},"args":{{}},"results":{{}}}}"#))
                    .collect();
                let l: Vec<String> = calls
                    .iter()
                    .map(|(n, _, off)| {
                        format!(
                            r#"{{"syscall":"{n}","module":"{module}","offset":{off},"file":"/src/p.c","line":{},"count":100}}"#,
                            off % 100
                        )
                    })
                    .collect();
                format!(
                    r#"{{"id":{},"rule":"{rule}","mechanism":"{mech}","shape":"run","calls":[{}],"locations":[{}],
                       "parameters":{{{params}}},"estimated_saving_ns":1.0,"share_of_run":0.1,"applicable_here":true,"evidence":[]}}"#,
                    i + 1,
                    c.join(","),
                    l.join(",")
                )
            })
            .collect();
        let text = format!(
            r#"{{"plan_version":1,"tool":"t","created_at":0,"profile":{{"command":["{module}"],"backend":"ptrace","node_key":"fd",
               "total_calls":1,"duration_ns":1}},"modules":[{{"path":"{module}","build_id":"abcd","status":"ok"}}],"clusters":[{}]}}"#,
            cs.join(",")
        );
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("p.plan");
        std::fs::write(&f, text).unwrap();
        Plan::load(&f).expect("the test plan loads")
    }

    #[test]
    fn applies_what_keeps_the_program_the_same_and_says_why_not_the_rest() {
        let p = plan(
            "/nonexistent/prog",
            &[
                ("coalesce-writes", "writev-coalescing", &[("write", 1, 4344)], r#""buffer":"131072""#),
                ("select-clock", "vdso-clock", &[("pselect6", 270, 4483), ("gettimeofday", 96, 4403)], ""),
                ("redundant-getpid", "cache-id", &[("getpid", 39, 4474), ("getuid", 102, 4501)], ""),
                ("pread", "pread", &[("lseek", 8, 4462), ("read", 0, 4399)], ""),
                ("copy-offload", "copy_file_range", &[("read", 0, 4333), ("write", 1, 4318)], ""),
                ("sendmmsg", "read + sendmmsg (batch_send)", &[("read", 0, 4541), ("sendto", 44, 4521)], ""),
                ("new-rule", "frobnicate", &[("read", 0, 4600)], ""),
                ("batch-writes", "writev-batch", &[("write", 1, 4610)], ""),
            ],
        );
        let out = decide(&p, 512);
        let sites: Vec<&str> = out.spec.lines().filter(|l| l.starts_with("site\t")).collect();
        assert_eq!(
            sites,
            [
                "site\twrite\t0\t10f8\t1\t512\t1\tp.c:44",
                "site\tclock\t0\t1133\t96\t0\t2\tp.c:3",
                "site\tpid\t0\t117a\t39\t0\t3\tp.c:74",
                "site\tseek\t0\t116e\t8\t0\t4\tp.c:62",
                "site\tread\t0\t112f\t0\t0\t4\tp.c:99",
            ]
        );
        assert!(
            out.spec.starts_with("syscluster-plan/1\nbuffer\t131072\nmodule\t0\tabcd\t/nonexistent/prog\n"),
            "{}",
            out.spec
        );
        assert_eq!(out.applied.len(), 4, "{:?}", out.applied);
        assert!(out.applied[1].contains("pselect6 at p.c:83 stays a system call"), "{}", out.applied[1]);
        let refused = out.refused.join("\n");
        for want in [
            "plan cluster #3 redundant-getpid: getuid at p.c:1 is not applied: getuid's answer can change",
            "plan cluster #5 copy-offload (p.c:33, p.c:18) is not applied: ",
            "plan cluster #6 sendmmsg (p.c:41, p.c:21) is not applied: each sendto's result",
            "plan cluster #7 new-rule (p.c:0) is not applied: this runtime does not know the mechanism",
            "plan cluster #8 batch-writes (p.c:10) is not applied: a loop's writes of one block are batched where \
             the program is rebuilt (`syscluster cc --plan`",
        ] {
            assert!(refused.contains(want), "missing {want:?} in\n{refused}");
        }
        assert_eq!(out.refused.len(), 5);
    }

    #[test]
    fn a_raw_syscall_instruction_is_not_a_site() {
        let d = tempfile::tempdir().unwrap();
        let m = d.path().join("prog");
        let mut bytes = vec![0x90u8; 64];
        bytes[30] = 0x0f;
        bytes[31] = 0x05; // syscall, returning to offset 32
        std::fs::write(&m, &bytes).unwrap();
        let p = plan(
            m.to_str().unwrap(),
            &[("clock-vdso", "vdso-clock", &[("gettimeofday", 96, 32), ("gettimeofday", 96, 40)], "")],
        );
        let out = decide(&p, 4096);
        assert_eq!(out.refused.len(), 1, "{:?}", out.refused);
        assert!(out.refused[0].contains("raw syscall instruction"));
        assert_eq!(out.spec.lines().filter(|l| l.starts_with("site\t")).count(), 1, "the other location stays");
    }

    #[test]
    fn sites_beyond_what_the_library_holds_are_named_not_dropped_silently() {
        let calls: Vec<(&str, u32, u64)> = (0..600).map(|i| ("gettimeofday", 96, 1000 + 16 * i)).collect();
        let clusters: Vec<Cluster> = calls.chunks(1).map(|c| ("clock-vdso", "vdso-clock", c, "")).collect();
        let out = decide(&plan("/nonexistent/prog", &clusters), 4096);
        assert_eq!(out.spec.lines().filter(|l| l.starts_with("site\t")).count(), MAX_SITES);
        assert!(out.spec.len() <= MAX_SPEC);
        assert_eq!(out.refused.len(), 1, "{:?}", out.refused);
        assert!(
            out.refused[0].starts_with("plan: 88 call sites of 88 clusters (#513, #514,")
                && out.refused[0].contains("and 80 more) are not applied: the runtime holds at most 512 sites"),
            "{}",
            out.refused[0]
        );
    }

    #[test]
    fn every_site_kind_is_one_the_library_reads() {
        let calls = ["write", "writev", "gettimeofday", "clock_gettime", "time", "getpid", "gettid", "lseek", "read"];
        let mechanisms = ["writev-coalescing", "vdso-clock", "cache-id", "pread"];
        let mut kinds: Vec<&str> = Vec::new();
        for m in mechanisms {
            for c in calls {
                if let Treatment::Site(k) = treatment(m, c) {
                    kinds.push(k);
                }
            }
        }
        kinds.sort_unstable();
        kinds.dedup();
        let mut known = syscluster_model::formats::PLAN_LINE_SITE_KIND_NAMES.to_vec();
        known.sort_unstable();
        assert_eq!(kinds, known, "the site kinds written are those of data/formats.tsv");
    }

    #[test]
    fn a_module_the_library_cannot_read_is_not_passed() {
        let mut p = plan("/nonexistent/prog", &[("clock-vdso", "vdso-clock", &[("gettimeofday", 96, 32)], "")]);
        for bad in ["ABCD", "abc", "", "0x12", &"ab".repeat(65)] {
            p.modules[0].build_id = Some(bad.to_string());
            let out = decide(&p, 4096);
            assert!(out.spec.is_empty(), "build-id {bad:?}: {}", out.spec);
            assert!(out.refused[0].contains("its module cannot be passed"), "{:?}", out.refused);
        }
        p.modules[0].build_id = Some("ab".repeat(64));
        assert!(!decide(&p, 4096).spec.is_empty(), "64 bytes of build-id are passed");
    }

    #[test]
    fn nothing_applicable_means_no_spec() {
        let p = plan("/nonexistent/prog", &[("larger-block", "larger-buffer", &[("read", 0, 10)], "")]);
        let out = decide(&p, 4096);
        assert!(out.spec.is_empty() && out.applied.is_empty() && out.refused.len() == 1);
    }
}
