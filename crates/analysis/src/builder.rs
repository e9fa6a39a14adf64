//! The profile builder: the GraphBuilder of seed 000 fig. 4, run per thread,
//! plus everything else a profile holds (value profiles, I/O patterns, code
//! locations, data dependencies, losses).
//!
//! Recorders feed it calls in each thread's order (threads may interleave
//! freely) or, for in-kernel aggregation, ready-made counts.

use crate::descriptors::Descriptors;
use crate::io::IoTracker;
use crate::sequences;
use crate::tnv::{Tnv, DEFAULT_SLOTS};
use rustc_hash::{FxHashMap, FxHashSet};
use syscluster_model::profile::{
    Callsite, Edge, Location, LostEvents, Meta, Node, NodeKey, NodeKeyMode, Profile, ResultMatch, ValueCount,
    ValueProfile,
};
use syscluster_model::{syscalls, CodeAddr, LossCause, SyscallEvent, FORMAT_VERSION};

const CLONE_THREAD: i64 = 0x10000;
/// A call made fewer times than this on one file is made on it in passing.
pub const FEW_CALLS_PER_FILE: u64 = 32;
/// A call made in passing on at least this many files is one node, `many
/// files`: a program's loop over files is one loop whatever their number.
pub const MANY_FILES: usize = 16;
/// The descriptor of that node.
pub const MANY_FILES_NAME: &str = syscluster_model::profile::MANY_FILES_DESCRIPTOR;
/// Value profile positions: the six arguments and the result.
const POSITIONS: usize = 7;

/// A node's identity before ids are given: the call plus its key arguments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RawKey {
    pub nr: u32,
    pub fd: Option<i64>,
    /// What the descriptor is (an id of the builder's [`Descriptors`]).
    pub desc: Option<u32>,
    pub site: Option<CodeAddr>,
}

#[derive(Clone, Debug)]
pub struct BuilderOptions {
    pub node_key: NodeKeyMode,
    /// Slots of each TNV table.
    pub tnv_slots: usize,
    pub value_profiles: bool,
    pub io_patterns: bool,
}

impl Default for BuilderOptions {
    fn default() -> Self {
        BuilderOptions {
            node_key: NodeKeyMode::Descriptor,
            tnv_slots: DEFAULT_SLOTS,
            value_profiles: true,
            io_patterns: true,
        }
    }
}

#[derive(Default)]
struct NodeAcc {
    key: RawKey,
    count: u64,
    errors: u64,
    kernel_ns: u64,
    blocked_ns: u64,
    sites: FxHashMap<CodeAddr, u64>,
}

#[derive(Default)]
struct EdgeAcc {
    weight: u64,
    matches: [u64; 6],
}

#[derive(Clone, Copy)]
struct ThreadState {
    node: u32,
    /// The previous call's result, for data dependencies.
    ret: Option<i64>,
}

pub struct ProfileBuilder {
    opts: BuilderOptions,
    nodes: Vec<NodeAcc>,
    index: FxHashMap<RawKey, u32>,
    edges: FxHashMap<(u32, u32), EdgeAcc>,
    threads: FxHashMap<u32, ThreadState>,
    values: Vec<Option<Box<[Tnv; POSITIONS]>>>,
    io: IoTracker,
    descriptors: Descriptors,
    lost: LostEvents,
    pids: FxHashSet<u32>,
    tids: FxHashSet<u32>,
    fd_args: Vec<Option<(u8, bool)>>,
    nargs: Vec<u8>,
    collected_time: bool,
    collected_blocked: bool,
    collected_sites: bool,
    collected_matches: bool,
    events_seen: bool,
}

impl ProfileBuilder {
    pub fn new(opts: BuilderOptions) -> ProfileBuilder {
        let n = syscalls::NR_SYSCALLS;
        let fd_args = (0..n as u32).map(|nr| syscalls::key_fd_arg(nr).map(|(i, d)| (i as u8, d))).collect();
        let nargs = (0..n as u32)
            .map(|nr| syscalls::by_nr(nr).map_or(6, |s| if s.args_known { s.args.len() as u8 } else { 6 }))
            .collect();
        ProfileBuilder {
            opts,
            nodes: Vec::new(),
            index: FxHashMap::default(),
            edges: FxHashMap::default(),
            threads: FxHashMap::default(),
            values: (0..n).map(|_| None).collect(),
            io: IoTracker::new(),
            descriptors: Descriptors::new(),
            lost: LostEvents::default(),
            pids: FxHashSet::default(),
            tids: FxHashSet::default(),
            fd_args,
            nargs,
            collected_time: false,
            collected_blocked: false,
            collected_sites: false,
            collected_matches: false,
            events_seen: false,
        }
    }

    pub fn node_key_mode(&self) -> NodeKeyMode {
        self.opts.node_key
    }

    /// Changes the key mode; only before the first call.
    pub fn set_node_key(&mut self, mode: NodeKeyMode) {
        assert!(self.nodes.is_empty(), "the node key changes before the first call");
        self.opts.node_key = mode;
    }

    /// The node key of a call under the builder's key mode: under
    /// `descriptor`, what its descriptor is before the call.
    #[inline]
    pub fn key_of(&mut self, ev: &SyscallEvent<'_>) -> RawKey {
        let key_fd = || match self.fd_args.get(ev.nr as usize).copied().flatten() {
            Some((i, dirfd)) if ev.knows(i as usize) => {
                let v = ev.arg(i as usize);
                (!dirfd || v != syscalls::AT_FDCWD).then_some(v)
            }
            _ => None,
        };
        match self.opts.node_key {
            NodeKeyMode::Name => RawKey { nr: ev.nr, ..Default::default() },
            NodeKeyMode::Fd => RawKey { nr: ev.nr, fd: key_fd(), ..Default::default() },
            NodeKeyMode::Descriptor => {
                let desc = key_fd().and_then(|fd| self.descriptors.identity(ev.pid, fd));
                RawKey { nr: ev.nr, desc, ..Default::default() }
            }
            NodeKeyMode::Callsite => RawKey { nr: ev.nr, site: ev.callsite, ..Default::default() },
        }
    }

    #[inline]
    fn intern(&mut self, key: RawKey) -> u32 {
        if let Some(&id) = self.index.get(&key) {
            return id;
        }
        let id = self.nodes.len() as u32;
        self.nodes.push(NodeAcc { key, ..Default::default() });
        self.index.insert(key, id);
        id
    }

    /// One call, in its thread's order.
    pub fn event(&mut self, ev: &SyscallEvent<'_>) {
        self.events_seen = true;
        let key = self.key_of(ev);
        let id = self.intern(key);
        {
            let n = &mut self.nodes[id as usize];
            n.count += 1;
            if let Some(r) = ev.ret {
                n.errors += (r < 0) as u64;
            }
            if let Some(ns) = ev.kernel_ns {
                n.kernel_ns += ns;
                self.collected_time = true;
            }
            if let Some(ns) = ev.blocked_ns {
                n.blocked_ns += ns;
                self.collected_blocked = true;
            }
            if let Some(site) = ev.callsite {
                *n.sites.entry(site).or_insert(0) += 1;
                self.collected_sites = true;
            }
        }
        let nargs = self.nargs.get(ev.nr as usize).copied().unwrap_or(6) as usize;
        if let Some(prev) = self.threads.get(&ev.tid).copied() {
            let e = self.edges.entry((prev.node, id)).or_default();
            e.weight += 1;
            if let Some(r) = prev.ret.filter(|&r| r > 0) {
                for (j, m) in e.matches.iter_mut().enumerate().take(nargs) {
                    *m += (ev.knows(j) && ev.arg(j) == r) as u64;
                }
                self.collected_matches = true;
            }
        }
        self.threads.insert(ev.tid, ThreadState { node: id, ret: ev.ret });
        if self.pids.len() < 1 << 20 {
            self.pids.insert(ev.pid);
            self.tids.insert(ev.tid);
        }
        // Calls beyond the table (syscall(1000), x32) get no value profile.
        if let (true, Some(slot)) = (self.opts.value_profiles, self.values.get_mut(ev.nr as usize)) {
            let slots = self.opts.tnv_slots;
            let tables = slot.get_or_insert_with(|| Box::new(std::array::from_fn(|_| Tnv::new(slots))));
            for (j, t) in tables.iter_mut().enumerate().take(nargs) {
                if ev.knows(j) {
                    t.observe(ev.arg(j));
                }
            }
            if let Some(r) = ev.ret {
                tables[6].observe(r);
            }
        }
        if self.opts.io_patterns {
            self.io.event(ev);
        }
        if self.opts.node_key == NodeKeyMode::Descriptor {
            self.descriptors.event(ev);
        }
        self.infer_fork(ev);
    }

    /// Processes appear through fork-like calls in their parent; every
    /// backend sees those, so the builder needs no separate fork events.
    fn infer_fork(&mut self, ev: &SyscallEvent<'_>) {
        let Some(ret) = ev.ret.filter(|&r| r > 0) else { return };
        let name = syscalls::name_of(ev.nr);
        let is_process = match &*name {
            "fork" | "vfork" => true,
            "clone" => ev.arg(0) & CLONE_THREAD == 0,
            // clone3 keeps its flags in memory; a thread wrongly taken for a
            // process only gets an unused copy of the descriptor table.
            "clone3" => true,
            _ => false,
        };
        if is_process {
            self.fork(ev.pid, ret as u32);
        }
    }

    /// A new process `child` was forked from `parent` (backends that see
    /// forks directly say so; fork-like calls are also inferred).
    pub fn fork(&mut self, parent: u32, child: u32) {
        if self.opts.io_patterns {
            self.io.fork(parent, child);
        }
        if self.opts.node_key == NodeKeyMode::Descriptor {
            self.descriptors.fork(parent, child);
        }
    }

    /// Thread `tid` ended: its next call (a reused tid) starts a new chain.
    pub fn thread_exit(&mut self, tid: u32) {
        self.threads.remove(&tid);
    }

    /// Process `pid` ended.
    pub fn process_exit(&mut self, pid: u32) {
        if self.opts.io_patterns {
            self.io.exit(pid);
        }
        self.descriptors.exit(pid);
    }

    /// Counts `n` losses of `cause`.
    pub fn lost(&mut self, cause: LossCause, n: u64) {
        self.lost.add(cause, n);
    }

    /// Counts from in-kernel aggregation: a node's calls, errors and time.
    pub fn add_node_counts(&mut self, key: RawKey, count: u64, errors: u64, kernel_ns: Option<u64>) {
        let id = self.intern(key);
        let n = &mut self.nodes[id as usize];
        n.count += count;
        n.errors += errors;
        if let Some(ns) = kernel_ns {
            n.kernel_ns += ns;
            self.collected_time = true;
        }
    }

    /// Counts from in-kernel aggregation: the part of a node's kernel time
    /// spent off the CPU.
    pub fn add_blocked(&mut self, key: RawKey, blocked_ns: u64) {
        let id = self.intern(key);
        self.nodes[id as usize].blocked_ns += blocked_ns;
        self.collected_blocked = true;
    }

    /// Counts from in-kernel aggregation: an edge's weight.
    pub fn add_edge(&mut self, from: RawKey, to: RawKey, weight: u64) {
        let a = self.intern(from);
        let b = self.intern(to);
        self.edges.entry((a, b)).or_default().weight += weight;
    }

    /// Counts from in-kernel aggregation: calls of a node from a code location.
    pub fn add_callsite(&mut self, key: RawKey, site: CodeAddr, count: u64) {
        let id = self.intern(key);
        *self.nodes[id as usize].sites.entry(site).or_insert(0) += count;
        self.collected_sites = true;
    }

    /// Counts threads and processes that in-kernel aggregation reports.
    pub fn add_task(&mut self, pid: u32, tid: u32) {
        self.pids.insert(pid);
        self.tids.insert(tid);
    }

    /// Under the descriptor key, folds the nodes of each call made in
    /// passing (fewer than [`FEW_CALLS_PER_FILE`] times) on each of at least
    /// [`MANY_FILES`] files into one node keyed `many files`: `git add`
    /// reading 3,000 files, a web server sending 3,000 pages, `tar` — one
    /// loop, as a server's connections are one descriptor. The I/O patterns
    /// keep every file by its path.
    fn fold_many_files(&mut self) {
        if self.opts.node_key != NodeKeyMode::Descriptor {
            return;
        }
        let mut passing: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        for (i, n) in self.nodes.iter().enumerate() {
            if let Some(d) = n.key.desc {
                if n.count < FEW_CALLS_PER_FILE && self.descriptors.is_file(d) {
                    passing.entry(n.key.nr).or_default().push(i as u32);
                }
            }
        }
        passing.retain(|_, ids| ids.len() >= MANY_FILES);
        if passing.is_empty() {
            return;
        }
        let many = self.descriptors.intern(MANY_FILES_NAME);
        // Each folded node goes into the first of its call's (by id: the
        // node order stays the order of first calls).
        let mut into: Vec<u32> = (0..self.nodes.len() as u32).collect();
        for ids in passing.values() {
            for &i in ids {
                into[i as usize] = ids[0];
            }
        }
        let old = std::mem::take(&mut self.nodes);
        let mut new_id = vec![u32::MAX; old.len()];
        for (i, n) in old.into_iter().enumerate() {
            let target = into[i] as usize;
            if target == i {
                new_id[i] = self.nodes.len() as u32;
                let mut n = n;
                if passing.contains_key(&n.key.nr) && passing[&n.key.nr][0] == i as u32 {
                    n.key.desc = Some(many);
                }
                self.nodes.push(n);
            } else {
                let t = &mut self.nodes[new_id[target] as usize];
                t.count += n.count;
                t.errors += n.errors;
                t.kernel_ns += n.kernel_ns;
                t.blocked_ns += n.blocked_ns;
                for (site, c) in n.sites {
                    *t.sites.entry(site).or_insert(0) += c;
                }
            }
        }
        let remap = |i: u32| new_id[into[i as usize] as usize];
        let mut edges: FxHashMap<(u32, u32), EdgeAcc> = FxHashMap::default();
        for ((from, to), e) in std::mem::take(&mut self.edges) {
            let t = edges.entry((remap(from), remap(to))).or_default();
            t.weight += e.weight;
            for (m, x) in t.matches.iter_mut().zip(e.matches) {
                *m += x;
            }
        }
        self.edges = edges;
        self.index = self.nodes.iter().enumerate().map(|(i, n)| (n.key, i as u32)).collect();
        for t in self.threads.values_mut() {
            t.node = remap(t.node);
        }
    }

    /// The finished profile. `resolve` turns code addresses into locations;
    /// `meta` supplies what the recorder knows (the builder fills in counts
    /// and the collected sections).
    pub fn finish(mut self, mut meta: Meta, resolve: &mut dyn FnMut(CodeAddr) -> Location) -> Profile {
        self.fold_many_files();
        let node_key = self.opts.node_key;
        let descriptors = &self.descriptors;
        let nodes: Vec<Node> = self
            .nodes
            .into_iter()
            .enumerate()
            .map(|(i, n)| {
                let mut sites: Vec<(CodeAddr, u64)> = n.sites.into_iter().collect();
                sites.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                let callsites = sites.into_iter().map(|(a, count)| Callsite { location: resolve(a), count }).collect();
                let key = NodeKey {
                    fd: if node_key == NodeKeyMode::Fd { n.key.fd } else { None },
                    descriptor: if node_key == NodeKeyMode::Descriptor {
                        n.key.desc.map(|d| descriptors.name(d).to_string())
                    } else {
                        None
                    },
                    callsite: if node_key == NodeKeyMode::Callsite { n.key.site.map(&mut *resolve) } else { None },
                };
                Node {
                    id: i as u32,
                    syscall: syscalls::name_of(n.key.nr).into_owned(),
                    nr: n.key.nr,
                    key,
                    count: n.count,
                    errors: n.errors,
                    kernel_ns: n.kernel_ns,
                    blocked_ns: n.blocked_ns.min(n.kernel_ns),
                    callsites,
                }
            })
            .collect();
        let mut edges: Vec<Edge> = self
            .edges
            .into_iter()
            .map(|((from, to), e)| Edge {
                from,
                to,
                weight: e.weight,
                result_matches: e
                    .matches
                    .iter()
                    .enumerate()
                    .filter(|(_, &c)| c > 0)
                    .map(|(j, &count)| ResultMatch { arg: j as u8, count })
                    .collect(),
            })
            .collect();
        edges.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.from.cmp(&b.from)).then(a.to.cmp(&b.to)));
        let mut value_profiles = Vec::new();
        for (nr, tables) in self.values.iter().enumerate() {
            let Some(tables) = tables else { continue };
            let info = syscalls::by_nr(nr as u32);
            for (pos, t) in tables.iter().enumerate() {
                if t.observations() == 0 {
                    continue;
                }
                let arg = if pos == 6 {
                    "result".to_string()
                } else {
                    info.and_then(|s| s.args.get(pos)).map_or(format!("arg{pos}"), |a| a.name.to_string())
                };
                let obs = t.observations();
                value_profiles.push(ValueProfile {
                    syscall: syscalls::name_of(nr as u32).into_owned(),
                    arg,
                    position: if pos == 6 { -1 } else { pos as i8 },
                    observations: obs,
                    not_held: t.not_held(),
                    slots: t.capacity() as u32,
                    top: t
                        .top()
                        .into_iter()
                        .map(|(value, count)| ValueCount { value, count, share: count as f64 / obs as f64 })
                        .collect(),
                });
            }
        }
        let total_calls: u64 = nodes.iter().map(|n| n.count).sum();
        meta.total_calls = total_calls;
        meta.node_key = node_key;
        meta.processes = self.pids.len() as u64;
        meta.threads = self.tids.len() as u64;
        meta.runs = meta.runs.max(1);
        meta.collected.kernel_time |= self.collected_time;
        meta.collected.blocked_time |= self.collected_blocked && self.collected_time;
        meta.collected.callsites |= self.collected_sites;
        meta.collected.value_profiles |= self.opts.value_profiles && self.events_seen;
        meta.collected.io_patterns |= self.opts.io_patterns && self.events_seen;
        meta.collected.result_matches |= self.collected_matches;
        let io_patterns = if self.opts.io_patterns { self.io.patterns() } else { Vec::new() };
        let mut profile = Profile {
            format_version: FORMAT_VERSION,
            meta,
            nodes,
            edges,
            value_profiles,
            io_patterns,
            sequences: Default::default(),
            lost_events: self.lost,
        };
        profile.sequences = sequences::mine(&profile, &sequences::SequenceOptions::default());
        profile
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syscluster_model::profile::Meta;

    fn wait4(blocked: Option<u64>) -> SyscallEvent<'static> {
        let mut ev = SyscallEvent::new(1, 1, nr_of("wait4"));
        ev.ret = Some(2);
        ev.kernel_ns = Some(1000);
        ev.blocked_ns = blocked;
        ev
    }

    fn nr_of(name: &str) -> u32 {
        syscalls::by_name(name).expect("known call").nr
    }

    /// A loop over `files` files: openat, read, close each.
    fn walk(files: usize) -> Profile {
        let mut b = ProfileBuilder::new(BuilderOptions::default());
        let mut call = |name: &str, args: &[i64], ret: i64, path: Option<&[u8]>| {
            let mut ev = SyscallEvent::new(1, 1, nr_of(name));
            for (i, a) in args.iter().enumerate() {
                ev.args[i] = *a as u64;
            }
            ev.ret = Some(ret);
            ev.path = path;
            b.event(&ev);
        };
        let paths: Vec<Vec<u8>> = (0..files).map(|i| format!("d/f{i}").into_bytes()).collect();
        for p in &paths {
            call("openat", &[-100, 0, 0], 3, Some(p));
            call("read", &[3, 0, 4096], 10, None);
            call("read", &[3, 0, 4096], 0, None);
            call("close", &[3], 0, None);
        }
        b.finish(Meta::default(), &mut |_| Default::default())
    }

    #[test]
    fn calls_in_passing_on_many_files_are_one_node() {
        let p = walk(MANY_FILES * 3);
        let labels: Vec<_> = p.nodes.iter().map(|n| p.label(n.id)).collect();
        assert_eq!(labels, ["openat", "read(many files)", "close(many files)"]);
        assert_eq!(p.nodes[1].count, MANY_FILES as u64 * 6);
        let l = p.sequences.loops.iter().find(|l| l.nodes.len() == 3).expect("the loop over the files");
        assert_eq!(l.weight, MANY_FILES as u64 * 3 - 1);
        // Every file keeps its I/O pattern.
        assert_eq!(p.io_patterns.iter().filter(|io| io.path.starts_with("d/f")).count(), MANY_FILES * 3);
        // A few files stay by name.
        let p = walk(MANY_FILES - 1);
        assert!(p.nodes.iter().all(|n| !p.label(n.id).contains("many")));
        assert_eq!(p.nodes.iter().filter(|n| n.syscall == "read").count(), MANY_FILES - 1);
    }

    #[test]
    fn blocked_time_is_part_of_kernel_time_and_merges() {
        let mut b = ProfileBuilder::new(BuilderOptions::default());
        b.event(&wait4(Some(900)));
        b.event(&wait4(Some(800)));
        let p = b.finish(Meta::default(), &mut |_| Default::default());
        assert!(p.meta.collected.blocked_time);
        let n = &p.nodes[0];
        assert_eq!((n.kernel_ns, n.blocked_ns, n.working_ns()), (2000, 1700, 300));
        let both = crate::merge::merge(&[p.clone(), p]).expect("merges");
        assert_eq!(both.nodes[0].blocked_ns, 3400);
        assert!(both.meta.collected.blocked_time);

        // A backend that does not measure it: not collected, working = kernel.
        let mut b = ProfileBuilder::new(BuilderOptions::default());
        b.event(&wait4(None));
        let p = b.finish(Meta::default(), &mut |_| Default::default());
        assert!(!p.meta.collected.blocked_time);
        assert_eq!(p.nodes[0].working_ns(), 1000);
    }
}
