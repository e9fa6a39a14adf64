//! One self-contained HTML page (no network access: styles, script and data
//! are inside): the interactive syscall graph (zoom, pan, hover for weights,
//! click a node for its code locations and value profiles), the ranked
//! recommendations, hot sequences and loops, I/O patterns and top calls.
//!
//! The tables and recommendations are plain HTML; the graph is drawn by a
//! small script (`html/graph.js`) from the JSON embedded in the page.

use crate::{Render, ReportOptions};
use serde_json::json;
use std::fmt::Write as _;
use syscluster_advise::advice::Advice;
use syscluster_advise::text::evidence_text;
use syscluster_model::fmt::{bytes, count, duration, percent, tasks};
use syscluster_model::syscalls::ArgKind;
use syscluster_model::Profile;

const STYLE: &str = include_str!("html/style.css");
const SCRIPT: &str = include_str!("html/graph.js");
/// Edges drawn at most; the rest would only clutter the picture.
const MAX_EDGES: usize = 80;

/// The page without advice (what `by_name("html")` gives).
pub struct Html;

impl Render<Profile> for Html {
    fn render(&self, p: &Profile, _opts: &ReportOptions) -> Vec<u8> {
        page(p, None)
    }
}

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// JSON safe inside a `<script>` element: no `<`, `>`, `&` or line
/// separators that could end it or confuse a parser.
fn script_json(v: &serde_json::Value) -> String {
    let s = serde_json::to_string(v).expect("JSON values serialize");
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("\\u003c"),
            '>' => o.push_str("\\u003e"),
            '&' => o.push_str("\\u0026"),
            '\u{2028}' => o.push_str("\\u2028"),
            '\u{2029}' => o.push_str("\\u2029"),
            c => o.push(c),
        }
    }
    o
}

/// The data the graph script draws from.
fn graph_data(p: &Profile, advice: Option<&Advice>) -> serde_json::Value {
    let nodes: Vec<_> = p
        .nodes
        .iter()
        .map(|n| {
            json!({
                "id": n.id,
                "label": p.label(n.id),
                "syscall": n.syscall,
                "count": n.count,
                "errors": n.errors,
                // Time blocked (off the CPU) is not time the kernel worked.
                "kernel_ns": n.working_ns(),
                "callsites": n.callsites.iter().take(20).map(|c| json!({
                    "where": c.location.short(),
                    "function": c.location.function_name(),
                    "module": c.location.module,
                    "offset": format!("{:#x}", c.location.offset),
                    "count": c.count,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let edges: Vec<_> = p
        .edges
        .iter()
        .take(MAX_EDGES)
        .map(|e| {
            let info = syscluster_model::syscalls::by_name(&p.node(e.to).syscall);
            json!({
                "from": e.from,
                "to": e.to,
                "weight": e.weight,
                "matches": e.result_matches.iter().map(|m| json!({
                    "arg": info.and_then(|s| s.args.get(m.arg as usize)).map_or(format!("arg{}", m.arg), |a| a.name.to_string()),
                    "count": m.count,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let values: Vec<_> = p
        .value_profiles
        .iter()
        .map(|v| {
            // Pointers and flags in hex; as text, since a script's numbers lose 64-bit values.
            let hex = syscluster_model::syscalls::by_name(&v.syscall)
                .and_then(|s| usize::try_from(v.position).ok().and_then(|i| s.args.get(i)))
                .is_some_and(|a| matches!(a.kind, ArgKind::Ptr | ArgKind::Flags));
            json!({
                "syscall": v.syscall,
                "arg": v.arg,
                "observations": v.observations,
                "not_held": v.not_held,
                "top": v.top.iter().take(6).map(|t| json!([if hex && t.value > 9 { format!("{:#x}", t.value) } else { t.value.to_string() }, t.share])).collect::<Vec<_>>(),
            })
        })
        .collect();
    let recs: Vec<_> = advice
        .map(|a| a.recommendations.iter().map(|r| json!({"rank": r.rank, "rule": r.rule, "nodes": r.nodes})).collect())
        .unwrap_or_default();
    json!({"format": "syscluster-html-data", "version": 1, "nodes": nodes, "edges": edges, "values": values, "recommendations": recs, "total": p.meta.total_calls})
}

fn recommendations(out: &mut String, a: &Advice) {
    let c = &a.costs;
    let host = syscluster_advise::facts::host_name(c.host.as_deref());
    let _ = writeln!(
        out,
        "<section id=\"advice\"><h2>Recommendations <small>by estimated saving on {}</small></h2>",
        esc(&host)
    );
    let basis = match c.source.as_str() {
        "calibration" => format!(
            "Costs measured {} ({}): a crossing {:.0} ns, a function call {:.1} ns.",
            match &c.host {
                None => "here".to_string(),
                Some(_) => format!("by the calibration {}", esc(c.calibration.as_deref().unwrap_or("?"))),
            },
            esc(c.machine.as_deref().unwrap_or("")),
            c.crossing_ns,
            c.function_call_ns.unwrap_or(0.0)
        ),
        "profile" => {
            format!("No calibration: costs from the profile's kernel times, crossing assumed {:.0} ns.", c.crossing_ns)
        }
        _ => format!("No calibration and no kernel times: {:.0} ns assumed per crossing.", c.crossing_ns),
    };
    let _ = writeln!(out, "<p class=\"basis\">{basis}</p>");
    if a.recommendations.is_empty() {
        let _ = writeln!(
            out,
            "<p id=\"no-recommendations\">None: no pattern in this profile repeats enough to be worth a rewrite.</p>"
        );
    }
    let _ = writeln!(out, "<ol id=\"recommendations\">");
    for r in &a.recommendations {
        let s = &r.saving;
        let _ = writeln!(
            out,
            "<li class=\"rec{}\" id=\"rec-{}\" data-rule=\"{}\" data-nodes=\"{}\" data-saving-ns=\"{:.0}\">",
            if r.applicable_here { "" } else { " elsewhere" },
            r.rank,
            esc(&r.rule),
            r.nodes.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(" "),
            s.ns
        );
        let _ = writeln!(
            out,
            "<h3><span class=\"rank\">#{}</span> {} <code class=\"rule\">{}</code></h3>",
            r.rank,
            esc(&r.title),
            esc(&r.rule)
        );
        let _ = writeln!(
            out,
            "<p class=\"saving\">saves {}{} ({:.2}% of the {}): {} → {} calls, {} crossings fewer ({} crossings + {} kernel work)</p>",
            if s.bound == "upper_bound" { "up to " } else { "~" },
            duration(s.ns),
            s.share_of_run * 100.0,
            esc(if s.share_of.is_empty() { "run" } else { &s.share_of }),
            count(s.calls_before),
            count(s.calls_after),
            count(s.crossings_removed),
            duration(s.crossing_ns),
            duration(s.kernel_ns)
        );
        if r.locations.is_empty() {
            let _ = writeln!(
                out,
                "<p class=\"where\">at {} <em>(no code locations in the profile)</em></p>",
                esc(&r.labels.join(", "))
            );
        } else {
            let sites: Vec<String> = r
                .locations
                .iter()
                .map(|l| {
                    format!("<code class=\"loc\">{}</code> {} ×{}", esc(&l.short), esc(&l.syscall), count(l.count))
                })
                .collect();
            let _ = writeln!(out, "<p class=\"where\">at {}</p>", sites.join(", "));
        }
        let _ = writeln!(
            out,
            "<p class=\"how\">{}{}</p>",
            esc(&r.how),
            if r.applicable_here { String::new() } else { format!(" <strong>(not on {})</strong>", esc(&host)) }
        );
        let _ = writeln!(out, "<p>{}</p>", esc(&r.explanation));
        let _ = writeln!(
            out,
            "<div class=\"sketch\"><div><h4>before</h4><pre>{}</pre></div><div><h4>after</h4><pre>{}</pre></div></div>",
            esc(&r.before),
            esc(&r.after)
        );
        let _ = writeln!(out, "<details><summary>evidence and estimate</summary><ul>");
        for e in &r.evidence {
            let _ = writeln!(out, "<li>{}</li>", esc(&evidence_text(e)));
        }
        let _ = writeln!(out, "</ul><p>Estimate: {}. Costs from {}.</p>", esc(&s.assumes), esc(&s.basis));
        if !r.overlaps.is_empty() {
            let o: Vec<String> = r.overlaps.iter().map(|x| format!("#{x}")).collect();
            let _ = writeln!(
                out,
                "<p>Alternatives for some of the same calls (savings do not add up): {}</p>",
                o.join(", ")
            );
        }
        let _ = writeln!(out, "</details></li>");
    }
    let _ = writeln!(out, "</ol>");
    if !a.notes.is_empty() {
        let _ = writeln!(out, "<ul class=\"notes\">");
        for n in &a.notes {
            let _ = writeln!(out, "<li>{}</li>", esc(n));
        }
        let _ = writeln!(out, "</ul>");
    }
    let _ = writeln!(out, "</section>");
}

fn sequences(out: &mut String, p: &Profile, a: Option<&Advice>) {
    let _ = writeln!(out, "<section id=\"sequences\"><h2>Hot sequences and loops</h2>");
    if p.sequences.hot_paths.is_empty() && p.sequences.loops.is_empty() {
        let _ = writeln!(out, "<p>None: no edge repeats.</p></section>");
        return;
    }
    let _ = writeln!(out, "<table><thead><tr><th>kind</th><th>calls</th><th>runs</th><th>crossings</th><th>share</th><th>data dependencies</th><th>code</th><th>backends</th></tr></thead><tbody>");
    let analysed: Vec<_> = match a {
        Some(a) => a
            .sequences
            .iter()
            .map(|s| (s.kind.clone(), s.nodes.clone(), s.weight, s.crossings, s.share, Some(s)))
            .collect(),
        None => p
            .sequences
            .loops
            .iter()
            .map(|s| ("loop".to_string(), s.nodes.clone(), s.weight, s.crossings, s.share, None))
            .chain(
                p.sequences
                    .hot_paths
                    .iter()
                    .map(|s| ("hot_path".to_string(), s.nodes.clone(), s.weight, s.crossings, s.share, None)),
            )
            .collect(),
    };
    for (kind, nodes, weight, crossings, share, s) in analysed {
        let mut labels: Vec<String> = nodes.iter().map(|&n| p.label(n)).collect();
        if kind == "loop" && labels.len() > 1 {
            labels.push(labels[0].clone());
        }
        let (deps, code, backends) = match s {
            Some(s) => (
                s.dependencies
                    .iter()
                    .map(|d| {
                        format!(
                            "{}.{} = result of {} ({})",
                            p.label(s.nodes[d.to]),
                            d.arg_name,
                            p.label(s.nodes[d.from]),
                            percent(d.share)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
                s.placement.class.replace('_', " "),
                s.backends
                    .iter()
                    .filter(|b| b.can_run)
                    .map(|b| if b.available { b.backend.clone() } else { format!("{} (not here)", b.backend) })
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            None => (String::new(), String::new(), String::new()),
        };
        let _ = writeln!(
            out,
            "<tr class=\"seq\" data-nodes=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            nodes.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(" "),
            if kind == "loop" { "loop" } else { "path" },
            esc(&labels.join(" → ")),
            count(weight),
            count(crossings),
            percent(share),
            esc(&deps),
            esc(&code),
            esc(&backends)
        );
    }
    let _ = writeln!(out, "</tbody></table></section>");
}

fn io_patterns(out: &mut String, p: &Profile) {
    let _ = writeln!(out, "<section id=\"io\"><h2>I/O patterns</h2>");
    if p.io_patterns.is_empty() {
        let what = if p.meta.collected.io_patterns {
            "no file was opened, read or written"
        } else {
            "not collected by this recording"
        };
        let _ = writeln!(out, "<p>None: {what}.</p></section>");
        return;
    }
    let _ = writeln!(out, "<table><thead><tr><th>file</th><th>kind</th><th>class</th><th>opens</th><th>reads</th><th>writes</th><th>bytes</th><th>sequential</th><th>sizes</th></tr></thead><tbody>");
    for f in &p.io_patterns {
        let mut b: Vec<_> = f.size_histogram.iter().collect();
        b.sort_by_key(|x| std::cmp::Reverse(x.reads + x.writes));
        let sizes: Vec<String> = b
            .iter()
            .take(3)
            .map(|b| format!("{}–{}: {}", bytes(b.min), bytes(b.max), count(b.reads + b.writes)))
            .collect();
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&f.path),
            esc(&f.kind),
            esc(&f.class),
            count(f.opens),
            count(f.reads),
            count(f.writes),
            bytes(f.bytes_read + f.bytes_written),
            percent(f.sequential_share),
            esc(&sizes.join(", "))
        );
    }
    let _ = writeln!(out, "</tbody></table></section>");
}

fn top_calls(out: &mut String, p: &Profile) {
    let _ = writeln!(out, "<section id=\"calls\"><h2>Top system calls</h2><table><thead><tr><th>call</th><th>count</th><th>share</th><th>errors</th><th>kernel time (working, not blocked)</th></tr></thead><tbody>");
    let mut nodes: Vec<_> = p.nodes.iter().collect();
    nodes.sort_by(|a, b| b.count.cmp(&a.count).then(a.id.cmp(&b.id)));
    let total = p.meta.total_calls.max(1) as f64;
    for n in nodes.iter().take(25) {
        let k = if p.meta.collected.kernel_time { duration(n.working_ns() as f64) } else { "–".into() };
        let _ = writeln!(
            out,
            "<tr data-node=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            n.id,
            esc(&p.label(n.id)),
            count(n.count),
            percent(n.count as f64 / total),
            count(n.errors),
            k
        );
    }
    let _ = writeln!(out, "</tbody></table></section>");
}

/// The whole page; `advice` adds the recommendations.
pub fn page(p: &Profile, advice: Option<&Advice>) -> Vec<u8> {
    let m = &p.meta;
    let cmd = m.command.join(" ");
    let mut out = String::new();
    let _ = writeln!(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = writeln!(
        out,
        "<meta name=\"generator\" content=\"{}\">",
        esc(&format!("syscluster {} (profile format_version {})", env!("CARGO_PKG_VERSION"), p.format_version))
    );
    let _ = writeln!(out, "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">");
    let _ = writeln!(out, "<title>syscluster: {}</title>\n<style>{STYLE}</style></head><body>", esc(&cmd));
    let _ = writeln!(out, "<header><h1>syscluster profile of <code>{}</code></h1>", esc(&cmd));
    let _ = writeln!(
        out,
        "<p class=\"summary\">{} calls in {}; {} recorded with {}/{}; nodes keyed by {}.</p>",
        count(m.total_calls),
        tasks(m.processes, m.threads),
        duration(m.duration_ns as f64),
        esc(&m.backend),
        esc(&m.mode),
        m.node_key.as_str()
    );
    if p.lost_events.total > 0 {
        let _ = writeln!(
            out,
            "<p class=\"warn\">{} calls were lost while recording: the graph is incomplete.</p>",
            count(p.lost_events.total)
        );
    }
    let _ = writeln!(out, "</header><main>");
    if let Some(a) = advice {
        recommendations(&mut out, a);
    }
    let _ = writeln!(
        out,
        "<section id=\"graph-section\"><h2>Syscall graph <small>the heaviest {} edges; wheel or buttons to zoom, drag to pan, hover for weights, click a node for its code locations and value profiles</small></h2>",
        p.edges.len().min(MAX_EDGES)
    );
    let _ = writeln!(
        out,
        "<div class=\"controls\"><button id=\"zoom-in\" type=\"button\">+</button><button id=\"zoom-out\" type=\"button\">−</button><button id=\"zoom-reset\" type=\"button\">fit</button></div>"
    );
    let _ = writeln!(out, "<div id=\"graph-wrap\"><div id=\"graph\"><noscript>The graph needs JavaScript; the tables below do not.</noscript></div><aside id=\"details\"><p>Click a node.</p></aside></div><div id=\"tooltip\" hidden></div></section>");
    sequences(&mut out, p, advice);
    io_patterns(&mut out, p);
    top_calls(&mut out, p);
    let _ = writeln!(out, "</main>");
    let _ =
        writeln!(out, "<script type=\"application/json\" id=\"data\">{}</script>", script_json(&graph_data(p, advice)));
    let _ = writeln!(out, "<script>{SCRIPT}</script></body></html>");
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use syscluster_model::profile::{IoPattern, Meta, Node, NodeKey};

    /// Names from the traced program (its argv, file names) cannot end the
    /// page's script or inject markup.
    #[test]
    fn program_text_is_escaped_everywhere() {
        let evil = "</script><script>alert(1)</script>\u{2028}<b>&";
        let p = Profile {
            format_version: 1,
            meta: Meta { command: vec![evil.into()], total_calls: 3, ..Default::default() },
            nodes: vec![Node {
                id: 0,
                syscall: "write".into(),
                nr: 1,
                key: NodeKey { fd: Some(3), ..Default::default() },
                count: 3,
                errors: 0,
                kernel_ns: 0,
                blocked_ns: 0,
                callsites: vec![],
            }],
            io_patterns: vec![IoPattern {
                path: evil.into(),
                kind: "file".into(),
                class: "mixed".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let page = String::from_utf8(page(&p, None)).unwrap();
        assert!(!page.contains("<script>alert"), "injected script:\n{page}");
        assert!(!page.contains("<b>&"), "injected markup");
        assert_eq!(page.matches("<script").count(), 2, "the data and the graph script, nothing else");
        assert_eq!(page.matches("</script>").count(), 2);
        // The data still carries the name, escaped for JSON.
        let data = page
            .split("<script type=\"application/json\" id=\"data\">")
            .nth(1)
            .unwrap()
            .split("</script>")
            .next()
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["nodes"][0]["label"], "write(3)");
        assert_eq!(v["version"], 1);
    }
}
