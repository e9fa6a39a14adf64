//! Facts about a profile that the rules ask for: edges by endpoints,
//! value profiles, the kind of file behind a node, code locations, and the
//! analysis of each hot sequence and loop (data dependencies, placement of
//! the calls in the code, backends, specialization candidates).

use crate::advice::{BackendFit, CodeSite, Dependency, Evidence, Placement, SequenceAnalysis, ValueCandidate};
use std::collections::{BTreeSet, HashMap};
use syscluster_model::host::Host;
use syscluster_model::profile::{Edge, IoPattern, Location, Node, Sequence, ValueProfile};
use syscluster_model::syscall_lists;
use syscluster_model::syscalls::{self, ArgKind};
use syscluster_model::Profile;

/// Thresholds of the analysis and the rules; all conservative.
#[derive(Clone, Debug)]
pub struct AdviseOptions {
    /// A pattern must repeat at least this often.
    pub min_repeats: u64,
    /// The calls a pattern involves must be at least this share of all calls.
    pub min_share: f64,
    /// An argument depends on the previous call's result when it equals it
    /// in at least this share of the transitions.
    pub dep_share: f64,
    /// A value dominates its argument from this share of observations.
    pub dominant_share: f64,
    /// Buffer of the write-coalescing rewrite, bytes.
    pub coalesce_buffer: u64,
    /// Block size the larger-block rule proposes, bytes.
    pub block_size: u64,
    /// Messages per sendmmsg/recvmmsg the batching rules propose.
    pub batch: u64,
    /// The file the host description came from (`advise --host FILE`);
    /// `None`: this machine, described now.
    pub host_file: Option<String>,
}

impl AdviseOptions {
    /// The host advised for, as the advice names it.
    pub fn host_name(&self) -> String {
        host_name(self.host_file.as_deref())
    }
}

/// `this machine`, or `the host HOST_FILE describes`.
pub fn host_name(host_file: Option<&str>) -> String {
    host_file.map_or_else(|| "this machine".to_string(), |f| format!("the host {f} describes"))
}

impl Default for AdviseOptions {
    fn default() -> Self {
        AdviseOptions {
            min_repeats: 32,
            min_share: 0.01,
            dep_share: 0.8,
            dominant_share: 0.9,
            coalesce_buffer: 64 << 10,
            block_size: 128 << 10,
            batch: 32,
            host_file: None,
        }
    }
}

// The lists of system calls come from data/syscall_properties.tsv, through
// scripts/gen-syscall-lists.py (syscluster_model::syscall_lists).

/// Calls that no multi-call may contain (libmulticall and the kernel module
/// refuse them).
pub const NOT_BATCHABLE: &[&str] = syscall_lists::MULTICALL_REFUSED;

/// Calls that create a descriptor: a loop containing one works on a new
/// object each time round (its arguments are computed by user code).
pub const OPEN_LIKE: &[&str] = syscall_lists::OPENS_FD;

/// Calls that only take data from the program (no output buffer): a loop
/// of these and of reads whose result feeds a later call needs no user code
/// between its iterations.
pub const INPUT_ONLY: &[&str] = syscall_lists::NO_OUTPUT;

/// Whether libmulticall's uring backend expresses a call (a multi-call of
/// only these can run on it).
fn uring_call(name: &str) -> bool {
    syscall_lists::URING_OPS.iter().any(|&(n, _)| n == name)
}

/// Distance between two return addresses under which the calls count as
/// adjacent: argument set-up and a result check, no other work.
pub const ADJACENT_BYTES: u64 = 64;

pub struct Facts<'p> {
    pub p: &'p Profile,
    pub opts: AdviseOptions,
    edges: HashMap<(u32, u32), usize>,
    values: HashMap<(&'p str, i8), &'p ValueProfile>,
    kinds: Vec<Option<&'p IoPattern>>,
    /// What the host lets a program use (libmulticall's backends, the vDSO).
    pub host: &'p Host,
    /// libmulticall's calibrated decisions, when the calibration has them.
    pub multicall: Option<crate::calibration::MulticallDecisions>,
}

impl<'p> Facts<'p> {
    pub fn new(p: &'p Profile, host: &'p Host, opts: AdviseOptions) -> Facts<'p> {
        let edges = p.edges.iter().enumerate().map(|(i, e)| ((e.from, e.to), i)).collect();
        let values = p.value_profiles.iter().map(|v| ((v.syscall.as_str(), v.position), v)).collect();
        let mut f = Facts { p, opts, edges, values, kinds: Vec::new(), host, multicall: None };
        f.kinds = p.nodes.iter().map(|n| f.match_io(n)).collect();
        f
    }

    pub fn total(&self) -> u64 {
        self.p.meta.total_calls.max(1)
    }

    pub fn node(&self, id: u32) -> &'p Node {
        self.p.node(id)
    }

    pub fn label(&self, id: u32) -> String {
        self.p.label(id)
    }

    pub fn edge(&self, from: u32, to: u32) -> Option<&'p Edge> {
        self.edges.get(&(from, to)).map(|&i| &self.p.edges[i])
    }

    pub fn weight(&self, from: u32, to: u32) -> u64 {
        self.edge(from, to).map_or(0, |e| e.weight)
    }

    /// Whether a pattern of `calls` calls repeating `repeats` times is big
    /// enough to advise on.
    pub fn big_enough(&self, repeats: u64, calls: u64) -> bool {
        repeats >= self.opts.min_repeats && calls as f64 >= self.opts.min_share * self.total() as f64
    }

    /// Share of the transitions `from → to` in which argument `arg` of
    /// `to` was `from`'s result.
    pub fn forwarded(&self, from: u32, to: u32, arg: u8) -> f64 {
        match self.edge(from, to) {
            Some(e) if e.weight > 0 => {
                e.result_matches.iter().find(|m| m.arg == arg).map_or(0.0, |m| m.count as f64 / e.weight as f64)
            }
            _ => 0.0,
        }
    }

    /// The value profile of argument `arg` (a name, or "result") of `syscall`.
    pub fn values(&self, syscall: &str, arg: &str) -> Option<&'p ValueProfile> {
        let pos = if arg == "result" { -1 } else { syscalls::by_name(syscall)?.arg_index(arg)? as i8 };
        self.values.get(&(syscall, pos)).copied()
    }

    /// The dominant value of an argument: (value, share, observations).
    pub fn dominant(&self, syscall: &str, arg: &str) -> Option<(i64, f64, u64)> {
        let v = self.values(syscall, arg)?;
        let t = v.top.first()?;
        Some((t.value, t.share, v.observations))
    }

    /// The positive value an argument has in at least half the observations
    /// (a transfer's usual size), if any.
    pub fn usual_size(&self, syscall: &str, arg: &str) -> Option<u64> {
        match self.dominant(syscall, arg) {
            Some((v, s, _)) if s >= 0.5 && v > 0 => Some(v as u64),
            _ => None,
        }
    }

    /// Share of the observations of an argument whose value satisfies `pred`
    /// (values the table did not hold count as not satisfying it).
    pub fn share_where(&self, syscall: &str, arg: &str, pred: impl Fn(i64) -> bool) -> Option<f64> {
        let v = self.values(syscall, arg)?;
        if v.observations == 0 {
            return None;
        }
        Some(v.top.iter().filter(|t| pred(t.value)).map(|t| t.count).sum::<u64>() as f64 / v.observations as f64)
    }

    /// The mean of the held values of an argument that satisfy `pred`.
    pub fn mean_where(&self, syscall: &str, arg: &str, pred: impl Fn(i64) -> bool) -> Option<f64> {
        let v = self.values(syscall, arg)?;
        let (sum, n) = v
            .top
            .iter()
            .filter(|t| pred(t.value))
            .fold((0.0, 0u64), |(s, n), t| (s + t.value as f64 * t.count as f64, n + t.count));
        (n > 0).then(|| sum / n as f64)
    }

    /// The file behind an fd-keyed node, where the I/O patterns name exactly
    /// one whose transfers of the node's direction match its calls (±10 %).
    fn match_io(&self, n: &Node) -> Option<&'p IoPattern> {
        if !n.key.has_descriptor() {
            return None;
        }
        let name = n.syscall.as_str();
        let dir = if syscall_lists::READS.contains(&name) {
            0
        } else if syscall_lists::WRITES.contains(&name) {
            1
        } else {
            return None;
        };
        // Keyed by what the descriptor is: a file by its path, and many
        // files by none of theirs.
        match n.key.descriptor.as_deref() {
            Some(d) if d == syscluster_model::profile::MANY_FILES_DESCRIPTOR => return None,
            Some(d) => {
                if let Some(path) = d.strip_prefix("file ") {
                    return self.p.io_patterns.iter().find(|io| io.path == path);
                }
            }
            None => {}
        }
        let c = n.count as f64;
        let mut found = self.p.io_patterns.iter().filter(|io| {
            let t = if dir == 0 { io.reads } else { io.writes } as f64;
            t >= 0.9 * c && t <= c / 0.9
        });
        let first = found.next()?;
        found.next().is_none().then_some(first)
    }

    /// The I/O pattern of the file behind a node, if known.
    pub fn io_of(&self, id: u32) -> Option<&'p IoPattern> {
        self.kinds.get(id as usize).copied().flatten()
    }

    /// `file`, `socket`, `device`, `pipe`, `other` or `unknown`: the I/O
    /// pattern's kind where one matches the node, else what the node's
    /// descriptor key says (a `many files` node matches no one file's
    /// pattern, and is files).
    pub fn kind_of(&self, id: u32) -> &'p str {
        match self.io_of(id) {
            Some(io) => io.kind.as_str(),
            None => self.node(id).key.descriptor_kind().unwrap_or("unknown"),
        }
    }

    /// The code locations of a node, most frequent first.
    pub fn sites(&self, id: u32) -> Vec<CodeSite> {
        let n = self.node(id);
        let mut v: Vec<CodeSite> = n
            .callsites
            .iter()
            .map(|c| CodeSite {
                syscall: n.syscall.clone(),
                location: c.location.clone(),
                short: c.location.short(),
                count: c.count,
            })
            .collect();
        if v.is_empty() {
            if let Some(loc) = &n.key.callsite {
                v.push(CodeSite {
                    syscall: n.syscall.clone(),
                    location: loc.clone(),
                    short: loc.short(),
                    count: n.count,
                });
            }
        }
        v
    }

    /// Whether every call of a node was made by a raw `syscall`
    /// instruction (its locations' sites: Go's runtime makes its system
    /// calls so), which no preload library sees: `syscluster run` cannot
    /// apply anything to them. False without locations.
    pub fn made_without_libc(&self, id: u32) -> bool {
        let sites = &self.node(id).callsites;
        !sites.is_empty()
            && sites.iter().all(|c| {
                syscluster_model::elf::raw_syscall_at(
                    std::path::Path::new(&c.location.module),
                    c.location.site_offset(),
                )
            })
    }

    /// The most frequent code location of a node.
    pub fn top_site(&self, id: u32) -> Option<Location> {
        let n = self.node(id);
        n.key.callsite.clone().or_else(|| n.callsites.first().map(|c| c.location.clone()))
    }

    /// Where the calls of `nodes` (in order) sit in the code.
    pub fn placement(&self, nodes: &[u32]) -> Placement {
        let sites: Option<Vec<Location>> = nodes.iter().map(|&n| self.top_site(n)).collect();
        let Some(sites) = sites else {
            return Placement { class: "unknown".into(), functions: Vec::new(), gaps: Vec::new() };
        };
        let base = |l: &Location| l.module.rsplit('/').next().unwrap_or(&l.module).to_string();
        // Compared by the symbol's own name: two instances of one generic
        // Rust function demangle to the same name.
        let fname = |l: &Location| format!("{}:{}", base(l), l.function.as_deref().unwrap_or("?"));
        // Shown demangled; without a function name, a location is its
        // module and offset.
        let shown = |l: &Location| match l.function_name() {
            Some(f) => format!("{}:{f}", base(l)),
            None => format!("{}+{:#x}", base(l), l.offset),
        };
        let functions: BTreeSet<String> = sites.iter().map(shown).collect();
        let mut gaps = Vec::new();
        let several = sites.iter().map(fname).collect::<BTreeSet<String>>().len() > 1;
        // Without symbols the offsets say how far apart the calls are, not
        // whether one function holds them.
        let unnamed = sites.iter().any(|l| l.function.is_none());
        for (i, w) in sites.windows(2).enumerate() {
            let (a, b) = (&w[0], &w[1]);
            let (la, lb) = (
                format!("{} ({})", self.node(nodes[i]).syscall, a.short()),
                format!("{} ({})", self.node(nodes[i + 1]).syscall, b.short()),
            );
            if a.module != b.module {
                gaps.push(format!("{la} → {lb}: in different modules (inline one into the other to cluster them)"));
            } else if unnamed && a.offset.abs_diff(b.offset) > ADJACENT_BYTES {
                gaps.push(format!(
                    "{la} → {lb}: {} bytes of code apart in {} (no symbols: whether one function holds both is not known)",
                    a.offset.abs_diff(b.offset),
                    a.module.rsplit('/').next().unwrap_or(&a.module)
                ));
            } else if !unnamed && fname(a) != fname(b) {
                gaps.push(format!("{la} → {lb}: in different functions (inline one into the other to cluster them)"));
            } else if a.offset.abs_diff(b.offset) > ADJACENT_BYTES {
                gaps.push(format!(
                    "{la} → {lb}: {} bytes of code apart (move independent statements out of the way, seed 000 §3.3)",
                    a.offset.abs_diff(b.offset)
                ));
            }
        }
        let modules: BTreeSet<&str> = sites.iter().map(|l| l.module.as_str()).collect();
        let several = several && !unnamed;
        // Calls in different modules are in different functions, symbols or not.
        let class = if gaps.is_empty() {
            "adjacent"
        } else if modules.len() > 1 {
            "several_functions"
        } else if unnamed {
            "no_symbols"
        } else if several {
            "several_functions"
        } else {
            "one_function"
        };
        Placement { class: class.into(), functions: functions.into_iter().collect(), gaps }
    }

    pub fn placement_evidence(&self, nodes: &[u32]) -> Option<Evidence> {
        let pl = self.placement(nodes);
        if pl.class == "unknown" {
            return None;
        }
        let detail = if pl.gaps.is_empty() {
            format!("all in {}, adjacent", pl.functions.join(", "))
        } else {
            pl.gaps.join("; ")
        };
        Some(Evidence::Placement { class: pl.class, detail })
    }

    /// Arguments of the calls of a sequence that carry an earlier call's
    /// result.
    pub fn dependencies(&self, nodes: &[u32], closed: bool) -> Vec<Dependency> {
        let mut deps = Vec::new();
        let n = nodes.len();
        let pairs = if closed && n > 1 { n } else { n.saturating_sub(1) };
        for i in 0..pairs {
            let (a, b) = (nodes[i], nodes[(i + 1) % n]);
            let Some(e) = self.edge(a, b) else { continue };
            let to_name = self.node(b).syscall.as_str();
            for m in &e.result_matches {
                let share = m.count as f64 / e.weight.max(1) as f64;
                // A constant argument that happens to equal the result is no dependency.
                let constant =
                    self.values.get(&(to_name, m.arg as i8)).and_then(|v| v.top.first()).map_or(0.0, |t| t.share);
                let explained = share <= constant || self.coincidence(a, b, m.arg);
                if share >= self.opts.dep_share && (!explained || self.data_flow(a, b, m.arg)) {
                    deps.push(Dependency {
                        from: i,
                        to: (i + 1) % n,
                        arg: m.arg,
                        arg_name: arg_name(&self.node(b).syscall, m.arg as usize),
                        share,
                        via: "result_match".into(),
                    });
                }
            }
        }
        // An fd that is the usual result of an earlier open-like call.
        for j in 0..n {
            let bn = self.node(nodes[j]);
            let Some(fd) = bn.key.fd else { continue };
            let Some((fd_arg, _)) = syscalls::key_fd_arg(bn.nr) else {
                continue;
            };
            for (i, &a) in nodes.iter().enumerate().take(j) {
                let an = self.node(a);
                if !OPEN_LIKE.contains(&an.syscall.as_str())
                    || deps.iter().any(|d| d.to == j && d.arg as usize == fd_arg)
                {
                    continue;
                }
                if let Some((v, share, _)) = self.dominant(&an.syscall, "result") {
                    if v == fd && share >= self.opts.dep_share {
                        deps.push(Dependency {
                            from: i,
                            to: j,
                            arg: fd_arg as u8,
                            arg_name: arg_name(&bn.syscall, fd_arg),
                            share,
                            via: "fd_value".into(),
                        });
                    }
                }
            }
        }
        deps
    }

    /// Whether argument `arg` of `to` equalling `from`'s result is
    /// explained by two constants: the argument has one value (the value
    /// profile's dominant one) and `from`'s result has the same. Equal
    /// values then prove nothing (`read(0).count = result of write(1)`,
    /// both 8 because the block size is 8) — except a read's result passed
    /// as the length of the transfer that follows it: the bytes read are
    /// the bytes sent, and forwarding the result is right whether or not it
    /// is always the same (the last block of a copy is shorter).
    pub fn coincidence(&self, from: u32, to: u32, arg: u8) -> bool {
        let (fnode, tnode) = (self.node(from), self.node(to));
        let dominant = |syscall: &str, pos: i8| {
            self.values
                .get(&(syscall, pos))
                .and_then(|v| v.top.first())
                .filter(|t| t.share >= self.opts.dominant_share)
                .map(|t| t.value)
        };
        let (Some(a), Some(r)) = (dominant(&tnode.syscall, arg as i8), dominant(&fnode.syscall, -1)) else {
            return false;
        };
        a == r && !self.data_flow(from, to, arg)
    }

    /// Whether `to`'s argument `arg` is the length of a transfer and `from`
    /// a read: the read's result is then what the transfer sends.
    pub fn data_flow(&self, from: u32, to: u32, arg: u8) -> bool {
        let reads = matches!(self.node(from).syscall.as_str(), "read" | "pread64" | "recvfrom");
        reads && matches!((self.node(to).syscall.as_str(), arg), ("write" | "pwrite64" | "sendto", 2))
    }

    /// Whether the value profiles of `syscall` (kept per call, not per
    /// node) describe the nodes `ids` of it: they made nearly all its calls.
    pub fn values_describe(&self, syscall: &str, ids: &[u32]) -> bool {
        let all: u64 = self.p.nodes.iter().filter(|n| n.syscall == syscall).map(|n| n.count).sum();
        let these: u64 = ids.iter().map(|&i| self.node(i)).filter(|n| n.syscall == syscall).map(|n| n.count).sum();
        all > 0 && these as f64 >= self.opts.dominant_share * all as f64
    }

    /// Dominant argument values of the calls of a sequence. The value
    /// profiles are per system call: a value is said of the sequence's
    /// nodes only where they made nearly all the calls of it, and never of
    /// the descriptor a node is keyed by (`write(2)` is not specialized on
    /// the `write.fd = 1` of other writes).
    pub fn specialization(&self, nodes: &[u32]) -> Vec<ValueCandidate> {
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        for &id in nodes {
            let n = self.node(id);
            if !seen.insert(n.syscall.clone()) {
                continue;
            }
            let Some(info) = syscalls::by_name(&n.syscall) else {
                continue;
            };
            if !self.values_describe(&n.syscall, nodes) {
                continue;
            }
            let key_fd = syscalls::key_fd_arg(n.nr).map(|k| k.0);
            for (i, a) in info.args.iter().enumerate() {
                if matches!(a.kind, ArgKind::Ptr | ArgKind::Path) {
                    continue;
                }
                if n.key.fd.is_some() && key_fd == Some(i) {
                    continue;
                }
                let Some(v) = self.values.get(&(n.syscall.as_str(), i as i8)) else {
                    continue;
                };
                let Some(t) = v.top.first() else { continue };
                if v.observations >= self.opts.min_repeats && t.share >= self.opts.dominant_share {
                    out.push(ValueCandidate {
                        syscall: n.syscall.clone(),
                        arg: a.name.to_string(),
                        value: t.value,
                        share: t.share,
                        observations: v.observations,
                    });
                }
            }
        }
        out
    }

    /// Whether every scalar argument of the calls of a sequence is either
    /// the same each time (dominant) or forwarded from a result: the
    /// argument safety of seed 000 §3.2, as far as values tell. `None` when
    /// the profile has no value profiles to tell.
    pub fn argument_safe(&self, nodes: &[u32], deps: &[Dependency]) -> Option<Result<(), String>> {
        if !self.p.meta.collected.value_profiles {
            return None;
        }
        for (j, &id) in nodes.iter().enumerate() {
            let n = self.node(id);
            let Some(info) = syscalls::by_name(&n.syscall) else {
                continue;
            };
            for (i, a) in info.args.iter().enumerate() {
                if matches!(a.kind, ArgKind::Ptr | ArgKind::Path) {
                    continue;
                }
                if deps.iter().any(|d| d.to == j && d.arg as usize == i) {
                    continue;
                }
                let Some(v) = self.values.get(&(n.syscall.as_str(), i as i8)) else {
                    continue;
                };
                let share = v.top.first().map_or(0.0, |t| t.share);
                if share < self.opts.dominant_share {
                    return Some(Err(format!(
                        "{}.{} changes from one call to the next (top value {:.0}%)",
                        n.syscall,
                        a.name,
                        share * 100.0
                    )));
                }
            }
        }
        Some(Ok(()))
    }

    /// Which of libmulticall's backends can run a sequence.
    pub fn backends(&self, nodes: &[u32], closed: bool) -> Vec<BackendFit> {
        let names: Vec<&str> = nodes.iter().map(|&n| self.node(n).syscall.as_str()).collect();
        let forbidden: Vec<&str> = names.iter().copied().filter(|s| NOT_BATCHABLE.contains(s)).collect();
        let batchable = forbidden.is_empty();
        let no = |what: &str| format!("contains {what}, which no multi-call may run");
        let fused = self.fusions(nodes, closed);
        let n_pairs = if closed { nodes.len() } else { nodes.len().saturating_sub(1) };
        let not_uring: BTreeSet<&str> = names.iter().copied().filter(|s| !uring_call(s)).collect();
        vec![
            BackendFit {
                backend: "direct".into(),
                can_run: batchable,
                available: true,
                why: if batchable {
                    "the reference semantics: the same crossings, no saving".into()
                } else {
                    no(&forbidden.join(", "))
                },
            },
            BackendFit {
                backend: "fusion".into(),
                can_run: batchable && !fused.is_empty(),
                available: true,
                why: if fused.is_empty() {
                    "no run of these calls fuses into an existing system call".into()
                } else {
                    format!(
                        "fuses {}{}{}",
                        fused.iter().map(|x| x.0.as_str()).collect::<Vec<_>>().join(", "),
                        if fused.len() < n_pairs { "; the other calls run direct" } else { "" },
                        self.fusion_decisions(&fused)
                    )
                },
            },
            BackendFit {
                backend: "uring".into(),
                can_run: batchable && not_uring.is_empty(),
                available: self.host.uring,
                why: if not_uring.is_empty() {
                    match &self.multicall {
                        Some(d) if !d.uring_wins => {
                            "libmulticall's uring backend expresses every call, but libmulticall's calibration found io_uring slower than direct here".into()
                        }
                        Some(_) => "libmulticall's uring backend expresses every call; libmulticall's calibration has it win for some calls here".into(),
                        None => "libmulticall's uring backend expresses every call (linked requests; mc-calibrate decides whether it wins)".into(),
                    }
                } else {
                    format!(
                        "libmulticall's uring backend has no operation for {}",
                        not_uring.into_iter().collect::<Vec<_>>().join(", ")
                    )
                },
            },
            BackendFit {
                backend: "kmod".into(),
                can_run: batchable,
                available: self.host.kmod.usable,
                why: match (batchable, self.host.kmod.usable) {
                    (false, _) => no(&forbidden.join(", ")),
                    (true, true) => "one ioctl runs the whole multi-call: one crossing".into(),
                    (true, false) => format!(
                        "one crossing for the whole multi-call; not on {} (no multicall module answers at {})",
                        self.opts.host_name(),
                        self.host.kmod.device
                    ),
                },
            },
        ]
    }

    /// libmulticall's class of the object behind a node.
    fn mc_class(&self, id: u32) -> &'static str {
        match self.kind_of(id) {
            "socket" => "dgram",
            _ => "file",
        }
    }

    /// What libmulticall's calibration says of these fusions, if it ran.
    fn fusion_decisions(&self, fused: &[(String, String)]) -> String {
        let Some(d) = &self.multicall else {
            return String::new();
        };
        let said: Vec<String> = fused
            .iter()
            .map(|(_, key)| match d.min_run.get(key) {
                Some((0, 0)) => format!("{key} never chosen"),
                Some((u, r)) => {
                    let from = |n: &u64| {
                        if *n == 0 {
                            "never".to_string()
                        } else {
                            format!("from runs of {n}")
                        }
                    };
                    format!("{key} {} ({} with the fd registered)", from(u), from(r))
                }
                None => format!("{key} never chosen"),
            })
            .collect();
        format!("; libmulticall's calibration here: {}", said.join(", "))
    }

    /// The transitions of a sequence that one of libmulticall's fusion
    /// rules covers: a description and the rule.class the calibration uses.
    pub fn fusions(&self, nodes: &[u32], closed: bool) -> Vec<(String, String)> {
        let n = nodes.len();
        let mut out = Vec::new();
        if n == 1 {
            let s = self.node(nodes[0]).syscall.as_str();
            let c = self.mc_class(nodes[0]);
            match s {
                "write" => out.push(("write → write (writev)".to_string(), format!("writev.{c}"))),
                "read" => out.push(("read → read (readv)".to_string(), format!("readv.{c}"))),
                "sendto" | "sendmsg" => out.push((format!("{s} → {s} (sendmmsg)"), "sendmmsg.dgram".to_string())),
                "recvfrom" | "recvmsg" => out.push((format!("{s} → {s} (recvmmsg)"), "recvmmsg.dgram".to_string())),
                _ => {}
            }
            return out;
        }
        let pairs = if closed { n } else { n - 1 };
        for i in 0..pairs {
            let (a, b) = (nodes[i], nodes[(i + 1) % n]);
            let (na, nb) = (self.node(a), self.node(b));
            let same_fd = na.key.same_descriptor(&nb.key);
            let fwd = self.forwarded(a, b, 2) >= self.opts.dep_share;
            let c = self.mc_class(b);
            let rule = match (na.syscall.as_str(), nb.syscall.as_str()) {
                ("lseek", "read") if same_fd => Some(("pread", "seek_pread.file".to_string())),
                ("lseek", "write") if same_fd => Some(("pwrite", "pwritev.file".to_string())),
                ("write", "write") if same_fd => Some(("writev", format!("writev.{c}"))),
                ("read", "read") if same_fd => Some(("readv", format!("readv.{c}"))),
                ("read", "write") if fwd => Some(("copy_file_range/sendfile/splice", "copy.file".to_string())),
                ("read", "sendto") if fwd => Some(("read + sendmmsg (batch_send)", "batch_send.dgram".to_string())),
                ("sendto", "sendto") => Some(("sendmmsg", "sendmmsg.dgram".to_string())),
                ("recvfrom", "recvfrom") => Some(("recvmmsg", "recvmmsg.dgram".to_string())),
                _ => None,
            };
            if let Some((r, key)) = rule {
                out.push((format!("{} → {} ({r})", na.syscall, nb.syscall), key));
            }
        }
        out
    }

    /// The full analysis of one sequence of the profile.
    pub fn analyze(&self, s: &Sequence, is_loop: bool) -> SequenceAnalysis {
        let closed = is_loop && s.nodes.len() > 1;
        let dependencies = self.dependencies(&s.nodes, closed);
        SequenceAnalysis {
            kind: if is_loop { "loop" } else { "hot_path" }.into(),
            nodes: s.nodes.clone(),
            labels: s.nodes.iter().map(|&n| self.label(n)).collect(),
            weight: s.weight,
            crossings: s.crossings,
            share: s.share,
            dependencies,
            placement: self.placement(&s.nodes),
            backends: self.backends(&s.nodes, closed),
            specialization: self.specialization(&s.nodes),
        }
    }
}

pub fn arg_name(syscall: &str, i: usize) -> String {
    syscalls::by_name(syscall).and_then(|s| s.args.get(i)).map_or(format!("arg{i}"), |a| a.name.to_string())
}
