//! What the advisor produces: the analysis of every hot sequence and loop,
//! and the ranked recommendations with their evidence and savings. Its JSON
//! form (`advise --format json`) is documented in docs/ADVICE.md.

use serde::{Deserialize, Serialize};
use syscluster_model::profile::Location;

/// The version of the JSON this build writes.
pub const ADVICE_VERSION: u32 = syscluster_model::formats::ADVICE_VERSION;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Advice {
    pub advice_version: u32,
    pub tool: String,
    pub profile: ProfileSummary,
    pub costs: CostBasis,
    /// Every hot sequence and loop of the profile, analysed.
    pub sequences: Vec<SequenceAnalysis>,
    /// Best saving first (rewrites that can be applied on this machine
    /// before those that need a mechanism it lacks).
    pub recommendations: Vec<Recommendation>,
    /// What limits this advice (missing data, tracing overhead, …).
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProfileSummary {
    pub command: Vec<String>,
    pub backend: String,
    pub mode: String,
    pub node_key: String,
    pub total_calls: u64,
    pub duration_ns: u64,
    /// Whether the profile has code locations (`file:line` of each call).
    pub callsites: bool,
}

/// Where the per-call costs come from.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CostBasis {
    /// `calibration` (measured here by `syscluster calibrate`), `profile`
    /// (the profile's own kernel times) or `assumed` (neither).
    pub source: String,
    /// The cost of one crossing, ns.
    pub crossing_ns: f64,
    /// A function call, ns, where measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_call_ns: Option<f64>,
    /// The calibration file used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<String>,
    /// The machine the calibration describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// Whether the profile's kernel times are used for the calls the
    /// calibration does not cover (only precise ones: BPF).
    pub profile_kernel_times: bool,
    /// The run every share is of, ns: the program's CPU time less the
    /// recorder's calibrated CPU cost per call plus the time blocked in
    /// calls, or the recorded duration less the recorder's calibrated wall
    /// time per call, or the recorded duration.
    #[serde(default)]
    pub run_ns: f64,
    /// Whether `run_ns` is the untraced program (estimated).
    #[serde(default)]
    pub run_untraced: bool,
    /// The recorder's cost taken out of the profile's times, per recorded
    /// call: CPU time (where the run is estimated from the program's CPU
    /// time) or wall time, and kernel time, ns (from the calibration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracer_ns_per_call: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracer_kernel_ns_per_call: Option<f64>,
    /// The host description file advised for (`advise --host FILE`);
    /// absent: this machine, described when advising.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SequenceAnalysis {
    /// `loop` or `hot_path`.
    pub kind: String,
    pub nodes: Vec<u32>,
    pub labels: Vec<String>,
    pub weight: u64,
    pub crossings: u64,
    pub share: f64,
    /// Arguments that carry the result of an earlier call of the sequence.
    pub dependencies: Vec<Dependency>,
    /// Whether the calls come from one function and are adjacent.
    pub placement: Placement,
    /// Which multi-call backends can run the sequence.
    pub backends: Vec<BackendFit>,
    /// Dominant argument values: specialization candidates.
    pub specialization: Vec<ValueCandidate>,
}

/// Argument `arg` of call `to` (an index in the sequence) equals the result
/// of call `from` in `share` of the transitions.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Dependency {
    pub from: usize,
    pub to: usize,
    pub arg: u8,
    pub arg_name: String,
    pub share: f64,
    /// `result_match` (counted by the recorder on the edge) or
    /// `fd_value` (the node's fd is the dominant result of an earlier
    /// open-like call).
    pub via: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// `adjacent` (one function, only argument set-up between the calls),
    /// `one_function` (one function, other code between some calls),
    /// `several_functions`, `no_symbols` (code locations without function
    /// names, some calls more than 64 bytes apart: whether one function
    /// holds them is not known), or `unknown` (no code locations).
    pub class: String,
    pub functions: Vec<String>,
    /// One line per transition with code between the calls.
    pub gaps: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BackendFit {
    /// `direct`, `fusion`, `uring`, `kmod` (libmulticall's backends).
    pub backend: String,
    pub can_run: bool,
    /// Whether this machine has the backend.
    pub available: bool,
    pub why: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ValueCandidate {
    pub syscall: String,
    pub arg: String,
    pub value: i64,
    pub share: f64,
    pub observations: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Recommendation {
    /// 1 = best.
    pub rank: u32,
    /// The rule of the catalogue (docs/ADVICE.md).
    pub rule: String,
    pub title: String,
    /// The rule's explanation, then what this profile shows.
    pub explanation: String,
    pub before: String,
    pub after: String,
    /// How the rewrite is done: `pread`, `writev-coalescing`, …
    pub mechanism: String,
    /// Settings of the rewrite taken from the profile (fd, sizes, buffer, …).
    pub parameters: std::collections::BTreeMap<String, String>,
    /// The graph nodes the rewrite changes.
    pub nodes: Vec<u32>,
    pub labels: Vec<String>,
    /// The code that issues those calls.
    pub locations: Vec<CodeSite>,
    pub evidence: Vec<Evidence>,
    pub saving: Saving,
    /// Whether this machine can apply it now, and how.
    pub applicable_here: bool,
    pub how: String,
    /// Ranks of other recommendations that change some of the same calls:
    /// alternatives, whose savings do not add up.
    pub overlaps: Vec<u32>,
    /// What the compiler plugin did with it, from its remarks (`advise
    /// --remarks DIR`); absent without remarks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler: Option<CompilerVerdict>,
}

/// The compiler plugin's answer for one recommendation (crate::remarks).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CompilerVerdict {
    /// A region of it was replaced (a `!Passed` remark).
    pub applied: bool,
    /// The pass decided (replaced or refused); false when it only matched
    /// calls, or when no remark names the recommendation's code (`at`
    /// empty: its sources were not compiled with the plan).
    pub decided: bool,
    /// `file:line` of the remark.
    pub at: String,
    /// The remark's name: `Clustered`, `Region`, `NoGain`, …
    pub remark: String,
    pub message: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CodeSite {
    pub syscall: String,
    pub location: Location,
    /// `file:line` (or function+offset where there is no debug info).
    pub short: String,
    pub count: u64,
}

/// One fact of the profile a recommendation rests on (part of the plan
/// format too: `syscluster_model::plan`).
pub use syscluster_model::plan::Evidence;

/// What a recommendation is estimated to save, and on what basis.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Saving {
    /// Estimated time saved, ns.
    pub ns: f64,
    /// ns / the run's duration: the untraced run, estimated, where the
    /// recorder's cost is calibrated (`share_of` says which).
    pub share_of_run: f64,
    /// What `share_of_run` is of: `untraced CPU time, estimated` (the
    /// program's user + system time with the recorder's taken out),
    /// `untraced run, estimated` (wall time), `traced run` (the recorder's
    /// cost not calibrated) or `run`.
    #[serde(default)]
    pub share_of: String,
    /// `estimate`, or `upper_bound` where the profile cannot tell how much
    /// of the work would go.
    pub bound: String,
    pub calls_before: u64,
    pub calls_after: u64,
    pub crossings_removed: u64,
    /// crossings_removed × the crossing cost.
    pub crossing_ns: f64,
    /// The kernel work that disappears: ns − crossing_ns.
    pub kernel_ns: f64,
    /// Cost of the calls before and after the rewrite, ns.
    pub before_ns: f64,
    pub after_ns: f64,
    /// Where the per-call costs come from.
    pub basis: String,
    /// What the estimate assumes.
    pub assumes: String,
}
