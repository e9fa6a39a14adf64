//! The general rules of seed 000: a multi-call of a hot cluster, and a
//! looped multi-call of a whole loop.

use super::{call_text, count, Estimate, Finding, Part, Rule};
use crate::advice::{Dependency, Evidence};
use crate::cost::{Basis, CostModel, Priced};
use crate::facts::{Facts, INPUT_ONLY, NOT_BATCHABLE, OPEN_LIKE};
use syscluster_model::syscalls::{self, ArgKind};

pub static MULTICALL: Rule = Rule {
    id: "multicall",
    title: "Cluster the hot sequence into one multi-call",
    mechanism: "multi-call",
    explanation: "These calls follow one another in this order again and again, and every argument is a \
constant, a variable set before the sequence, or the result of an earlier call of it (seed 000 §3.2's \
argument safety). A libmulticall multi-call runs them in order with one crossing (kmod backend); calls \
marked checked stop the chain at the first error and mc_run returns its index, so the program's own \
error handling runs as before (seed 000 fig. 7). Calls in different functions must be brought together \
first (inlining), and statements between them moved out of the way when they are independent (§3.3).",
    before: "",
    after: "",
};

pub static LOOPED: Rule = Rule {
    id: "looped-multicall",
    title: "Run the whole loop as one looped multi-call",
    mechanism: "looped-multi-call",
    explanation: "Every call of this loop takes its arguments from constants or from results of calls of \
the loop, the same each time round (seed 000 §3.2's argument safety, checked on the value profiles), so \
the whole loop — not just its body — can run in the kernel with one crossing (seed 000 §3.4): \
mc_run_loop repeats the body while a chosen result satisfies a condition. No user code needs the loop's \
data between iterations: every read's result feeds a later call, the other calls only take input. \
Checked calls stop the loop at the first error and report which one failed, so the program's error \
handling stays.",
    before: "",
    after: "",
};

/// `mc_prep_syscall` lines for the calls of a sequence.
fn mc_body(f: &Facts, nodes: &[u32], deps: &[Dependency], name: &str) -> String {
    let mut s = format!("struct mc_call {name}[{}];\n", nodes.len());
    for (i, &id) in nodes.iter().enumerate() {
        let n = f.node(id);
        let info = syscalls::by_name(&n.syscall);
        let mut args: Vec<String> = Vec::new();
        let mut refs = Vec::new();
        for j in 0..6 {
            let a = info.and_then(|s| s.args.get(j));
            let Some(a) = a else {
                args.push("0".into());
                continue;
            };
            if let Some(d) = deps.iter().find(|d| d.to == i && d.arg as usize == j) {
                args.push("0".into());
                refs.push(format!(
                    "mc_set_ref(&{name}[{i}], {j}, {});   /* {} = result of {}[{}] */",
                    d.from, a.name, name, d.from
                ));
                continue;
            }
            let key_fd = syscalls::key_fd_arg(n.nr).is_some_and(|k| k.0 == j);
            args.push(match a.kind {
                ArgKind::Fd | ArgKind::DirFd if key_fd && n.key.fd.is_some() => {
                    n.key.fd.unwrap_or_default().to_string()
                }
                ArgKind::Ptr | ArgKind::Path => format!("(long){}", a.name),
                _ => match f.dominant(&n.syscall, a.name) {
                    Some((v, share, _)) if share >= f.opts.dominant_share => {
                        if a.kind == ArgKind::DirFd && v == syscalls::AT_FDCWD {
                            "AT_FDCWD".into()
                        } else if a.kind == ArgKind::Flags && v > 9 {
                            format!("{v:#x}")
                        } else {
                            v.to_string()
                        }
                    }
                    _ => a.name.to_string(),
                },
            });
        }
        s.push_str(&format!("mc_prep_syscall(&{name}[{i}], SYS_{}, {});\n", n.syscall, args.join(", ")));
        for r in refs {
            s.push_str(&r);
            s.push('\n');
        }
        s.push_str(&format!("mc_set_check(&{name}[{i}]);\n"));
    }
    s
}

fn before_text(f: &Facts, nodes: &[u32], deps: &[Dependency], looped: bool) -> String {
    let body: Vec<String> =
        nodes.iter().enumerate().map(|(i, &id)| format!("{};", call_text(f, id, i, deps))).collect();
    if looped {
        format!("while (…) {{\n    {}\n}}", body.join("\n    "))
    } else {
        body.join("\n")
    }
}

/// What shows a dependency of the sequence `nodes`. A `result_match` was
/// counted on the edge: its transitions in which the argument was the
/// result (share × the edge's weight). An `fd_value` was not counted on
/// any edge — the descriptor is the value the open-like call returned in
/// most of its calls —, so its evidence is that value profile, not a result
/// match (no count of matches was ever made for it).
pub(crate) fn dependency_evidence(f: &Facts, nodes: &[u32], d: &Dependency) -> Option<Evidence> {
    let (a, b) = (nodes[d.from], nodes[d.to]);
    if d.via == "fd_value" {
        return super::value_evidence(f, &f.node(a).syscall, "result");
    }
    let e = f.edge(a, b).map_or(0, |e| e.weight);
    Some(Evidence::ResultMatch {
        from: f.label(a),
        to: f.label(b),
        arg: d.arg_name.clone(),
        count: (d.share * e as f64).round() as u64,
        share: d.share,
    })
}

/// The evidence of every dependency in `deps`, each fact once: several
/// calls taking the descriptor an open returned rest on the same value
/// profile.
fn add_dependency_evidence(f: &Facts, nodes: &[u32], deps: &[Dependency], evidence: &mut Vec<Evidence>) {
    for e in deps.iter().filter_map(|d| dependency_evidence(f, nodes, d)) {
        if !evidence.contains(&e) {
            evidence.push(e);
        }
    }
}

/// (data/syscall_properties.tsv, class reads.)
const READ_LIKE: &[&str] = syscluster_model::syscall_lists::READS;

pub fn find(f: &Facts, cost: &CostModel, out: &mut Vec<Finding>) {
    let crossing =
        Priced { ns: cost.crossing(), basis: if cost.calibrated() { Basis::Calibrated } else { Basis::CrossingOnly } };
    let how_kmod = |specific: &str| {
        if f.host.kmod.usable {
            format!("libmulticall {specific} with the kmod backend")
        } else {
            format!(
                "libmulticall {specific} with the kmod backend — not on {} (no {}; the kernel takes no modules): use the fusion rewrites of the same calls",
                f.opts.host_name(),
                f.host.kmod.device
            )
        }
    };
    let mut looped_nodes: Vec<Vec<u32>> = Vec::new();
    for l in &f.p.sequences.loops {
        let k = l.nodes.len();
        if k < 2 || !f.big_enough(l.weight, l.weight * k as u64) {
            continue;
        }
        let names: Vec<&str> = l.nodes.iter().map(|&n| f.node(n).syscall.as_str()).collect();
        if names.iter().any(|s| NOT_BATCHABLE.contains(s) || OPEN_LIKE.contains(s)) {
            continue;
        }
        let deps = f.dependencies(&l.nodes, true);
        match f.argument_safe(&l.nodes, &deps) {
            Some(Ok(())) => {}
            _ => continue,
        }
        // Every output must feed a later call of the loop: a read whose
        // result is a later call's argument; other calls only take input.
        // Otherwise user code consumes it inside the loop.
        let feeds_next = |i: usize| {
            let (a, b) = (l.nodes[i], l.nodes[(i + 1) % k]);
            (0..6).any(|arg| f.forwarded(a, b, arg) >= f.opts.dep_share)
        };
        let outputs_used = names
            .iter()
            .enumerate()
            .all(|(i, s)| INPUT_ONLY.contains(s) || (READ_LIKE.contains(s) && i + 1 < k && feeds_next(i)));
        if !outputs_used {
            continue;
        }
        let w = l.weight;
        let first_reads = READ_LIKE.contains(&names[0]);
        let cond = if first_reads {
            "struct mc_loop l = { .call = 0, .cond = MC_WHILE_GT, .value = 0, .max_iterations = ULONG_MAX };   /* while the read returns data */"
                .to_string()
        } else {
            "struct mc_loop l = { .call = 0, .cond = MC_WHILE_GE, .value = 0, .max_iterations = N };   /* the loop's own count */".to_string()
        };
        let after = format!(
            "{}{cond}\nunsigned long it;\nint k = mc_run_loop(ctx, body, {k}, &l, &it);\nif (k < {k}) {{ /* body[k].result is -errno: the original error handling */ }}",
            mc_body(f, &l.nodes, &deps, "body")
        );
        let specific = match names.as_slice() {
            ["read", "write"] => "mc_copy() (or mc_run_loop())",
            ["read", "sendto"] => "mc_read_sendto() (or mc_run_loop())",
            _ => "mc_run_loop()",
        };
        let mut evidence = vec![Evidence::Loop { nodes: l.nodes.iter().map(|&n| f.label(n)).collect(), weight: w }];
        add_dependency_evidence(f, &l.nodes, &deps, &mut evidence);
        for v in f.specialization(&l.nodes) {
            evidence.push(Evidence::Value {
                syscall: v.syscall,
                arg: v.arg,
                value: v.value,
                share: v.share,
                observations: v.observations,
            });
        }
        evidence.extend(f.placement_evidence(&l.nodes));
        looped_nodes.push(l.nodes.clone());
        out.push(Finding {
            rule: &LOOPED,
            nodes: l.nodes.clone(),
            vars: vec![],
            specifics: format!(
                "Here the loop {} ran {} times: {} crossings that one looped multi-call makes one.",
                l.nodes.iter().map(|&n| f.label(n)).collect::<Vec<_>>().join(" → "),
                count(w),
                count(w * k as u64)
            ),
            evidence,
            saving: Estimate {
                before: vec![Part::new((w * k as u64) as f64, crossing)],
                after: vec![Part::new(1.0, crossing)],
                crossings_removed: (w * k as u64).saturating_sub(1),
                upper_bound: false,
                assumes: "the kmod backend runs the loop in one crossing; the kernel work of the calls stays".into(),
            },
            applicable_here: f.host.kmod.usable,
            how: how_kmod(specific),
            mechanism: None,
            sketch: Some((before_text(f, &l.nodes, &deps, true), after)),
        });
    }
    for h in &f.p.sequences.hot_paths {
        let k = h.nodes.len();
        if k < 2 || !f.big_enough(h.weight, h.weight * k as u64) {
            continue;
        }
        if h.nodes.iter().any(|&n| NOT_BATCHABLE.contains(&f.node(n).syscall.as_str())) {
            continue;
        }
        if looped_nodes.iter().any(|l| h.nodes.iter().all(|n| l.contains(n))) {
            continue;
        }
        // A cluster runs as a whole: most calls of each of its nodes are in it.
        if h.nodes.iter().any(|&n| 2 * h.weight < f.node(n).count) {
            continue;
        }
        // Skip a path every transition of which a specialized rewrite covers.
        let covered =
            h.nodes.windows(2).all(|p| out.iter().any(|o| o.nodes.contains(&p[0]) && o.nodes.contains(&p[1])));
        if covered {
            continue;
        }
        let w = h.weight;
        let deps = f.dependencies(&h.nodes, false);
        if !matches!(f.argument_safe(&h.nodes, &deps), Some(Ok(()))) {
            continue;
        }
        let after = format!(
            "{}int k = mc_run(ctx, c, {k});\nif (k < {k}) {{ /* c[k].result is -errno: the original error handling (seed 000 fig. 7) */ }}",
            mc_body(f, &h.nodes, &deps, "c")
        );
        let mut evidence: Vec<Evidence> = h.nodes.windows(2).map(|p| super::edge_evidence(f, p[0], p[1])).collect();
        add_dependency_evidence(f, &h.nodes, &deps, &mut evidence);
        evidence.extend(f.placement_evidence(&h.nodes));
        out.push(Finding {
            rule: &MULTICALL,
            nodes: h.nodes.clone(),
            vars: vec![],
            specifics: format!(
                "Here {} ran {} times: {} crossings, of which one multi-call keeps one per run.",
                h.nodes.iter().map(|&n| f.label(n)).collect::<Vec<_>>().join(" → "),
                count(w),
                count(w * k as u64)
            ),
            evidence,
            saving: Estimate {
                before: vec![Part::new((w * k as u64) as f64, crossing)],
                after: vec![Part::new(w as f64, crossing)],
                crossings_removed: w * (k as u64 - 1),
                upper_bound: false,
                assumes: "the kmod backend runs each sequence in one crossing; the kernel work of the calls stays"
                    .into(),
            },
            applicable_here: f.host.kmod.usable,
            how: how_kmod("mc_run()"),
            mechanism: None,
            sketch: Some((before_text(f, &h.nodes, &deps, false), after)),
        });
    }
}
