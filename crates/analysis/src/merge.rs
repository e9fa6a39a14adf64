//! Merging profiles of several runs or hosts: counts add up; derived parts
//! (sequences, pattern classes) are computed again from the sums.

use crate::io::classify;
use crate::sequences;
use crate::tnv::Tnv;
use std::collections::BTreeMap;
use syscluster_model::profile::{
    Callsite, Edge, IoPattern, Location, Node, NodeKey, NodeKeyMode, Profile, ResultMatch, SizeBucket, ValueCount,
    ValueProfile,
};
use syscluster_model::FORMAT_VERSION;

/// The node key of the merge of `profiles`: theirs when they all share it,
/// else `name`, the key every other one can be converted to (an fd number
/// or a code location cannot be turned into what a descriptor is, nor the
/// other way round). Profiles of format_version 1 were keyed by `fd` by
/// default: merged with `descriptor` profiles, the result is keyed by name.
pub fn merged_key(profiles: &[Profile]) -> NodeKeyMode {
    match profiles.split_first() {
        Some((first, rest)) if rest.iter().all(|p| p.meta.node_key == first.meta.node_key) => first.meta.node_key,
        Some(_) => NodeKeyMode::Name,
        None => NodeKeyMode::default(),
    }
}

/// Adds up compatible profiles (same architecture). Profiles keyed
/// differently are converted to the key of [`merged_key`]. The first
/// profile's command and machine describe the result.
pub fn merge(profiles: &[Profile]) -> Result<Profile, String> {
    let first = profiles.first().ok_or("nothing to merge")?;
    let key_mode = merged_key(profiles);
    for (i, p) in profiles.iter().enumerate().skip(1) {
        if p.meta.arch != first.meta.arch {
            return Err(format!("profile {} is of {}, profile 1 of {}", i + 1, p.meta.arch, first.meta.arch));
        }
    }
    let mut meta = first.meta.clone();
    meta.node_key = key_mode;
    let mut nodes: Vec<Node> = Vec::new();
    let mut node_index: BTreeMap<(u32, NodeKey), u32> = BTreeMap::new();
    let mut edges: BTreeMap<(u32, u32), (u64, BTreeMap<u8, u64>)> = BTreeMap::new();
    let mut values: BTreeMap<(String, i8), (String, Tnv)> = BTreeMap::new();
    let mut files: BTreeMap<String, IoPattern> = BTreeMap::new();
    let mut lost = syscluster_model::profile::LostEvents::default();
    for (i, p) in profiles.iter().enumerate() {
        if i > 0 {
            meta.duration_ns += p.meta.duration_ns;
            meta.cpu_ns = meta.cpu_ns.zip(p.meta.cpu_ns).map(|(a, b)| a + b);
            meta.runs += p.meta.runs.max(1);
            meta.processes += p.meta.processes;
            meta.threads += p.meta.threads;
            meta.left_running += p.meta.left_running;
            if p.meta.backend != meta.backend {
                meta.backend = "merged".into();
            }
            if p.meta.mode != meta.mode {
                meta.mode = "merged".into();
            }
            if p.meta.command != meta.command {
                meta.command = vec!["(several commands)".into()];
            }
            let c = &mut meta.collected;
            c.kernel_time &= p.meta.collected.kernel_time;
            c.callsites &= p.meta.collected.callsites;
            c.value_profiles &= p.meta.collected.value_profiles;
            c.io_patterns &= p.meta.collected.io_patterns;
            c.result_matches &= p.meta.collected.result_matches;
            c.blocked_time &= p.meta.collected.blocked_time;
            meta.exit = None;
        }
        // Old id -> merged id.
        let mut map = Vec::with_capacity(p.nodes.len());
        let convert = p.meta.node_key != key_mode;
        for n in &p.nodes {
            let key = if convert { NodeKey::default() } else { n.key.clone() };
            let id = *node_index.entry((n.nr, key.clone())).or_insert_with(|| {
                nodes.push(Node {
                    id: nodes.len() as u32,
                    count: 0,
                    errors: 0,
                    kernel_ns: 0,
                    blocked_ns: 0,
                    callsites: vec![],
                    key,
                    ..n.clone()
                });
                nodes.len() as u32 - 1
            });
            let m = &mut nodes[id as usize];
            m.count += n.count;
            m.errors += n.errors;
            m.kernel_ns += n.kernel_ns;
            m.blocked_ns += n.blocked_ns;
            m.callsites.extend(n.callsites.iter().cloned());
            map.push(id);
        }
        for e in &p.edges {
            let slot = edges.entry((map[e.from as usize], map[e.to as usize])).or_default();
            slot.0 += e.weight;
            for r in &e.result_matches {
                *slot.1.entry(r.arg).or_insert(0) += r.count;
            }
        }
        for v in &p.value_profiles {
            let top: Vec<(i64, u64)> = v.top.iter().map(|t| (t.value, t.count)).collect();
            let t = Tnv::from_parts(v.slots as usize, &top, v.observations, v.not_held);
            match values.get_mut(&(v.syscall.clone(), v.position)) {
                Some((_, acc)) => acc.merge(&t),
                None => {
                    values.insert((v.syscall.clone(), v.position), (v.arg.clone(), t));
                }
            }
        }
        for f in &p.io_patterns {
            merge_file(
                files.entry(f.path.clone()).or_insert_with(|| IoPattern {
                    path: f.path.clone(),
                    kind: f.kind.clone(),
                    ..Default::default()
                }),
                f,
            );
        }
        for (cause, n) in &p.lost_events.by_cause {
            *lost.by_cause.entry(cause.clone()).or_insert(0) += n;
        }
        lost.total += p.lost_events.total;
    }
    for n in &mut nodes {
        let mut by_loc: BTreeMap<Location, u64> = BTreeMap::new();
        for c in n.callsites.drain(..) {
            *by_loc.entry(c.location).or_insert(0) += c.count;
        }
        n.callsites = by_loc.into_iter().map(|(location, count)| Callsite { location, count }).collect();
        n.callsites.sort_by(|a, b| b.count.cmp(&a.count).then(a.location.cmp(&b.location)));
    }
    let mut edges: Vec<Edge> = edges
        .into_iter()
        .map(|((from, to), (weight, m))| Edge {
            from,
            to,
            weight,
            result_matches: m.into_iter().map(|(arg, count)| ResultMatch { arg, count }).collect(),
        })
        .collect();
    edges.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.from.cmp(&b.from)).then(a.to.cmp(&b.to)));
    let value_profiles = values
        .into_iter()
        .map(|((syscall, position), (arg, t))| {
            let obs = t.observations();
            ValueProfile {
                syscall,
                arg,
                position,
                observations: obs,
                not_held: t.not_held(),
                slots: t.capacity() as u32,
                top: t
                    .top()
                    .into_iter()
                    .map(|(value, count)| ValueCount { value, count, share: count as f64 / obs.max(1) as f64 })
                    .collect(),
            }
        })
        .collect();
    let mut io_patterns: Vec<IoPattern> = files
        .into_values()
        .map(|mut f| {
            f.class = classify(&f).to_string();
            f
        })
        .collect();
    io_patterns.sort_by(|a, b| (b.reads + b.writes).cmp(&(a.reads + a.writes)).then(a.path.cmp(&b.path)));
    meta.total_calls = nodes.iter().map(|n| n.count).sum();
    let mut out = Profile {
        format_version: FORMAT_VERSION,
        meta,
        nodes,
        edges,
        value_profiles,
        io_patterns,
        sequences: Default::default(),
        lost_events: lost,
    };
    out.sequences = sequences::mine(&out, &sequences::SequenceOptions::default());
    Ok(out)
}

fn merge_file(acc: &mut IoPattern, f: &IoPattern) {
    let (t_acc, t_f) = ((acc.reads + acc.writes) as f64, (f.reads + f.writes) as f64);
    if t_acc + t_f > 0.0 {
        acc.sequential_share = (acc.sequential_share * t_acc + f.sequential_share * t_f) / (t_acc + t_f);
    }
    acc.opens += f.opens;
    acc.reads += f.reads;
    acc.writes += f.writes;
    acc.bytes_read += f.bytes_read;
    acc.bytes_written += f.bytes_written;
    acc.seeks += f.seeks;
    for b in &f.size_histogram {
        match acc.size_histogram.iter_mut().find(|x| x.min == b.min) {
            Some(x) => {
                x.reads += b.reads;
                x.writes += b.writes;
            }
            None => acc.size_histogram.push(SizeBucket { ..b.clone() }),
        }
    }
    acc.size_histogram.sort_by_key(|b| b.min);
}
