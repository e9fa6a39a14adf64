//! Clock rules: the select → gettimeofday cluster of mpeg_play (seed 000
//! §4) and clocks read through a system call instead of the vDSO.

use super::{calibrated_or, count, edge_evidence, Estimate, Finding, Part, Rule};
use crate::advice::Evidence;
use crate::cost::{Basis, CostModel, Priced};
use crate::facts::Facts;

pub static SELECT_CLOCK: Rule = Rule {
    id: "select-clock",
    title: "Wait-then-read-the-clock: a specialized call, or the clock from the vDSO",
    mechanism: "vdso-clock",
    explanation: "Every wait ({wait}) is followed by a clock read that is a system call of its own: the \
select → gettimeofday cluster of mpeg_play in seed 000 §4, which the seed replaced by a specialized \
multi-call. On Linux the clock needs no crossing at all: glibc's gettimeofday and clock_gettime read it \
from the vDSO, so calling them (instead of syscall(SYS_{clock}) or an old static libc) removes one \
crossing per wait, and the time read is the same clock. libmulticall's mc_select_time() packages the \
pair (the select, then the vDSO clock).",
    before: "for (;;) {\n    {wait}(…, &timeout);\n    syscall(SYS_{clock}, &now, NULL);      /* a system call */\n}",
    after: "for (;;) {\n    {wait}(…, &timeout);\n    gettimeofday(&now, NULL);               /* glibc: the vDSO, no crossing */\n}\n/* or: mc_select_time(ctx, nfds, &r, NULL, NULL, &timeout, &now, res); */",
};

pub static CLOCK_VDSO: Rule = Rule {
    id: "clock-vdso",
    title: "Read the clock through the vDSO",
    mechanism: "vdso-clock",
    explanation: "The program reads the clock with a system call ({clock}) many times. glibc's \
clock_gettime, gettimeofday and time read CLOCK_REALTIME, CLOCK_MONOTONIC and their coarse and boot \
variants from the vDSO, in user space, at a few nanoseconds each: the same clock, no crossing. A \
system call is made only by raw syscall(2), static binaries without vDSO support, or clocks the vDSO \
does not serve (per-process and per-thread CPU clocks).",
    before: "syscall(SYS_{clock}, …);                  /* {count} calls */",
    after: "clock_gettime(CLOCK_MONOTONIC, &ts);      /* glibc: the vDSO, no crossing */",
};

/// (data/syscall_properties.tsv, classes polls and clock.)
const WAITS: &[&str] = syscluster_model::syscall_lists::POLLS;
const CLOCKS: &[&str] = syscluster_model::syscall_lists::CLOCKS;

/// The vDSO serves every clock but the per-process and per-thread CPU clocks.
fn vdso_clock(id: i64) -> bool {
    matches!(id, 0 | 1 | 4 | 5 | 6 | 7)
}

fn vdso_price(cost: &CostModel) -> Priced {
    match cost.call("clock_gettime", "vdso", 0) {
        Some(ns) => Priced { ns, basis: Basis::Calibrated },
        None => Priced { ns: 0.0, basis: Basis::CrossingOnly },
    }
}

pub fn find(f: &Facts, cost: &CostModel, out: &mut Vec<Finding>) {
    let mut covered: Vec<(u32, u64)> = Vec::new();
    for e in &f.p.edges {
        let (a, b) = (f.node(e.from), f.node(e.to));
        if !WAITS.contains(&a.syscall.as_str()) || !CLOCKS.contains(&b.syscall.as_str()) {
            continue;
        }
        if !f.big_enough(e.weight, 2 * e.weight) || !serves(f, &b.syscall) {
            continue;
        }
        let w = e.weight;
        let mut evidence = vec![edge_evidence(f, e.from, e.to)];
        if f.weight(e.to, e.from) > 0 {
            evidence.push(edge_evidence(f, e.to, e.from));
        }
        evidence.extend(f.placement_evidence(&[e.from, e.to]));
        let clock = cost.node_call(e.to, &b.syscall, "", 0);
        let clock = calibrated_or(cost, &b.syscall, "", 0, clock);
        covered.push((e.to, w));
        out.push(Finding {
            rule: &SELECT_CLOCK,
            nodes: vec![e.from, e.to],
            vars: vec![("wait", a.syscall.clone()), ("clock", b.syscall.clone())],
            specifics: format!("Here {} → {} ran {} times.", f.label(e.from), f.label(e.to), count(w)),
            evidence,
            saving: Estimate {
                before: vec![Part::new(w as f64, clock)],
                after: vec![Part::new(w as f64, vdso_price(cost))],
                crossings_removed: w,
                upper_bound: false,
                assumes: format!("each {} system call becomes a vDSO read of the clock", b.syscall),
            },
            applicable_here: f.host.vdso,
            how: "call glibc's gettimeofday/clock_gettime (the vDSO) instead of the system call".into(),
            mechanism: None,
            sketch: None,
        });
    }
    for n in &f.p.nodes {
        if !CLOCKS.contains(&n.syscall.as_str()) || !serves(f, &n.syscall) {
            continue;
        }
        let left = n.count - covered.iter().filter(|c| c.0 == n.id).map(|c| c.1).sum::<u64>().min(n.count);
        if !f.big_enough(left, left) {
            continue;
        }
        let clock = calibrated_or(cost, &n.syscall, "", 0, cost.node_call(n.id, &n.syscall, "", 0));
        let mut evidence = vec![Evidence::Calls { node: f.label(n.id), count: n.count }];
        evidence.extend(f.placement_evidence(&[n.id]));
        out.push(Finding {
            rule: &CLOCK_VDSO,
            nodes: vec![n.id],
            vars: vec![("clock", n.syscall.clone()), ("count", count(left))],
            specifics: format!("Here {} was a system call {} times.", n.syscall, count(left)),
            evidence,
            saving: Estimate {
                before: vec![Part::new(left as f64, clock)],
                after: vec![Part::new(left as f64, vdso_price(cost))],
                crossings_removed: left,
                upper_bound: false,
                assumes: format!("each {} system call becomes a vDSO read of the clock", n.syscall),
            },
            applicable_here: f.host.vdso,
            how: "call glibc's clock functions (the vDSO) instead of the system call".into(),
            mechanism: None,
            sketch: None,
        });
    }
}

/// Whether the vDSO serves the clocks a call reads: always for
/// gettimeofday and time; for clock_gettime only where the value profile
/// shows clocks it serves (not the CPU-time clocks).
fn serves(f: &Facts, syscall: &str) -> bool {
    if syscall != "clock_gettime" {
        return true;
    }
    f.share_where("clock_gettime", "which_clock", vdso_clock).is_some_and(|s| s >= f.opts.dominant_share)
}
