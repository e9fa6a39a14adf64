//! The advisor: from a syscall profile to ranked, concrete rewrites with
//! their savings estimated from a calibration of the host. Pure: the
//! profile, the calibration and the host description (what the host lets a
//! program use) come in as values; measuring and describing the machine is
//! `syscluster_calibrate`'s job.
//!
//! `advise` analyses every hot sequence and loop of a profile (data
//! dependencies, where the calls sit in the code, which multi-call backends
//! can run them, dominant argument values), runs the rules of the catalogue
//! (`rules::catalogue`), prices each finding with the cost model and ranks
//! them by saving. `plan` turns the recommendations into the plan file that
//! `syscluster run --plan` and the compiler plugin consume.

pub mod advice;
pub mod cost;
pub mod facts;
pub mod plan;
pub mod remarks;
pub mod rules;
pub mod text;

/// The calibration format lives in the model (`syscluster calibrate` writes it).
pub use syscluster_model::calibration;

pub use advice::{Advice, Recommendation, ADVICE_VERSION};
pub use calibration::Calibration;
pub use cost::CostModel;
pub use facts::AdviseOptions;

use advice::{CostBasis, ProfileSummary, Saving};
use std::collections::BTreeSet;
use syscluster_model::host::Host;
use syscluster_model::Profile;

/// Writes under this size are short (seed 001; the profile's I/O classes
/// use the same bound).
pub const SMALL_WRITE: u64 = 512;

/// Analyses a profile and returns the ranked recommendations for `host`.
/// Pure: everything it knows comes from its arguments (it reads no file and
/// asks the kernel nothing), so the same profile, calibration and host give
/// the same advice on any machine.
pub fn advise(p: &Profile, cost: &CostModel, host: &Host, opts: &AdviseOptions) -> Advice {
    let mut f = facts::Facts::new(p, host, opts.clone());
    f.multicall = cost.multicall();
    let mut sequences = Vec::new();
    for s in &p.sequences.loops {
        sequences.push(f.analyze(s, true));
    }
    for s in &p.sequences.hot_paths {
        sequences.push(f.analyze(s, false));
    }
    let mut notes = Vec::new();
    let mut recs: Vec<Recommendation> = Vec::new();
    for fd in rules::find_all(&f, cost) {
        let before_ns = rules::Estimate::ns(&fd.saving.before);
        let after_ns = rules::Estimate::ns(&fd.saving.after);
        let mut ns = before_ns - after_ns;
        if ns <= 0.0 {
            notes.push(format!(
                "{} matched {} but would save nothing here ({:.0} ns before, {:.0} ns after): not recommended",
                fd.rule.id,
                fd.nodes.iter().map(|&n| f.label(n)).collect::<Vec<_>>().join(" → "),
                before_ns,
                after_ns
            ));
            continue;
        }
        let bases: BTreeSet<cost::Basis> =
            fd.saving.before.iter().chain(&fd.saving.after).map(|p| p.per_call.basis).collect();
        let crossing_ns = fd.saving.crossings_removed as f64 * cost.crossing();
        // A saving is taken from the run: it can never exceed it.
        let run = cost.run();
        let mut assumes = fd.saving.assumes.clone();
        if ns > run.ns {
            ns = run.ns;
            assumes.push_str(&format!("; capped at the run it is taken from ({})", text::duration(run.ns)));
        }
        let saving = Saving {
            ns,
            share_of_run: if run.ns > 0.0 { ns / run.ns } else { 0.0 },
            share_of: match (run.untraced, run.tracer.map(|t| t.from_cpu)) {
                (true, Some(true)) => "untraced CPU time, estimated",
                (true, Some(false)) => "untraced run, estimated",
                (false, _) => "traced run",
                (true, None) => "run",
            }
            .into(),
            bound: if fd.saving.upper_bound { "upper_bound" } else { "estimate" }.into(),
            calls_before: rules::Estimate::calls(&fd.saving.before),
            calls_after: rules::Estimate::calls(&fd.saving.after),
            crossings_removed: fd.saving.crossings_removed,
            crossing_ns: crossing_ns.min(ns),
            kernel_ns: (ns - crossing_ns).max(0.0),
            before_ns,
            after_ns,
            basis: CostModel::describe(&bases),
            assumes,
        };
        let (before, after) = match &fd.sketch {
            Some((b, a)) => (b.clone(), a.clone()),
            None => (rules::fill(fd.rule.before, &fd.vars), rules::fill(fd.rule.after, &fd.vars)),
        };
        // The sites that carry the pattern: one-off sites of a node (an
        // openat node holds every open of the program) are not listed.
        let mut locations = Vec::new();
        for &n in &fd.nodes {
            let sites = f.sites(n);
            let many: Vec<_> = sites.iter().filter(|s| s.count >= opts.min_repeats).cloned().collect();
            if many.is_empty() {
                locations.extend(sites.into_iter().take(1));
            } else {
                locations.extend(many);
            }
        }
        recs.push(Recommendation {
            rank: 0,
            rule: fd.rule.id.into(),
            title: fd.rule.title.into(),
            explanation: format!("{} {}", rules::fill(fd.rule.explanation, &fd.vars), fd.specifics),
            before,
            after,
            mechanism: fd.mechanism.clone().unwrap_or_else(|| fd.rule.mechanism.into()),
            parameters: fd
                .vars
                .iter()
                .filter(|(k, _)| !k.ends_with("_text") && *k != "call")
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            nodes: fd.nodes.clone(),
            labels: fd.nodes.iter().map(|&n| f.label(n)).collect(),
            locations,
            evidence: fd.evidence,
            saving,
            applicable_here: fd.applicable_here,
            how: fd.how,
            overlaps: Vec::new(),
            compiler: None,
        });
    }
    // Appliable here first, then by saving; upper bounds after estimates of equal footing.
    recs.sort_by(|a, b| {
        b.applicable_here
            .cmp(&a.applicable_here)
            .then(b.saving.ns.total_cmp(&a.saving.ns))
            .then(a.rule.cmp(&b.rule))
            .then(a.nodes.cmp(&b.nodes))
    });
    for (i, r) in recs.iter_mut().enumerate() {
        r.rank = i as u32 + 1;
    }
    let sets: Vec<BTreeSet<u32>> = recs.iter().map(|r| r.nodes.iter().copied().collect()).collect();
    for i in 0..recs.len() {
        recs[i].overlaps =
            (0..recs.len()).filter(|&j| j != i && !sets[i].is_disjoint(&sets[j])).map(|j| j as u32 + 1).collect();
    }
    notes.extend(profile_notes(p, cost));
    Advice {
        advice_version: ADVICE_VERSION,
        tool: format!("syscluster {}", env!("CARGO_PKG_VERSION")),
        profile: ProfileSummary {
            command: p.meta.command.clone(),
            backend: p.meta.backend.clone(),
            mode: p.meta.mode.clone(),
            node_key: p.meta.node_key.as_str().into(),
            total_calls: p.meta.total_calls,
            duration_ns: p.meta.duration_ns,
            callsites: p.meta.collected.callsites,
        },
        costs: CostBasis { host: opts.host_file.clone(), ..cost.basis().clone() },
        sequences,
        recommendations: recs,
        notes,
    }
}

/// What limits the advice on this profile.
fn profile_notes(p: &Profile, cost: &CostModel) -> Vec<String> {
    let mut notes = Vec::new();
    let m = &p.meta;
    match cost.basis().source.as_str() {
        "calibration" => {}
        "profile" => notes.push(
            "no calibration of this machine: costs come from the profile's own kernel times and an assumed crossing cost; run `syscluster calibrate` for measured figures"
                .into(),
        ),
        _ => notes.push(format!(
            "no calibration and no kernel times in the profile: every call is priced at an assumed crossing of {:.0} ns; run `syscluster calibrate`",
            cost.crossing()
        )),
    }
    if !m.collected.callsites {
        notes.push(format!(
            "the profile has no code locations ({}): record with `syscluster record` (debug info in the program) to get the file:line of each call",
            if m.backend == "strace" { "imported from strace" } else { "recorded without them" }
        ));
    }
    let run = cost.run();
    if run.tracer.is_some() {
        notes.push(format!("shares are of {}", run.describe()));
    } else if cost::traced(p) {
        notes.push(format!(
            "shares are of {}; the recorded duration and kernel times include the overhead of tracing with {}, so the share of an untraced run is larger{}",
            run.describe(),
            m.backend,
            if m.backend == "strace" {
                ""
            } else {
                " (`syscluster calibrate` measures the recorder's cost and takes it out)"
            }
        ));
    }
    if !m.collected.value_profiles {
        notes.push(format!(
            "the profile has no value profiles ({}): the rules that need argument values were not checked — larger-block (the block size), coalesce-writes (the write sizes), sendmmsg and recvmmsg (datagram sockets), redundant-lseek (offset and whence), clock-vdso (the clocks), multicall and looped-multicall (argument safety: which arguments are constant); {}",
            if m.mode == "aggregate" { "aggregate mode" } else { "not collected" },
            rules::EVENTS_WOULD_ADD
        ));
    }
    if !m.collected.result_matches {
        notes.push("the profile has no data dependencies (result matches): copy loops are recommended from their edges and counts alone, as candidates to confirm; read → sendto loops (they need the datagram evidence too) are not".into());
    }
    if !m.collected.io_patterns && m.total_calls > 0 {
        notes.push("the profile has no I/O patterns: what each descriptor is (file, socket, device) and files opened again and again (reopen-same-file) are not known".into());
    }
    if m.collected.io_patterns && p.io_patterns.is_empty() && m.total_calls > 0 {
        notes.push("no file was transferred to or from".into());
    }
    if p.lost_events.total > 0 {
        notes.push(format!(
            "{} calls were lost while recording: edge weights and savings are lower bounds",
            p.lost_events.total
        ));
    }
    notes
}
