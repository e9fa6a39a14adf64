//! The cost model: what one call costs on this machine.
//!
//! A call's cost is its crossing plus its kernel work. The figures come,
//! in order of preference, from the profile's own kernel times where they
//! are precise (the BPF backend times each call between its tracepoints),
//! from the calibration of this machine (`syscluster calibrate`, by call
//! and size), from the profile's kernel times where a tracer inflated them
//! (strace, ptrace: an overestimate, said so), and otherwise from the
//! crossing alone.

use crate::advice::CostBasis;
use crate::calibration::{Calibration, TracerCost};
use std::collections::BTreeSet;
use syscluster_model::Profile;

/// The crossing cost assumed when nothing was measured: seed-era machines
/// and this project's reference machine measured 135–190 ns.
pub const ASSUMED_CROSSING_NS: f64 = 150.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Basis {
    ProfileKernel,
    Calibrated,
    TracedKernel,
    CrossingOnly,
}

impl Basis {
    pub fn describe(self) -> &'static str {
        match self {
            Basis::ProfileKernel => "the profile's kernel times (BPF) plus the calibrated crossing",
            // The machine and the file: the advice's costs line.
            Basis::Calibrated => "calls timed by `syscluster calibrate`",
            Basis::TracedKernel => "the profile's kernel times under a tracer (inflated by tracing: an overestimate)",
            Basis::CrossingOnly => "the crossing alone (the kernel work of these calls is not known)",
        }
    }
}

/// A price and where it came from.
#[derive(Clone, Copy, Debug)]
pub struct Priced {
    pub ns: f64,
    pub basis: Basis,
}

/// The run the shares are of: the untraced program, estimated by taking the
/// recorder's calibrated cost per recorded call out of the program's CPU
/// time where the profile has it (the share is then of the CPU time the
/// program takes untraced), else out of the recorded duration; or the
/// recorded run itself when that cost is not known.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// ns: the denominator of every `share_of_run`.
    pub ns: f64,
    /// Whether `ns` is the untraced program (estimated) rather than the
    /// recorded, traced run.
    pub untraced: bool,
    /// The recorder's cost taken out, ns.
    pub tracer: Option<TracerTaken>,
}

impl Run {
    /// What the shares are of, in words.
    pub fn describe(&self) -> String {
        match self.tracer {
            Some(t) if self.untraced && t.from_cpu => format!(
                "the untraced run's CPU time (user + system), estimated: {} (the program's CPU time under the recorder, {}, less {:.0} ns of recording per call; the recorded run took {} of wall time)",
                syscluster_model::fmt::duration(self.ns),
                syscluster_model::fmt::duration(t.cpu_ns),
                t.per_call_ns,
                syscluster_model::fmt::duration(t.recorded_ns)
            ),
            Some(t) if self.untraced => format!(
                "the untraced run, estimated: {} (the recorded {} less {} of recording: {:.0} ns per call and {} per run)",
                syscluster_model::fmt::duration(self.ns),
                syscluster_model::fmt::duration(t.recorded_ns),
                syscluster_model::fmt::duration(t.recorded_ns - self.ns),
                t.per_call_ns,
                syscluster_model::fmt::duration(t.fixed_ns)
            ),
            _ if self.untraced => format!("the run ({})", syscluster_model::fmt::duration(self.ns)),
            _ => format!(
                "the recorded run, tracing included ({}): the recorder's cost is not calibrated",
                syscluster_model::fmt::duration(self.ns)
            ),
        }
    }
}

/// The recorder's calibrated cost, as taken out of a profile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TracerTaken {
    /// Per recorded call: CPU time where `from_cpu`, else wall time.
    pub per_call_ns: f64,
    /// Taken out of the program's CPU time (`cpu_ns`), else out of the
    /// recorded duration.
    pub from_cpu: bool,
    pub cpu_ns: f64,
    pub kernel_ns: f64,
    pub fixed_ns: f64,
    /// The recorded duration it was taken from.
    pub recorded_ns: f64,
}

/// A call's cost as `fixed_ns + per_byte_ns × bytes`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Line {
    pub fixed_ns: f64,
    pub per_byte_ns: f64,
}

impl Line {
    pub fn at(&self, bytes: f64) -> f64 {
        self.fixed_ns + self.per_byte_ns * bytes
    }
}

pub struct CostModel<'a> {
    cal: Option<&'a Calibration>,
    run: Run,
    basis: CostBasis,
    precise_kernel: bool,
    traced_kernel: bool,
    kernel_ns: Vec<f64>,
    /// Per node: the recorder's own cost is most of its recorded kernel time.
    unresolved: Vec<bool>,
}

impl<'a> CostModel<'a> {
    /// The model for `profile`, with the calibration if there is one.
    pub fn new(profile: &Profile, cal: Option<&'a Calibration>, cal_path: Option<String>) -> CostModel<'a> {
        let has_times = profile.meta.collected.kernel_time && profile.nodes.iter().any(|n| n.kernel_ns > 0);
        let precise_kernel = has_times && profile.meta.backend == "bpf";
        // Inflated times are used only when nothing better exists.
        let traced_kernel = has_times && !precise_kernel && cal.is_none();
        let source = match (cal, has_times) {
            (Some(_), _) => "calibration",
            (None, true) => "profile",
            (None, false) => "assumed",
        };
        let basis = CostBasis {
            source: source.into(),
            crossing_ns: cal.map_or(ASSUMED_CROSSING_NS, |c| c.crossing.syscall_ns),
            function_call_ns: cal.map(|c| c.crossing.function_call_ns),
            calibration: cal.and(cal_path),
            machine: cal.map(|c| c.machine.to_string()),
            profile_kernel_times: precise_kernel || traced_kernel,
            run_ns: 0.0,
            run_untraced: false,
            tracer_ns_per_call: None,
            tracer_kernel_ns_per_call: None,
            host: None,
        };
        let tracer = cal.and_then(|c| c.tracer(&profile.meta.backend, &profile.meta.mode));
        let run = untraced_run(profile, tracer, basis.crossing_ns);
        let mut basis = basis;
        basis.run_ns = run.ns;
        basis.run_untraced = run.untraced;
        basis.tracer_ns_per_call = run.tracer.map(|t| t.per_call_ns);
        basis.tracer_kernel_ns_per_call = run.tracer.map(|t| t.kernel_ns);
        let kernel_off = run.tracer.map_or(0.0, |t| t.kernel_ns);
        // Time blocked (off the CPU) is not what a crossing costs.
        let per_call: Vec<f64> = profile
            .nodes
            .iter()
            .map(|n| if n.count > 0 { n.working_ns() as f64 / n.count as f64 } else { 0.0 })
            .collect();
        let kernel_ns = per_call.iter().map(|k| (k - kernel_off).max(0.0)).collect();
        // A call whose recorded kernel time is mostly the recorder's own
        // (at most twice what it adds inside a call): what is left after
        // taking that out is a difference of two near figures, as noisy as
        // the recorder's cost itself (lseek: 185–240 ns recorded, 227 ns of
        // it the recorder's). The calibration times such a call directly.
        let unresolved = per_call.iter().map(|k| kernel_off > 0.0 && *k <= 2.0 * kernel_off).collect();
        CostModel { cal, run, basis, precise_kernel, traced_kernel, kernel_ns, unresolved }
    }

    pub fn basis(&self) -> &CostBasis {
        &self.basis
    }

    /// The run the shares are of.
    pub fn run(&self) -> &Run {
        &self.run
    }

    pub fn crossing(&self) -> f64 {
        self.basis.crossing_ns
    }

    pub fn calibrated(&self) -> bool {
        self.cal.is_some()
    }

    /// libmulticall's calibrated decisions, when mc-calibrate ran and
    /// libmulticall would use its file (else it uses its built-in choices).
    pub fn multicall(&self) -> Option<crate::calibration::MulticallDecisions> {
        self.cal.and_then(|c| c.multicall.as_ref()).and_then(|m| crate::calibration::MulticallDecisions::of(m).ok())
    }

    /// One call of profile node `node` (a call of `syscall` on `on` moving
    /// `bytes`), as the program made it.
    pub fn node_call(&self, node: u32, syscall: &str, on: &str, bytes: u64) -> Priced {
        let k = self.kernel_ns.get(node as usize).copied().unwrap_or(0.0);
        let unresolved = self.unresolved.get(node as usize).copied().unwrap_or(false);
        if self.precise_kernel && k > 0.0 && !(unresolved && self.call(syscall, on, bytes).is_some()) {
            return Priced { ns: self.crossing() + k, basis: Basis::ProfileKernel };
        }
        if let Some(ns) = self.call(syscall, on, bytes) {
            return Priced { ns, basis: Basis::Calibrated };
        }
        if self.traced_kernel && k > 0.0 {
            return Priced { ns: self.crossing() + k, basis: Basis::TracedKernel };
        }
        Priced { ns: self.crossing(), basis: Basis::CrossingOnly }
    }

    /// A calibrated call (one the rewrite makes instead), if measured.
    pub fn call(&self, syscall: &str, on: &str, bytes: u64) -> Option<f64> {
        self.cal.and_then(|c| c.cost(syscall, on, bytes))
    }

    /// The calibrated line `fixed + per_byte × bytes` of `syscall` on `on`
    /// (crossing included in `fixed`), for transfers of about its smaller
    /// size or more (a mean a little under it: the last block of a file is
    /// short).
    pub fn line(&self, syscall: &str, on: &str, bytes: u64) -> Option<Line> {
        let k = self.cal?.kernel_fixed(syscall, on)?;
        (bytes >= k.small_bytes - k.small_bytes / 8)
            .then(|| Line { fixed_ns: k.fixed_ns.max(self.crossing()), per_byte_ns: k.per_byte_ns })
    }

    /// `syscall` as the program made it (`price`, moving `bytes` per call)
    /// split on the calibrated line: the fixed work per call is the
    /// calibration's, the rest of the price is the program's own work per
    /// byte (its kernel times say how fast its bytes move; the fixed work
    /// is not in proportion to them).
    pub fn program_line(&self, syscall: &str, on: &str, bytes: u64, price: Priced) -> Option<Line> {
        let l = self.line(syscall, on, bytes)?;
        Some(Line { fixed_ns: l.fixed_ns, per_byte_ns: ((price.ns - l.fixed_ns) / bytes.max(1) as f64).max(0.0) })
    }

    /// The bases used, as one phrase.
    pub fn describe(bases: &BTreeSet<Basis>) -> String {
        bases.iter().map(|b| b.describe()).collect::<Vec<_>>().join("; ")
    }
}

/// Whether a profile's times were taken under a tracer (BPF programs at
/// every call, ptrace stops, strace).
pub fn traced(profile: &Profile) -> bool {
    matches!(profile.meta.backend.as_str(), "bpf" | "ptrace" | "strace")
}

/// The run the shares of `profile` are of, never less than the crossings
/// the program makes nor more than the recorded run:
/// - where the profile has the program's CPU time and the calibration the
///   recorder's CPU cost per call: that CPU time less the recorder's. The
///   recorder's wall time per call depends on how busy the machine is (its
///   reader of the events competes for the CPUs, and time off the CPU is
///   not the program's work); the CPU its programs add in the program's
///   context does not. Savings are CPU work too (crossings and kernel
///   work, time blocked excluded);
/// - else the recorded duration less the recorder's calibrated wall time
///   (once per run, and for every recorded call).
pub fn untraced_run(profile: &Profile, tracer: Option<&TracerCost>, crossing_ns: f64) -> Run {
    let recorded = profile.meta.duration_ns as f64;
    let calls = profile.meta.total_calls as f64;
    let bound = |ns: f64| ns.max(calls * crossing_ns).min(recorded).max(1.0);
    match tracer {
        Some(t) if traced(profile) => {
            let taken = TracerTaken {
                per_call_ns: t.per_call_ns,
                from_cpu: false,
                cpu_ns: 0.0,
                kernel_ns: t.kernel_ns,
                fixed_ns: t.fixed_ns,
                recorded_ns: recorded,
            };
            let (ns, taken) = match (profile.meta.cpu_ns, t.cpu_per_call_ns) {
                (Some(cpu), Some(per_call)) => {
                    let cpu = cpu as f64;
                    (
                        cpu - per_call * calls,
                        TracerTaken { per_call_ns: per_call, from_cpu: true, cpu_ns: cpu, fixed_ns: 0.0, ..taken },
                    )
                }
                _ => (recorded - t.fixed_ns - t.per_call_ns * calls, taken),
            };
            Run { ns: bound(ns), untraced: true, tracer: Some(taken) }
        }
        _ => Run { ns: recorded, untraced: !traced(profile), tracer: None },
    }
}
