//! `syscluster kmod-gen`: the C source of a multicall.ko specialized to a
//! plan's clusters (seed 000 §3.4, seed 004 §4.2; docs/KMOD.md, "kmod-gen").
//!
//! The module is kmod/multicall.c (the generic interpreter, kept whole) built
//! with `MC_PLAN` and a generated `mc_plan.h`: for every cluster of two calls
//! or more, a guard that recognizes the cluster in a program (its calls, its
//! references, and the constants of its value profile) and straight-line code
//! that runs it, the constants folded.  A program the guards do not
//! recognize runs as in the stock module.
//!
//! The plan is untrusted input: nothing from it is pasted into the C. Call
//! names are looked up in the syscall table and the table's own name and
//! number are written; argument names are looked up in the table's
//! arguments; numbers are range-checked and written by Rust's integer
//! formatting; every other string of the plan (rule, mechanism, paths) is
//! left out.

use crate::flags::KmodGenArgs;
use crate::Failure;
use std::fmt::Write as _;
use std::path::Path;
use syscluster_model::plan::{Cluster, Plan};
use syscluster_model::syscall_lists::{MULTICALL_REFUSED, MULTICALL_REFUSED_IF};
use syscluster_model::syscalls::{self, ArgKind, SyscallInfo};

/// The files of the stock module, copied beside the generated header.
const SOURCES: &[(&str, &str)] = &[
    ("multicall.c", include_str!("../../../../kmod/multicall.c")),
    ("mc_rules.h", include_str!("../../../../kmod/mc_rules.h")),
    ("multicall_trace.h", include_str!("../../../../kmod/multicall_trace.h")),
    ("uapi/multicall_kmod.h", include_str!("../../../../kmod/uapi/multicall_kmod.h")),
    ("syscall_lists.h", include_str!("../../../../data/gen/syscall_lists.h")),
];

const KBUILD: &str = "# Written by syscluster kmod-gen: multicall.ko specialized to a plan.\n\
obj-m := multicall.o\nccflags-y := -I$(src) -Werror -DMC_PLAN\n";

/// Bounds on what one plan may ask for (the module's own bound on calls is
/// 1024; a specialized cluster is straight-line code, so it is kept short).
pub const MAX_CLUSTER_CALLS: usize = 16;
pub const MAX_CLUSTERS: usize = 64;

pub fn run(a: KmodGenArgs) -> Result<i32, Failure> {
    let bad = |m: String| Failure::with_code(one_line(&m), 2);
    let plan = Plan::load(&a.plan).map_err(bad)?;
    let generated = generate(&plan).map_err(|m| bad(format!("plan {}: {m}", a.plan.display())))?;
    write_dir(&a.output, &generated.header)
        .map_err(|e| Failure::new(format!("cannot write {}: {e}", a.output.display())))?;
    for note in &generated.skipped {
        eprintln!("syscluster: kmod-gen: {note}");
    }
    eprintln!(
        "syscluster: kmod-gen: {} cluster(s) specialized → {} (make -C <kernel headers> M={} modules)",
        generated.clusters,
        a.output.display(),
        a.output.display()
    );
    Ok(0)
}

/// A plan's strings may hold anything: an error about them stays one line.
fn one_line(m: &str) -> String {
    m.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

fn write_dir(dir: &Path, header: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("uapi"))?;
    for (name, text) in SOURCES {
        std::fs::write(dir.join(name), text)?;
    }
    std::fs::write(dir.join("Kbuild"), KBUILD)?;
    std::fs::write(dir.join("mc_plan.h"), header)
}

/// What `generate` made of a plan.
pub struct Generated {
    /// mc_plan.h.
    pub header: String,
    /// How many clusters have code of their own.
    pub clusters: usize,
    /// Clusters left to the generic path, and why.
    pub skipped: Vec<String>,
}

/// How one argument of one call of a cluster is known.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Arg {
    /// Whatever the program passes (read from its array).
    Free,
    /// The value profile's constant: guarded, then folded.
    Const(i64),
    /// The result of call k of the cluster (in the plan's order).
    Result(usize),
}

/// A cluster, checked: its calls from the table, each argument's knowledge.
struct Checked {
    id: u32,
    looped: bool,
    calls: Vec<(&'static SyscallInfo, [Arg; 6])>,
}

/// The plan's clusters, checked; mc_plan.h.
pub fn generate(plan: &Plan) -> Result<Generated, String> {
    if plan.clusters.len() > MAX_CLUSTERS * 4 {
        return Err(format!("{} clusters; at most {} are read", plan.clusters.len(), MAX_CLUSTERS * 4));
    }
    let mut kept: Vec<Checked> = Vec::new();
    let mut skipped = Vec::new();
    for c in &plan.clusters {
        let Some(k) = check(c)? else {
            skipped.push(format!("cluster {}: one call repeated (shape run): the generic path runs it", c.id));
            continue;
        };
        // The advice often names one cluster under several rules: one code.
        if kept.iter().any(|o| o.looped == k.looped && same_calls(o, &k)) {
            continue;
        }
        if kept.len() == MAX_CLUSTERS {
            skipped.push(format!("cluster {}: more than {MAX_CLUSTERS} clusters: the generic path runs it", c.id));
            continue;
        }
        kept.push(k);
    }
    let mut h = String::new();
    h.push_str(
        "/* SPDX-License-Identifier: GPL-2.0 */\n\
         /* Written by syscluster kmod-gen from a plan: the plan's clusters as\n \
         * specialized multi-calls of multicall.ko (docs/KMOD.md, \"kmod-gen\").\n \
         * Included by multicall.c under MC_PLAN.  Each cluster: a guard per\n \
         * rotation (its calls, references and value-profile constants), and\n \
         * straight-line code with the constants folded; a program no guard\n \
         * takes runs the generic path. */\n\n",
    );
    for (i, k) in kept.iter().enumerate() {
        let rotations = if k.looped { k.calls.len() } else { 1 };
        for s in 0..rotations {
            emit_guard(&mut h, i, s, k);
            emit_run(&mut h, i, s, k);
        }
    }
    h.push_str("static long mc_plan_run(struct mc_prog *p, bool loop, bool *taken)\n{\n\t*taken = true;\n");
    for (i, k) in kept.iter().enumerate() {
        let rotations = if k.looped { k.calls.len() } else { 1 };
        for s in 0..rotations {
            let _ = writeln!(h, "\tif (mc_plan_{i}_{s}_fits(p, loop))\n\t\treturn mc_plan_{i}_{s}(p, loop);");
        }
    }
    h.push_str("\t*taken = false;\n\treturn 0;\n}\n");
    Ok(Generated { header: h, clusters: kept.len(), skipped })
}

fn same_calls(a: &Checked, b: &Checked) -> bool {
    a.calls.len() == b.calls.len() && a.calls.iter().zip(&b.calls).all(|(x, y)| x.0.nr == y.0.nr && x.1 == y.1)
}

/// Checks one cluster; None for a cluster of one call.
fn check(c: &Cluster) -> Result<Option<Checked>, String> {
    let looped = match c.shape.as_str() {
        "loop" => true,
        "sequence" => false,
        "run" => return Ok(None),
        s => return Err(format!("cluster {}: unknown shape {:?}", c.id, one_line(s))),
    };
    if c.calls.len() < 2 {
        return Ok(None);
    }
    if c.calls.len() > MAX_CLUSTER_CALLS {
        return Err(format!(
            "cluster {}: {} calls; a specialized cluster has at most {MAX_CLUSTER_CALLS}",
            c.id,
            c.calls.len()
        ));
    }
    let mut calls = Vec::with_capacity(c.calls.len());
    for (i, call) in c.calls.iter().enumerate() {
        let at = format!("cluster {} call {i}", c.id);
        let info = syscalls::by_name(&call.syscall)
            .ok_or_else(|| format!("{at}: {:?} is not an x86_64 system call", one_line(&call.syscall)))?;
        if info.nr != call.nr {
            return Err(format!("{at}: {} is number {}, not {}", info.name, info.nr, call.nr));
        }
        if MULTICALL_REFUSED.contains(&info.name) {
            return Err(format!("{at}: {} is refused in a multi-call", info.name));
        }
        let mut args = [Arg::Free; 6];
        for (name, &v) in &call.args {
            let j = arg_of(info, name, &at)?;
            range_check(info, j, v, &at)?;
            args[j] = Arg::Const(v);
        }
        for (name, &k) in &call.results {
            let j = arg_of(info, name, &at)?;
            if k >= c.calls.len() || (!looped && k >= i) {
                return Err(format!(
                    "{at}: {}.{} takes the result of call {k}, which is not before it",
                    info.name, info.args[j].name
                ));
            }
            if args[j] != Arg::Free {
                return Err(format!("{at}: {}.{} is both a constant and a result", info.name, info.args[j].name));
            }
            if !matches!(info.args[j].kind, ArgKind::Size | ArgKind::Fd | ArgKind::Int | ArgKind::Offset) {
                return Err(format!("{at}: {}.{} cannot take a result", info.name, info.args[j].name));
            }
            args[j] = Arg::Result(k);
        }
        // A call refused by an argument's value must have that argument
        // fixed to another value, or it could be the refused one.
        for &(name, j, v) in MULTICALL_REFUSED_IF {
            if name == info.name && !matches!(args[j], Arg::Const(x) if x != v) {
                return Err(format!("{at}: {} is refused in a multi-call when its argument {j} is {v}", info.name));
            }
        }
        calls.push((info, args));
    }
    Ok(Some(Checked { id: c.id, looped, calls }))
}

fn arg_of(info: &SyscallInfo, name: &str, at: &str) -> Result<usize, String> {
    if !info.args_known {
        return Err(format!("{at}: the arguments of {} are not known", info.name));
    }
    info.arg_index(name).ok_or_else(|| format!("{at}: {} has no argument {:?}", info.name, one_line(name)))
}

/// A constant must be a value the argument can take: a descriptor fits an
/// int, a size or an offset is not negative, a pointer is not a value.
fn range_check(info: &SyscallInfo, j: usize, v: i64, at: &str) -> Result<(), String> {
    let a = &info.args[j];
    let ok = match a.kind {
        ArgKind::Fd => (0..=i64::from(i32::MAX)).contains(&v),
        ArgKind::DirFd => (-100..=i64::from(i32::MAX)).contains(&v),
        ArgKind::Size | ArgKind::Offset => v >= 0,
        ArgKind::Flags | ArgKind::Int => true,
        ArgKind::Path | ArgKind::Ptr => {
            return Err(format!("{at}: {}.{} is a pointer: not a value to specialize on", info.name, a.name))
        }
    };
    if !ok {
        return Err(format!("{at}: {}.{} = {v} is out of range for a {:?} argument", info.name, a.name, a.kind));
    }
    Ok(())
}

/// A 64-bit constant as C: i64::MIN has no literal of its own.
fn literal(v: i64) -> String {
    if v == i64::MIN {
        "(-9223372036854775807LL - 1)".into()
    } else {
        format!("{v}LL")
    }
}

/// The plan's call at body position b of rotation s.
fn at_position(k: &Checked, s: usize, b: usize) -> usize {
    (b + s) % k.calls.len()
}

/// The body position of the plan's call q in rotation s.
fn position_of(k: &Checked, s: usize, q: usize) -> usize {
    (q + k.calls.len() - s) % k.calls.len()
}

fn emit_guard(h: &mut String, i: usize, s: usize, k: &Checked) {
    let n = k.calls.len();
    let _ =
        writeln!(h, "/* cluster {} ({} calls{}), rotation {s}: */", k.id, n, if k.looped { ", looped" } else { "" });
    let _ = writeln!(h, "static bool mc_plan_{i}_{s}_fits(const struct mc_prog *p, bool loop)\n{{");
    let _ = writeln!(h, "\tconst struct mc_kmod_call *c = p->c;\n");
    // A looped cluster in its plan's order is also a plain multi-call (one
    // iteration a crossing); rotated, only a looped one.
    let want_loop = if k.looped && s > 0 {
        " && loop"
    } else if k.looped {
        ""
    } else {
        " && !loop"
    };
    if k.looped && s == 0 {
        h.push_str("\t(void)loop;\n");
    }
    let _ = write!(h, "\treturn p->n == {n}{want_loop}");
    for b in 0..n {
        let (info, args) = &k.calls[at_position(k, s, b)];
        let _ = write!(h, " &&\n\t       c[{b}].nr == {} /* {} */", info.nr, info.name);
        for (j, a) in args.iter().enumerate() {
            match *a {
                Arg::Free => {
                    let _ = write!(h, " && !c[{b}].ref[{j}]");
                }
                Arg::Const(v) => {
                    let _ = write!(h, " && !c[{b}].ref[{j}] && c[{b}].args[{j}] == {}", literal(v));
                }
                Arg::Result(q) => {
                    let _ = write!(h, " && c[{b}].ref[{j}] == {}", position_of(k, s, q) + 1);
                }
            }
        }
    }
    h.push_str(";\n}\n\n");
}

fn emit_run(h: &mut String, i: usize, s: usize, k: &Checked) {
    let n = k.calls.len();
    let _ = writeln!(h, "static long mc_plan_{i}_{s}(struct mc_prog *p, bool loop)\n{{");
    h.push_str(
        "\tstruct mc_kmod_call *c = p->c;\n\tunsigned int i = loop ? loop_start(p) : p->hdr.next;\n\tbool first = true;\n\tlong r;\n\n",
    );
    h.push_str("\tfor (;;) {\n\t\tswitch (i) {\n");
    for b in 0..n {
        let (info, args) = &k.calls[at_position(k, s, b)];
        let _ = writeln!(h, "\t\tcase {b}:");
        let mut a = Vec::with_capacity(6);
        for (j, arg) in args.iter().enumerate() {
            a.push(match *arg {
                Arg::Free => format!("c[{b}].args[{j}]"),
                Arg::Const(v) => literal(v),
                Arg::Result(q) => format!("c[{}].result", position_of(k, s, q)),
            });
        }
        let _ = writeln!(h, "\t\t\tr = step(p, {b}, true, &first, {} /* {} */, {});", info.nr, info.name, a.join(", "));
        let _ = writeln!(h, "\t\t\tif (r)\n\t\t\t\treturn r < 0 ? r : mc_spec_stop(p, {b});");
        h.push_str("\t\t\tif (loop && p->hdr.loop.call == ");
        let _ = writeln!(
            h,
            "{b} &&\n\t\t\t    !mc_loop_goes_on(p->hdr.loop.cond, p->hdr.loop.value, c[{b}].result))\n\t\t\t\treturn mc_spec_stop(p, {b}) < 0 ? -EFAULT : {n};"
        );
        if b + 1 < n {
            h.push_str("\t\t\tfallthrough;\n");
        }
    }
    h.push_str("\t\t\tbreak;\n\t\tdefault:\n\t\t\treturn -EINVAL;\n\t\t}\n");
    let _ = writeln!(
        h,
        "\t\tif (!loop || p->hdr.iterations >= p->hdr.loop.max_iterations)\n\t\t\treturn {n};\n\t\tp->hdr.iterations++;\n\t\ti = 0;\n\t}}\n}}\n"
    );
}

#[cfg(test)]
mod tests;
