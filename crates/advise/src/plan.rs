//! The plan of an advice: which clusters to apply at which code locations,
//! by which mechanism, on what evidence. The format itself (its types,
//! reading and checking it) lives in `syscluster_model::plan`, so that its
//! readers -- `syscluster run --plan`, `syscluster cc` -- need not depend on
//! the advisor; docs/PLAN_FORMAT.md describes every field.

use crate::advice::{Advice, Recommendation};
use std::collections::BTreeMap;
pub use syscluster_model::plan::*;
use syscluster_model::syscalls::{self, ArgKind};
use syscluster_model::Profile;

/// The plan of an advice on `profile`.
pub fn from_advice(a: &Advice, p: &Profile) -> Plan {
    let mut modules: BTreeMap<String, Module> = BTreeMap::new();
    let clusters = a
        .recommendations
        .iter()
        .map(|r| {
            for l in &r.locations {
                modules.entry(l.location.module.clone()).or_insert_with(|| Module::of(&l.location.module));
            }
            cluster(r, a, p)
        })
        .collect();
    Plan {
        plan_version: PLAN_VERSION,
        tool: format!("syscluster {}", env!("CARGO_PKG_VERSION")),
        created_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0),
        profile: PlanProfile {
            command: p.meta.command.clone(),
            backend: p.meta.backend.clone(),
            node_key: p.meta.node_key.as_str().into(),
            total_calls: p.meta.total_calls,
            duration_ns: p.meta.duration_ns,
        },
        modules: modules.into_values().collect(),
        clusters,
    }
    .with_code_hashes()
    .with_source_hashes()
}

fn cluster(r: &Recommendation, a: &Advice, p: &Profile) -> Cluster {
    let seq = a.sequences.iter().find(|s| {
        let mut x = s.nodes.clone();
        let mut y = r.nodes.clone();
        x.sort_unstable();
        y.sort_unstable();
        x == y
    });
    let shape = if r.nodes.len() == 1 {
        "run"
    } else if seq.is_some_and(|s| s.kind == "loop") || p.sequences.loops.iter().any(|l| l.nodes == r.nodes) {
        "loop"
    } else {
        "sequence"
    };
    let deps = seq.map(|s| s.dependencies.clone()).unwrap_or_default();
    let calls = r
        .nodes
        .iter()
        .enumerate()
        .map(|(i, &id)| {
            let n = p.node(id);
            let mut args = BTreeMap::new();
            let mut results = BTreeMap::new();
            if let Some(info) = syscalls::by_name(&n.syscall) {
                for (j, arg) in info.args.iter().enumerate() {
                    // Results refer to positions in this cluster's calls.
                    if let Some(d) = deps.iter().find(|d| {
                        seq.is_some_and(|s| s.nodes.get(d.to) == Some(&id) && s.nodes.get(d.from).is_some())
                            && d.arg as usize == j
                    }) {
                        let from = seq.map(|s| s.nodes[d.from]).unwrap_or(0);
                        if let Some(k) = r.nodes.iter().position(|&x| x == from) {
                            results.insert(arg.name.to_string(), k);
                            continue;
                        }
                    }
                    if matches!(arg.kind, ArgKind::Ptr | ArgKind::Path) {
                        continue;
                    }
                    let vp = p.value_profiles.iter().find(|v| v.syscall == n.syscall && v.position == j as i8);
                    if let Some(t) = vp.and_then(|v| v.top.first()).filter(|t| t.share >= 0.9) {
                        args.insert(arg.name.to_string(), t.value);
                    }
                }
            }
            let _ = i;
            PlanCall {
                syscall: n.syscall.clone(),
                nr: n.nr,
                fd: n.key.fd,
                descriptor: n.key.descriptor.clone(),
                args,
                results,
            }
        })
        .collect();
    Cluster {
        id: r.rank,
        rule: r.rule.clone(),
        mechanism: r.mechanism.clone(),
        shape: shape.into(),
        calls,
        locations: r
            .locations
            .iter()
            .map(|l| PlanLocation {
                syscall: l.syscall.clone(),
                module: l.location.module.clone(),
                offset: l.location.offset,
                function: l.location.function.clone(),
                file: l.location.file.clone(),
                line: l.location.line,
                site: l.location.site,
                count: l.count,
                code_hash: None,
                source_hash: None,
                function_hash: None,
                macro_hash: None,
            })
            .collect(),
        parameters: r.parameters.clone(),
        estimated_saving_ns: r.saving.ns,
        share_of_run: r.saving.share_of_run,
        applicable_here: r.applicable_here,
        evidence: r.evidence.clone(),
    }
}

#[cfg(test)]
mod source_hash_tests {
    use super::*;

    #[test]
    fn source_hash_is_the_line_without_its_blanks() {
        let p = std::env::temp_dir().join(format!("sc-source-hash-{}.c", std::process::id()));
        std::fs::write(&p, "int a;\n\t  write(out, buf, n);  \r\nint b;\n").unwrap();
        let line2 = source_hash(&p, 2).unwrap();
        assert_eq!(line2, fnv1a(b"write(out, buf, n);"));
        assert_ne!(line2, source_hash(&p, 1).unwrap());
        assert!(source_hash(&p, 0).is_err());
        assert!(source_hash(&p, 9).is_err());
        std::fs::remove_file(&p).unwrap();
    }
}
