//! The recommendation catalogue: every rule with its id, explanation and
//! code sketches (docs/ADVICE.md lists them), and the finders that look for
//! each rule's evidence in a profile. A finder that finds no evidence
//! returns nothing: no recommendation is made on a hunch.

mod clock;
mod io;
mod multicall;
mod net;
mod redundant;

use crate::advice::Evidence;
use crate::cost::{Basis, CostModel, Priced};
use crate::facts::Facts;
use syscluster_model::syscalls::{self, ArgKind};

/// A rule of the catalogue.
#[derive(Debug)]
pub struct Rule {
    pub id: &'static str,
    pub title: &'static str,
    /// How the rewrite is done.
    pub mechanism: &'static str,
    /// One paragraph: why the rewrite saves time and what it keeps.
    pub explanation: &'static str,
    /// Code sketches; `{name}` is filled in from the profile.
    pub before: &'static str,
    pub after: &'static str,
}

/// Every rule, in the order docs/ADVICE.md lists them.
pub fn catalogue() -> Vec<&'static Rule> {
    vec![
        &multicall::MULTICALL,
        &multicall::LOOPED,
        &io::PREAD,
        &io::PWRITE,
        &io::COALESCE,
        &io::BATCH,
        &io::COPY_OFFLOAD,
        &io::LARGER_BLOCK,
        &io::SENDFILE,
        &net::SENDMMSG,
        &net::RECVMMSG,
        &clock::SELECT_CLOCK,
        &clock::CLOCK_VDSO,
        &io::REOPEN,
        &io::STAT_STORM,
        &redundant::LSEEK,
        &redundant::GETPID,
        &redundant::FSTAT,
    ]
}

/// A rule's evidence found in the profile, and what acting on it saves.
pub struct Finding {
    pub rule: &'static Rule,
    pub nodes: Vec<u32>,
    /// Values for the sketches' `{name}` placeholders.
    pub vars: Vec<(&'static str, String)>,
    /// What this profile shows, in a sentence or two.
    pub specifics: String,
    pub evidence: Vec<Evidence>,
    pub saving: Estimate,
    pub applicable_here: bool,
    pub how: String,
    /// Overrides the rule's mechanism (e.g. sendfile instead of copy_file_range).
    pub mechanism: Option<String>,
    /// Overrides the rule's sketches where the finder writes them whole.
    pub sketch: Option<(String, String)>,
}

/// `calls` units at `per_call` each, making `crossings` system calls.
#[derive(Clone, Copy, Debug)]
pub struct Part {
    pub calls: f64,
    pub per_call: Priced,
    pub crossings: f64,
}

impl Part {
    /// `calls` system calls at `per_call` each.
    pub fn new(calls: f64, per_call: Priced) -> Part {
        Part { calls, per_call, crossings: calls }
    }
    /// `units` priced at `per_unit` each (datagrams of a sendmmsg), made by
    /// `crossings` system calls.
    pub fn units(units: f64, per_unit: Priced, crossings: f64) -> Part {
        Part { calls: units, per_call: per_unit, crossings }
    }
}

/// The calls before and after a rewrite, priced.
#[derive(Clone, Debug)]
pub struct Estimate {
    pub before: Vec<Part>,
    pub after: Vec<Part>,
    pub crossings_removed: u64,
    pub upper_bound: bool,
    pub assumes: String,
}

impl Estimate {
    pub fn calls(parts: &[Part]) -> u64 {
        parts.iter().map(|p| p.crossings.round() as u64).sum()
    }
    pub fn ns(parts: &[Part]) -> f64 {
        parts.iter().map(|p| p.calls * p.per_call.ns).sum()
    }
}

/// Runs every finder.
pub fn find_all(f: &Facts, cost: &CostModel) -> Vec<Finding> {
    let mut out = Vec::new();
    io::find(f, cost, &mut out);
    net::find(f, cost, &mut out);
    clock::find(f, cost, &mut out);
    redundant::find(f, cost, &mut out);
    // The general multi-calls last: they skip what a specialized rule covers.
    multicall::find(f, cost, &mut out);
    out
}

/// Fills `{name}` placeholders.
pub fn fill(template: &str, vars: &[(&str, String)]) -> String {
    let mut s = template.to_string();
    for (k, v) in vars {
        s = s.replace(&format!("{{{k}}}"), v);
    }
    s
}

/// A price from the calibration, or else `fallback`.
pub fn calibrated_or(cost: &CostModel, syscall: &str, on: &str, bytes: u64, fallback: Priced) -> Priced {
    cost.call(syscall, on, bytes).map_or(fallback, |ns| Priced { ns, basis: Basis::Calibrated })
}

/// The calibration's name for the kind of object behind a node (a file
/// where the profile cannot tell).
pub fn on_of(kind: &str) -> &'static str {
    if kind == "socket" {
        "udp"
    } else {
        "file"
    }
}

/// `n = read(3, buf, 4096)` for node `id`, with results of earlier calls of
/// the sequence as `r<i>`.
pub fn call_text(f: &Facts, id: u32, index: usize, deps: &[crate::advice::Dependency]) -> String {
    let n = f.node(id);
    let Some(info) = syscalls::by_name(&n.syscall) else {
        return format!("{}(…)", n.syscall);
    };
    let args: Vec<String> = info
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if let Some(d) = deps.iter().find(|d| d.to == index && d.arg as usize == i) {
                return format!("r{}", d.from);
            }
            match a.kind {
                ArgKind::Fd | ArgKind::DirFd
                    if i == syscalls::key_fd_arg(n.nr).map_or(usize::MAX, |k| k.0) && n.key.fd.is_some() =>
                {
                    n.key.fd.unwrap_or_default().to_string()
                }
                ArgKind::Ptr | ArgKind::Path => a.name.to_string(),
                _ => match f.dominant(&n.syscall, a.name) {
                    Some((v, share, _)) if share >= f.opts.dominant_share => {
                        if matches!(a.kind, ArgKind::Flags) && v > 9 {
                            format!("{v:#x}")
                        } else if a.kind == ArgKind::DirFd && v == syscalls::AT_FDCWD {
                            "AT_FDCWD".into()
                        } else {
                            v.to_string()
                        }
                    }
                    _ => a.name.to_string(),
                },
            }
        })
        .collect();
    format!("r{index} = {}({})", n.syscall, args.join(", "))
}

pub use io::EVENTS_WOULD_ADD;
pub use syscluster_model::fmt::{bytes, count};

pub fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// Evidence of a value profile's dominant value, if there is one.
pub fn value_evidence(f: &Facts, syscall: &str, arg: &str) -> Option<Evidence> {
    let (value, share, observations) = f.dominant(syscall, arg)?;
    Some(Evidence::Value { syscall: syscall.into(), arg: arg.into(), value, share, observations })
}

/// Where pointers were recorded: the reader's buffer is the writer's (the
/// data goes from one call to the other through the same memory).
pub fn same_buffer(f: &Facts, reader: &str, writer: &str, writer_arg: &str) -> Vec<Evidence> {
    match (f.dominant(reader, "buf"), f.dominant(writer, writer_arg)) {
        (Some((a, sa, _)), Some((b, sb, _)))
            if a == b && a != 0 && sa >= f.opts.dominant_share && sb >= f.opts.dominant_share =>
        {
            [value_evidence(f, reader, "buf"), value_evidence(f, writer, writer_arg)].into_iter().flatten().collect()
        }
        _ => Vec::new(),
    }
}

pub fn edge_evidence(f: &Facts, from: u32, to: u32) -> Evidence {
    Evidence::Edge { from: f.label(from), to: f.label(to), weight: f.weight(from, to) }
}

pub fn io_evidence(io: &syscluster_model::profile::IoPattern) -> Evidence {
    Evidence::IoPattern {
        path: io.path.clone(),
        file_kind: io.kind.clone(),
        class: io.class.clone(),
        opens: io.opens,
        reads: io.reads,
        writes: io.writes,
        bytes: io.bytes_read + io.bytes_written,
    }
}
