//! Redundant calls: asking for the file offset, the process id, or the
//! status of a descriptor nothing changed.

use super::{count, edge_evidence, value_evidence, Estimate, Finding, Part, Rule};
use crate::advice::Evidence;
use crate::cost::{Basis, CostModel, Priced};
use crate::facts::{Facts, OPEN_LIKE};

pub static LSEEK: Rule = Rule {
    id: "redundant-lseek",
    title: "Keep the file offset instead of asking for it",
    mechanism: "track-offset",
    explanation: "lseek(fd, 0, SEEK_CUR) changes nothing: it asks the kernel where the offset is (stdio's \
ftell does it). A program that reads and writes the descriptor itself knows the answer: the offset \
moves by what each read and write returned. Keeping it in a variable removes the call and its crossing.",
    before: "pos = lseek(fd, 0, SEEK_CUR);             /* {count} calls */",
    after: "pos = offset;                              /* offset += n after each read/write */",
};

pub static GETPID: Rule = Rule {
    id: "redundant-getpid",
    title: "Cache the process and user ids",
    mechanism: "cache-id",
    explanation: "{call} returns the same value for the whole life of a process (or thread), yet glibc \
makes a system call each time (it stopped caching getpid in 2.25). Read it once and keep it; refresh \
the cached pid in the child after fork (pthread_atfork), and ids after setuid-family calls.",
    before: "log(\"… %d\", {call}());                   /* {count} calls */",
    after: "static pid_t id;\nif (!id) id = {call}();                   /* once; again in a forked child */\nlog(\"… %d\", id);",
};

pub static FSTAT: Rule = Rule {
    id: "redundant-fstat",
    title: "Do not fstat a descriptor nothing changed",
    mechanism: "cache-stat",
    explanation: "The same descriptor is fstat'ed again and again, and nothing in between writes, \
truncates or reopens it in this program: the answer can only change if another process changes the \
file. Keep the first answer (and refresh it only where the program itself changes the file, or watch \
it with inotify when another process may).",
    before: "for (…) {\n    fstat({fd}, &st);                       /* {count} calls */\n    …\n}",
    after: "fstat({fd}, &st);                           /* once */\nfor (…) {\n    …\n}",
};

/// (data/syscall_properties.tsv, class id.)
const IDS: &[&str] = syscluster_model::syscall_lists::PROCESS_IDS;
/// Calls that change a file or what a descriptor names (class changes-file).
const CHANGERS: &[&str] = syscluster_model::syscall_lists::CHANGES_FILE;

pub fn find(f: &Facts, cost: &CostModel, out: &mut Vec<Finding>) {
    lseek_cur(f, cost, out);
    ids(f, cost, out);
    fstat(f, cost, out);
}

fn lseek_cur(f: &Facts, cost: &CostModel, out: &mut Vec<Finding>) {
    let nodes: Vec<u32> = f.p.nodes.iter().filter(|n| n.syscall == "lseek").map(|n| n.id).collect();
    let total: u64 = nodes.iter().map(|&n| f.node(n).count).sum();
    let (Some(zero), Some(cur)) =
        (f.share_where("lseek", "offset", |v| v == 0), f.share_where("lseek", "whence", |v| v == 1))
    else {
        return;
    };
    // At least this many calls were lseek(fd, 0, SEEK_CUR) (the shares are per argument).
    let calls = ((zero + cur - 1.0).max(0.0) * total as f64).floor() as u64;
    if !f.big_enough(calls, calls) {
        return;
    }
    let mut evidence: Vec<Evidence> = Vec::new();
    evidence.extend(value_evidence(f, "lseek", "offset"));
    evidence.extend(value_evidence(f, "lseek", "whence"));
    let mut before = Vec::new();
    for &id in &nodes {
        let share = f.node(id).count as f64 / total.max(1) as f64;
        let p = cost
            .call("lseek", "cur", 0)
            .map_or_else(|| cost.node_call(id, "lseek", "cur", 0), |ns| Priced { ns, basis: Basis::Calibrated });
        before.push(Part::new(calls as f64 * share, p));
        evidence.push(Evidence::Calls { node: f.label(id), count: f.node(id).count });
    }
    out.push(Finding {
        rule: &LSEEK,
        nodes,
        vars: vec![("count", count(calls))],
        specifics: format!(
            "Here at least {} of the {} lseek calls were lseek(fd, 0, SEEK_CUR).",
            count(calls),
            count(total)
        ),
        evidence,
        saving: Estimate {
            before,
            after: vec![],
            crossings_removed: calls,
            upper_bound: false,
            assumes: "the offset is kept in user space; the lower bound of such calls the value profiles prove".into(),
        },
        applicable_here: true,
        how: "by hand".into(),
        mechanism: None,
        sketch: None,
    });
}

fn ids(f: &Facts, cost: &CostModel, out: &mut Vec<Finding>) {
    for n in &f.p.nodes {
        if !IDS.contains(&n.syscall.as_str()) {
            continue;
        }
        let owners = if n.syscall == "gettid" { f.p.meta.threads } else { f.p.meta.processes }.max(1);
        let extra = n.count.saturating_sub(owners);
        if !f.big_enough(extra, extra) {
            continue;
        }
        let p = cost.call(&n.syscall, "", 0).or_else(|| cost.call("getpid", "", 0));
        let p = p.map_or_else(|| cost.node_call(n.id, &n.syscall, "", 0), |ns| Priced { ns, basis: Basis::Calibrated });
        let mut evidence = vec![Evidence::Calls { node: f.label(n.id), count: n.count }];
        if f.weight(n.id, n.id) > 0 {
            evidence.push(edge_evidence(f, n.id, n.id));
        }
        evidence.extend(f.placement_evidence(&[n.id]));
        out.push(Finding {
            rule: &GETPID,
            nodes: vec![n.id],
            vars: vec![("call", n.syscall.clone()), ("count", count(n.count))],
            specifics: format!(
                "Here {} ran {} times in {} {}.",
                n.syscall,
                count(n.count),
                owners,
                if n.syscall == "gettid" { "threads" } else { "processes" }
            ),
            evidence,
            saving: Estimate {
                before: vec![Part::new(extra as f64, p)],
                after: vec![],
                crossings_removed: extra,
                upper_bound: false,
                assumes: format!(
                    "one {} per {} remains",
                    n.syscall,
                    if n.syscall == "gettid" { "thread" } else { "process" }
                ),
            },
            applicable_here: true,
            how: "by hand".into(),
            mechanism: None,
            sketch: None,
        });
    }
}

fn fstat(f: &Facts, cost: &CostModel, out: &mut Vec<Finding>) {
    for n in &f.p.nodes {
        // Keyed by a descriptor: its number, or what it is.
        let Some(fd) = n
            .key
            .fd
            .filter(|&fd| fd >= 0)
            .map(|fd| fd.to_string())
            .or_else(|| n.key.descriptor.as_ref().map(|_| "fd".to_string()))
        else {
            continue;
        };
        if !matches!(n.syscall.as_str(), "fstat" | "newfstatat" | "statx") {
            continue;
        }
        if n.syscall != "fstat" {
            // An fd-keyed newfstatat is an fstat only with AT_EMPTY_PATH.
            let flag = if n.syscall == "statx" { "flags" } else { "flag" };
            if f.share_where(&n.syscall, flag, |v| v & 0x1000 != 0).is_none_or(|s| s < f.opts.dominant_share) {
                continue;
            }
        }
        // Repeats without a change of the file in between: the call follows
        // itself, or sits in a loop of calls that change nothing.
        let mut repeats = f.weight(n.id, n.id);
        let mut evidence = vec![Evidence::Calls { node: f.label(n.id), count: n.count }];
        if repeats > 0 {
            evidence.push(edge_evidence(f, n.id, n.id));
        }
        for l in &f.p.sequences.loops {
            if l.nodes.len() < 2 || !l.nodes.contains(&n.id) {
                continue;
            }
            let clean = l.nodes.iter().all(|&id| {
                let m = f.node(id);
                !OPEN_LIKE.contains(&m.syscall.as_str())
                    && !(CHANGERS.contains(&m.syscall.as_str())
                        && (m.key.same_descriptor(&n.key) || !m.key.has_descriptor()))
            });
            if clean && l.weight > repeats {
                repeats = l.weight;
                evidence
                    .push(Evidence::Loop { nodes: l.nodes.iter().map(|&id| f.label(id)).collect(), weight: l.weight });
            }
        }
        if !f.big_enough(repeats, repeats) {
            continue;
        }
        evidence.extend(f.placement_evidence(&[n.id]));
        let p = cost
            .call("newfstatat", "fd", 0)
            .map_or_else(|| cost.node_call(n.id, &n.syscall, "fd", 0), |ns| Priced { ns, basis: Basis::Calibrated });
        out.push(Finding {
            rule: &FSTAT,
            nodes: vec![n.id],
            vars: vec![("fd", fd.clone()), ("count", count(n.count))],
            specifics: format!(
                "Here {} ran {} times with nothing in between that changes the file.",
                f.label(n.id),
                count(repeats)
            ),
            evidence,
            saving: Estimate {
                before: vec![Part::new(repeats as f64, p)],
                after: vec![],
                crossings_removed: repeats,
                upper_bound: false,
                assumes: "the repeated fstat calls go; the first one stays".into(),
            },
            applicable_here: true,
            how: "by hand".into(),
            mechanism: None,
            sketch: None,
        });
    }
}
