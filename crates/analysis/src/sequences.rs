//! Hot sequences of the syscall graph.
//!
//! *Hot paths* are chains formed greedily over the edges in descending
//! weight (seed 002 §2.1, after Pettis and Hansen's code layout): every node
//! starts as a chain of its own, and an edge a→b joins the chain ending in a
//! to the chain starting with b. An edge joins chains only while it weighs at
//! least a tenth of their heaviest edge, so that a hot pair does not drag a
//! cold tail along.
//!
//! *Loops* are cycles of the graph: for each heavy edge u→v not yet in a
//! loop, the cycle closed by the widest path from v back to u (the path whose
//! lightest edge is heaviest). A loop's weight is its lightest edge, a bound
//! on how many times it ran whole.

use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use syscluster_model::profile::{Edge, Profile, Sequence, Sequences};

#[derive(Clone, Debug)]
pub struct SequenceOptions {
    /// Edges lighter than this are never part of a sequence.
    pub min_weight: u64,
    /// An edge joins two chains only if weight × ratio ≥ their heaviest edge.
    pub join_ratio: u64,
    /// Longest loop searched.
    pub max_loop_len: usize,
    /// How many of each kind are kept.
    pub keep: usize,
}

impl Default for SequenceOptions {
    fn default() -> Self {
        SequenceOptions { min_weight: 2, join_ratio: 10, max_loop_len: 16, keep: 20 }
    }
}

fn sequence(nodes: Vec<u32>, weight: u64, total: u64) -> Sequence {
    let crossings = weight.saturating_mul(nodes.len() as u64);
    let share = if total == 0 { 0.0 } else { crossings as f64 / total as f64 };
    Sequence { nodes, weight, crossings, share }
}

fn rank(mut v: Vec<Sequence>, keep: usize) -> Vec<Sequence> {
    v.sort_by(|a, b| b.crossings.cmp(&a.crossings).then(b.weight.cmp(&a.weight)).then(a.nodes.cmp(&b.nodes)));
    v.truncate(keep);
    v
}

/// Mines hot paths and loops from a profile's graph.
pub fn mine(p: &Profile, opts: &SequenceOptions) -> Sequences {
    let total = p.meta.total_calls.max(p.nodes.iter().map(|n| n.count).sum());
    let mut hot: Vec<(u64, u32, u32)> =
        p.edges.iter().filter(|e| e.weight >= opts.min_weight).map(|e| (e.weight, e.from, e.to)).collect();
    hot.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let weight: FxHashMap<(u32, u32), u64> = hot.iter().map(|&(w, a, b)| ((a, b), w)).collect();
    Sequences { hot_paths: hot_paths(p.nodes.len(), &hot, &weight, total, opts), loops: loops(&hot, &p.edges, total, opts) }
}

fn hot_paths(
    n: usize,
    hot: &[(u64, u32, u32)],
    weight: &FxHashMap<(u32, u32), u64>,
    total: u64,
    opts: &SequenceOptions,
) -> Vec<Sequence> {
    let mut chain_of: Vec<usize> = (0..n).collect();
    let mut chains: Vec<Vec<u32>> = (0..n as u32).map(|i| vec![i]).collect();
    let mut heaviest: Vec<u64> = vec![0; n];
    for &(w, a, b) in hot {
        let (ca, cb) = (chain_of[a as usize], chain_of[b as usize]);
        if a == b || ca == cb || chains[ca].last() != Some(&a) || chains[cb].first() != Some(&b) {
            continue;
        }
        if w.saturating_mul(opts.join_ratio) < heaviest[ca].max(heaviest[cb]) {
            continue;
        }
        let tail = std::mem::take(&mut chains[cb]);
        for &x in &tail {
            chain_of[x as usize] = ca;
        }
        chains[ca].extend(tail);
        heaviest[ca] = heaviest[ca].max(heaviest[cb]).max(w);
    }
    let out = chains
        .into_iter()
        .filter(|c| c.len() >= 2)
        .map(|c| {
            let w = c.windows(2).map(|p| weight[&(p[0], p[1])]).min().unwrap_or(0);
            sequence(c, w, total)
        })
        .collect();
    rank(out, opts.keep)
}

/// The path from `src` to `dst` over hot edges whose lightest edge is
/// heaviest, at most `max_len` edges long.
fn widest_path(
    adj: &FxHashMap<u32, Vec<(u32, u64)>>,
    src: u32,
    dst: u32,
    max_len: usize,
) -> Option<(Vec<u32>, u64)> {
    let mut best: FxHashMap<u32, (u64, u32, usize)> = FxHashMap::default(); // node -> (width, prev, len)
    let mut heap = BinaryHeap::new();
    best.insert(src, (u64::MAX, src, 0));
    heap.push((u64::MAX, Reverse(0usize), src));
    while let Some((width, Reverse(len), x)) = heap.pop() {
        if best.get(&x).is_some_and(|b| b.0 > width) {
            continue;
        }
        if x == dst {
            break;
        }
        if len >= max_len {
            continue;
        }
        for &(y, w) in adj.get(&x).map(|v| v.as_slice()).unwrap_or(&[]) {
            if y == x || y == src {
                continue;
            }
            let nw = width.min(w);
            if best.get(&y).is_none_or(|b| b.0 < nw) {
                best.insert(y, (nw, x, len + 1));
                heap.push((nw, Reverse(len + 1), y));
            }
        }
    }
    let &(width, _, _) = best.get(&dst)?;
    let mut path = vec![dst];
    let mut x = dst;
    while x != src {
        x = best[&x].1;
        path.push(x);
        if path.len() > max_len + 1 {
            return None;
        }
    }
    path.reverse();
    Some((path, width))
}

fn loops(hot: &[(u64, u32, u32)], all: &[Edge], total: u64, opts: &SequenceOptions) -> Vec<Sequence> {
    let mut adj: FxHashMap<u32, Vec<(u32, u64)>> = FxHashMap::default();
    for &(w, a, b) in hot {
        adj.entry(a).or_default().push((b, w));
    }
    let mut covered: rustc_hash::FxHashSet<(u32, u32)> = Default::default();
    let mut found: Vec<Sequence> = Vec::new();
    let mut seen: rustc_hash::FxHashSet<Vec<u32>> = Default::default();
    // Bounded work on huge graphs: the heaviest edges matter.
    for &(w, u, v) in hot.iter().take(400) {
        if covered.contains(&(u, v)) {
            continue;
        }
        let cycle = if u == v {
            Some((vec![u], w))
        } else {
            widest_path(&adj, v, u, opts.max_loop_len.saturating_sub(1)).map(|(path, width)| {
                let mut c = vec![u];
                c.extend(&path[..path.len() - 1]);
                (c, width.min(w))
            })
        };
        let Some((cycle, cw)) = cycle else { continue };
        if cw < opts.min_weight {
            continue;
        }
        for i in 0..cycle.len() {
            covered.insert((cycle[i], cycle[(i + 1) % cycle.len()]));
        }
        let cycle = rotate_to_entry(cycle, all);
        let mut canon = cycle.clone();
        canon.sort_unstable();
        if seen.insert(canon) {
            found.push(sequence(cycle, cw, total));
        }
    }
    rank(found, opts.keep)
}

/// Starts a cycle at its entry: the node with the most weight arriving from
/// outside the cycle (the `read` of a copy loop, entered from `open`).
fn rotate_to_entry(mut cycle: Vec<u32>, all: &[Edge]) -> Vec<u32> {
    let inside: rustc_hash::FxHashSet<u32> = cycle.iter().copied().collect();
    let entry_weight = |x: u32| -> u64 { all.iter().filter(|e| e.to == x && !inside.contains(&e.from)).map(|e| e.weight).sum() };
    let start = (0..cycle.len())
        .max_by(|&i, &j| entry_weight(cycle[i]).cmp(&entry_weight(cycle[j])).then(cycle[j].cmp(&cycle[i])))
        .unwrap_or(0);
    cycle.rotate_left(start);
    cycle
}
