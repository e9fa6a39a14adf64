//! The syscall graph in Graphviz dot: edge width by weight, node shade by
//! call count. `dot -Tsvg` renders it. Only the heaviest `top` edges (at
//! least 50) and their nodes are drawn, so that big graphs stay legible.

use crate::{Render, ReportOptions};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use syscluster_model::fmt::count;
use syscluster_model::Profile;

pub struct Dot;

fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

impl Render<Profile> for Dot {
    fn render(&self, p: &Profile, opts: &ReportOptions) -> Vec<u8> {
        let edges: Vec<_> = p.edges.iter().take(opts.top.max(50)).collect();
        let mut shown: BTreeSet<u32> = edges.iter().flat_map(|e| [e.from, e.to]).collect();
        if edges.is_empty() {
            shown.extend(p.nodes.iter().map(|n| n.id));
        }
        let max_w = edges.iter().map(|e| e.weight).max().unwrap_or(1).max(1) as f64;
        let max_c = p.nodes.iter().map(|n| n.count).max().unwrap_or(1).max(1) as f64;
        let mut out = String::new();
        let title = format!("syscall graph of {}", p.meta.command.join(" "));
        let _ = writeln!(out, "// syscluster syscall graph, profile format_version {}", p.format_version);
        let _ = writeln!(out, "digraph syscalls {{");
        let _ = writeln!(out, "  label={}; labelloc=t; fontname=\"Helvetica\";", quote(&title));
        let _ = writeln!(out, "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];");
        let _ = writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=10];");
        for &id in &shown {
            let n = p.node(id);
            // Busier nodes get a darker fill (log scale, 9 shades).
            let shade =
                1 + (((n.count.max(1) as f64).ln() / max_c.ln().max(1e-9)) * 8.0).round().clamp(0.0, 8.0) as u32;
            let font = if shade >= 7 { "white" } else { "black" };
            let _ = writeln!(
                out,
                "  n{id} [label={}, colorscheme=blues9, fillcolor={shade}, fontcolor={font}];",
                quote(&format!("{}\n{} calls", p.label(id), count(n.count)))
            );
        }
        for e in &edges {
            let width = 1.0 + 7.0 * ((e.weight as f64).ln_1p() / max_w.ln_1p());
            let _ = writeln!(
                out,
                "  n{} -> n{} [penwidth={width:.2}, label={}, tooltip={}];",
                e.from,
                e.to,
                quote(&count(e.weight)),
                quote(&format!("{} → {}: {}", p.label(e.from), p.label(e.to), count(e.weight)))
            );
        }
        out.push_str("}\n");
        out.into_bytes()
    }
}
