//! Hot sequences of the syscall graph.
//!
//! *Hot paths* are chains formed greedily over the edges in descending
//! weight (seed 002 §2.1, after Pettis and Hansen's code layout): every node
//! starts as a chain of its own, and an edge a→b joins the chain ending in a
//! to the chain starting with b. An edge joins chains only while it weighs at
//! least a tenth of their heaviest edge, so that a hot pair does not drag a
//! cold tail along.
//!
//! *Loops* are cycles of the graph: for each heavy edge u→v, the cycle
//! closed by the widest path from v back to u (the path whose lightest edge
//! is heaviest). A loop's weight is its lightest edge, a bound on how many
//! times it ran whole; it is taken off the edges of the loop before the
//! next loop is searched, so that loops never share a transition.

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
    Sequences {
        hot_paths: hot_paths(p.nodes.len(), &hot, &weight, total, opts),
        loops: loops(&hot, &p.edges, total, opts),
    }
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

/// The path from `src` to `dst` over edges with residual weight, whose
/// lightest edge is heaviest, at most `max_len` edges long.
fn widest_path(
    adj: &FxHashMap<u32, Vec<u32>>,
    residual: &FxHashMap<(u32, u32), u64>,
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
        for &y in adj.get(&x).map(|v| v.as_slice()).unwrap_or(&[]) {
            let w = residual.get(&(x, y)).copied().unwrap_or(0);
            if y == x || y == src || w == 0 {
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

/// Loops as a decomposition of the edge weights: each loop found takes its
/// weight off every edge it uses, and later loops are found in what is
/// left. A transition (a call following another) so belongs to one loop at
/// most, and the loops' crossings add up to at most the calls: their
/// shares of the same calls never exceed 100 % together. (Each loop used to
/// be measured on the whole graph: loops sharing nodes — a server's event
/// wait with each connection's read and write — counted the same calls
/// once per loop.)
fn loops(hot: &[(u64, u32, u32)], all: &[Edge], total: u64, opts: &SequenceOptions) -> Vec<Sequence> {
    let mut adj: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    let mut residual: FxHashMap<(u32, u32), u64> = FxHashMap::default();
    for &(w, a, b) in hot {
        adj.entry(a).or_default().push(b);
        residual.insert((a, b), w);
    }
    let mut found: Vec<Sequence> = Vec::new();
    let mut by_nodes: FxHashMap<Vec<u32>, usize> = FxHashMap::default();
    // Bounded work on huge graphs: the heaviest edges matter.
    for &(_, u, v) in hot.iter().take(400) {
        let w = residual[&(u, v)];
        if w < opts.min_weight {
            continue;
        }
        let cycle = if u == v {
            Some((vec![u], w))
        } else {
            widest_path(&adj, &residual, v, u, opts.max_loop_len.saturating_sub(1)).map(|(path, width)| {
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
            *residual.get_mut(&(cycle[i], cycle[(i + 1) % cycle.len()])).expect("a hot edge") -= cw;
        }
        let cycle = rotate_to_entry(cycle, all);
        match by_nodes.get(&cycle) {
            // The same loop again, in what the first pass left: one loop.
            Some(&i) => found[i] = sequence(cycle, found[i].weight + cw, total),
            None => {
                by_nodes.insert(cycle.clone(), found.len());
                found.push(sequence(cycle, cw, total));
            }
        }
    }
    rank(found, opts.keep)
}

/// Starts a cycle at its entry: the node with the most weight arriving from
/// outside the cycle (the `read` of a copy loop, entered from `open`).
fn rotate_to_entry(mut cycle: Vec<u32>, all: &[Edge]) -> Vec<u32> {
    let inside: rustc_hash::FxHashSet<u32> = cycle.iter().copied().collect();
    let entry_weight =
        |x: u32| -> u64 { all.iter().filter(|e| e.to == x && !inside.contains(&e.from)).map(|e| e.weight).sum() };
    let start = (0..cycle.len())
        .max_by(|&i, &j| entry_weight(cycle[i]).cmp(&entry_weight(cycle[j])).then(cycle[j].cmp(&cycle[i])))
        .unwrap_or(0);
    cycle.rotate_left(start);
    cycle
}

#[cfg(test)]
mod tests {
    use super::*;
    use syscluster_model::profile::{Meta, Node, NodeKey};

    /// A graph from `(from, to, weight)` edges; node counts are what the
    /// edges bring in.
    fn graph(n: u32, edges: &[(u32, u32, u64)]) -> Profile {
        let mut count = vec![0u64; n as usize];
        for &(_, b, w) in edges {
            count[b as usize] += w;
        }
        let nodes = (0..n)
            .map(|i| Node {
                id: i,
                syscall: format!("call{i}"),
                nr: i,
                key: NodeKey::default(),
                count: count[i as usize],
                errors: 0,
                kernel_ns: 0,
                blocked_ns: 0,
                callsites: vec![],
            })
            .collect();
        let edges = edges.iter().map(|&(from, to, weight)| Edge { from, to, weight, result_matches: vec![] }).collect();
        let total = count.iter().sum();
        Profile { meta: Meta { total_calls: total, ..Default::default() }, nodes, edges, ..Default::default() }
    }

    #[test]
    fn loops_sharing_a_hub_never_add_up_to_more_than_all_calls() {
        // An event loop: wait (0) → read(k) → write(k) → wait, for ten
        // connections keyed apart, plus the crossings between them.
        let mut e = Vec::new();
        for k in 0..10u32 {
            let (r, w) = (1 + 2 * k, 2 + 2 * k);
            e.push((0, r, 100));
            e.push((r, w, 100));
            e.push((w, 0, 90));
            e.push((w, 1 + 2 * ((k + 1) % 10), 10));
        }
        let p = graph(21, &e);
        let s = mine(&p, &SequenceOptions::default());
        let sum: f64 = s.loops.iter().map(|l| l.share).sum();
        assert!(!s.loops.is_empty());
        assert!(sum <= 1.0 + 1e-9, "loop shares add up to {sum}");
        let crossings: u64 = s.loops.iter().map(|l| l.crossings).sum();
        assert!(crossings <= p.meta.total_calls);
    }

    #[test]
    fn a_transition_belongs_to_one_loop_only() {
        // A→B is in the loop A→B→A and on the widest way back of C→A: it
        // was counted by both loops (500 crossings of 400 calls).
        let p = graph(3, &[(0, 1, 100), (1, 0, 100), (2, 0, 100), (1, 2, 100)]);
        let s = mine(&p, &SequenceOptions::default());
        let crossings: u64 = s.loops.iter().map(|l| l.crossings).sum();
        assert!(
            crossings <= p.meta.total_calls,
            "{crossings} crossings of {} calls: {:?}",
            p.meta.total_calls,
            s.loops
        );
    }

    #[test]
    fn one_loop_keyed_once_is_found_once_with_its_full_weight() {
        // wait → read → write → wait, 1000 times: one loop of weight 1000.
        let p = graph(3, &[(0, 1, 1000), (1, 2, 1000), (2, 0, 999)]);
        let s = mine(&p, &SequenceOptions::default());
        assert_eq!(s.loops.len(), 1, "{:?}", s.loops);
        assert_eq!(s.loops[0].weight, 999);
        assert!(s.loops[0].share <= 1.0);
    }
}
