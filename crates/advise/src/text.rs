//! The advice as text for a terminal: ranked recommendations first, then
//! the analysis of each hot sequence and loop, then what limits the advice.

use crate::advice::{Advice, Evidence, Recommendation, SequenceAnalysis};
use crate::rules::{bytes, count, pct};
use std::fmt::Write as _;

const WIDTH: usize = 80;

pub use syscluster_model::fmt::duration;

/// Wraps `text` to `width` columns, each line starting with `indent`.
pub fn wrap(text: &str, indent: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent.chars().count() + line.chars().count() + 1 + word.chars().count() > width {
            let _ = writeln!(out, "{indent}{line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        let _ = writeln!(out, "{indent}{line}");
    }
    out
}

fn heading(out: &mut String, title: &str) {
    let _ = writeln!(out, "\n{title}\n{}", "─".repeat(title.chars().count().min(WIDTH)));
}

pub fn evidence_text(e: &Evidence) -> String {
    match e {
        Evidence::Edge { from, to, weight } => format!("edge {from} → {to} ×{}", count(*weight)),
        Evidence::ResultMatch { from, to, arg, share, .. } => {
            format!("{to}.{arg} = result of {from} in {}", pct(*share))
        }
        Evidence::Value { syscall, arg, value, share, observations } => {
            let pointer = syscluster_model::syscalls::by_name(syscall)
                .and_then(|s| s.args.iter().find(|a| a.name == arg))
                .is_some_and(|a| a.kind == syscluster_model::syscalls::ArgKind::Ptr);
            let v = if pointer { format!("{value:#x}") } else { value.to_string() };
            format!("{syscall}.{arg} = {v} in {} of {}", pct(*share), count(*observations))
        }
        Evidence::Calls { node, count: c } => format!("{node} ×{}", count(*c)),
        Evidence::Loop { nodes, weight } => {
            format!("loop {} ×{}", nodes.join(" → "), count(*weight))
        }
        Evidence::IoPattern { path, file_kind: kind, class, opens, reads, writes, bytes: b } => format!(
            "{path} ({kind}, {class}): {} opens, {} reads, {} writes, {}",
            count(*opens),
            count(*reads),
            count(*writes),
            bytes(*b)
        ),
        Evidence::Placement { class, detail } => {
            format!("code: {} — {detail}", class.replace('_', " "))
        }
    }
}

fn recommendation(out: &mut String, r: &Recommendation, host: &str) {
    let _ = writeln!(out, "\n#{} {}  [{}]", r.rank, r.title, r.rule);
    let s = &r.saving;
    let up = if s.bound == "upper_bound" { "up to " } else { "~" };
    let _ = writeln!(
        out,
        "    saves {up}{} ({} of the {}): {} → {} calls, {} crossings fewer",
        duration(s.ns),
        pct_fine(s.share_of_run),
        if s.share_of.is_empty() { "run" } else { s.share_of.as_str() },
        count(s.calls_before),
        count(s.calls_after),
        count(s.crossings_removed)
    );
    let _ = writeln!(out, "    = crossings {} + kernel work {}", duration(s.crossing_ns), duration(s.kernel_ns));
    if r.locations.is_empty() {
        let _ = writeln!(out, "    at: {} (no code locations in the profile)", r.labels.join(", "));
    } else {
        let mut sites: Vec<String> = r
            .locations
            .iter()
            .map(|l| {
                format!(
                    "{} {}{} ×{}",
                    l.syscall,
                    l.short,
                    // Without a line, `short` is the function already.
                    l.location
                        .function_name()
                        .filter(|f| !l.short.starts_with(f.as_ref()))
                        .map_or(String::new(), |f| format!(" ({f})")),
                    count(l.count)
                )
            })
            .collect();
        sites.dedup();
        out.push_str(&wrap(&format!("at: {}", sites.join("; ")), "    ", WIDTH));
    }
    out.push_str(&wrap(
        &format!(
            "how: {}{}",
            r.how,
            if r.applicable_here { String::new() } else { format!(" [cannot be applied on {host}]") }
        ),
        "    ",
        WIDTH,
    ));
    if let Some(c) = &r.compiler {
        out.push_str(&wrap(&format!("compiler: {}", compiler_line(c)), "    ", WIDTH));
    }
    out.push('\n');
    out.push_str(&wrap(&r.explanation, "    ", WIDTH));
    for (name, code) in [("before", &r.before), ("after", &r.after)] {
        if code.is_empty() {
            continue;
        }
        let _ = writeln!(out, "    {name}:");
        for l in code.lines() {
            let _ = writeln!(out, "      {l}");
        }
    }
    let _ = writeln!(out, "    evidence:");
    for e in &r.evidence {
        out.push_str(&wrap(&format!("- {}", evidence_text(e)), "      ", WIDTH));
    }
    out.push_str(&wrap(&format!("estimate: {}; costs from {}", s.assumes, s.basis), "    ", WIDTH));
    if !r.overlaps.is_empty() {
        let o: Vec<String> = r.overlaps.iter().map(|x| format!("#{x}")).collect();
        out.push_str(&wrap(
            &format!("alternatives for some of the same calls (savings do not add up): {}", o.join(", ")),
            "    ",
            WIDTH,
        ));
    }
}

fn pct_fine(x: f64) -> String {
    if x < 0.001 {
        format!("{:.2}%", x * 100.0)
    } else {
        format!("{:.1}%", x * 100.0)
    }
}

fn sequence(out: &mut String, s: &SequenceAnalysis) {
    let closing = if s.kind == "loop" && s.labels.len() > 1 { format!(" → {}", s.labels[0]) } else { String::new() };
    let _ = writeln!(out, "\n{} {}{}", if s.kind == "loop" { "loop" } else { "path" }, s.labels.join(" → "), closing);
    let _ = writeln!(
        out,
        "    ×{} runs, {} crossings ({} of all calls)",
        count(s.weight),
        count(s.crossings),
        pct_fine(s.share)
    );
    if !s.dependencies.is_empty() {
        let d: Vec<String> = s
            .dependencies
            .iter()
            .map(|d| format!("{}.{} = result of {} ({})", s.labels[d.to], d.arg_name, s.labels[d.from], pct(d.share)))
            .collect();
        out.push_str(&wrap(&format!("dependencies: {}", d.join("; ")), "    ", WIDTH));
    }
    let place = match s.placement.class.as_str() {
        "unknown" => "unknown (no code locations)".to_string(),
        "no_symbols" => format!("not known (no symbols): {}", s.placement.gaps.join("; ")),
        "adjacent" => format!("adjacent, in {}", s.placement.functions.join(", ")),
        c => format!("{} ({}): {}", c.replace('_', " "), s.placement.functions.join(", "), s.placement.gaps.join("; ")),
    };
    out.push_str(&wrap(&format!("code: {place}"), "    ", WIDTH));
    let b: Vec<String> = s
        .backends
        .iter()
        .map(|b| {
            let note = if b.can_run && !b.available {
                " (not here)"
            } else if b.can_run && b.why.contains("slower than direct") {
                " (slower here)"
            } else {
                ""
            };
            format!("{} {}{note}", b.backend, if b.can_run { "yes" } else { "no" })
        })
        .collect();
    out.push_str(&wrap(&format!("backends: {}", b.join(", ")), "    ", WIDTH));
    if let Some(fu) = s.backends.iter().find(|b| b.backend == "fusion" && b.can_run) {
        out.push_str(&wrap(&format!("fusion: {}", fu.why), "    ", WIDTH));
    }
    if !s.specialization.is_empty() {
        let v: Vec<String> = s
            .specialization
            .iter()
            .map(|v| format!("{}.{} = {} ({})", v.syscall, v.arg, v.value, pct(v.share)))
            .collect();
        out.push_str(&wrap(&format!("specialize on: {}", v.join(", ")), "    ", WIDTH));
    }
}

/// The whole advice as text.
pub fn render(a: &Advice) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "syscluster advice for: {}", a.profile.command.join(" "));
    let c = &a.costs;
    let costs = match (c.source.as_str(), &c.host) {
        ("calibration", None) => format!(
            "costs measured on this machine ({}): a crossing {:.0} ns, a function call {:.1} ns ({:.0}×)",
            c.machine.as_deref().unwrap_or("?"),
            c.crossing_ns,
            c.function_call_ns.unwrap_or(0.0),
            c.crossing_ns / c.function_call_ns.unwrap_or(1.0).max(1e-3)
        ),
        // Advised for a host from a file: the costs are the calibration's,
        // measured where it was made, not here.
        ("calibration", Some(host)) => format!(
            "advised for the host {host} describes; costs from the calibration {}, measured on {}: a crossing {:.0} ns, a function call {:.1} ns ({:.0}×)",
            c.calibration.as_deref().unwrap_or("?"),
            c.machine.as_deref().unwrap_or("?"),
            c.crossing_ns,
            c.function_call_ns.unwrap_or(0.0),
            c.crossing_ns / c.function_call_ns.unwrap_or(1.0).max(1e-3)
        ),
        ("profile", _) => {
            format!("costs from the profile's kernel times (no calibration; crossing assumed {:.0} ns)", c.crossing_ns)
        }
        _ => format!("costs assumed: {:.0} ns per crossing (no calibration, no kernel times)", c.crossing_ns),
    };
    out.push_str(&wrap(&costs, "", WIDTH));
    let _ = writeln!(
        out,
        "profile: {} calls, {}/{}, {} recorded",
        count(a.profile.total_calls),
        a.profile.backend,
        a.profile.mode,
        duration(a.profile.duration_ns as f64)
    );
    if a.costs.run_untraced && a.costs.tracer_ns_per_call.is_some() {
        let of_cpu = a.recommendations.first().is_some_and(|r| r.saving.share_of.contains("CPU"));
        let _ = writeln!(
            out,
            "{}: {} (shares below are of it)",
            if of_cpu { "untraced CPU time (user + system), estimated" } else { "untraced run, estimated" },
            duration(a.costs.run_ns)
        );
    }
    heading(&mut out, "Recommendations, by estimated saving");
    if a.recommendations.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            if a.profile.mode == "aggregate" {
                "  none that the graph alone shows: aggregate mode has no argument values,
  data dependencies or code locations (the notes say which rules need what)"
            } else {
                "  none: no pattern in this profile repeats enough to be worth a rewrite"
            }
        );
    }
    for r in &a.recommendations {
        recommendation(&mut out, r, &crate::facts::host_name(a.costs.host.as_deref()));
    }
    heading(&mut out, "Hot sequences and loops");
    if a.sequences.is_empty() {
        let _ = writeln!(out, "  none: no edge repeats");
    }
    for s in &a.sequences {
        sequence(&mut out, s);
    }
    if !a.notes.is_empty() {
        heading(&mut out, "Notes");
        for n in &a.notes {
            out.push_str(&wrap(&format!("- {n}"), "  ", WIDTH));
        }
    }
    out
}

/// `advise --remarks`: what the compiler plugin did with a recommendation.
fn compiler_line(c: &crate::advice::CompilerVerdict) -> String {
    if c.at.is_empty() {
        return "no remark at its code (its sources were not compiled with this plan by `syscluster cc`)".into();
    }
    let what = if c.applied { "applied" } else { "not applied" };
    format!("{what} at {} ({}: {})", c.at, c.remark, c.message)
}
