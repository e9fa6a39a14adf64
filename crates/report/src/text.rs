//! The text report: tables that fit the width asked for (80 columns by
//! default; `report --wide` cuts nothing). A profile with losses says so in
//! its first line.

use crate::{ReportOptions, Reporter};
use std::fmt::Write as _;
use syscluster_model::fmt::{bytes, count, duration, fit, fit_end, percent, tasks};
use syscluster_model::profile::Sequence;
use syscluster_model::syscalls::ArgKind;
use syscluster_model::Profile;

pub struct Text;

/// A table whose last column takes the room the others leave. Columns are
/// right-aligned (numbers) unless their width is negative (text: left,
/// cut at the start, as paths are).
struct Table {
    heads: Vec<&'static str>,
    widths: Vec<isize>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(cols: &[(&'static str, isize)]) -> Table {
        Table {
            heads: cols.iter().map(|c| c.0).collect(),
            widths: cols.iter().map(|c| c.1).collect(),
            rows: Vec::new(),
        }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn render(&self, out: &mut String, width: usize) {
        let fixed: usize = self.widths[..self.widths.len() - 1].iter().map(|w| w.unsigned_abs() + 2).sum();
        let last = width.saturating_sub(fixed + 2).max(8);
        let line = |out: &mut String, cells: &[String]| {
            let mut l = String::from("  ");
            for (i, c) in cells.iter().enumerate() {
                let w = self.widths[i];
                if i + 1 == cells.len() {
                    l.push_str(&fit(c, last));
                } else if w < 0 {
                    let w = w.unsigned_abs();
                    let _ = write!(l, "{:<w$}  ", fit_end(c, w));
                } else {
                    let w = w as usize;
                    let _ = write!(l, "{:>w$}  ", fit(c, w));
                }
            }
            out.push_str(l.trim_end());
            out.push('\n');
        };
        let heads: Vec<String> = self.heads.iter().map(|h| h.to_string()).collect();
        line(out, &heads);
        for r in &self.rows {
            line(out, r);
        }
    }
}

fn heading(out: &mut String, title: &str, width: usize) {
    let _ = writeln!(out, "\n{title}");
    let _ = writeln!(out, "{}", "─".repeat(title.chars().count().min(width)));
}

fn sequence_label(p: &Profile, s: &Sequence, closing: bool) -> String {
    let mut parts: Vec<String> = s.nodes.iter().map(|&n| p.label(n)).collect();
    if closing {
        parts.push(p.label(s.nodes[0]));
    }
    parts.join(" → ")
}

fn losses_line(p: &Profile) -> Option<String> {
    if p.lost_events.is_empty() {
        return None;
    }
    let causes: Vec<String> =
        p.lost_events.by_cause.iter().filter(|(_, &n)| n > 0).map(|(c, n)| format!("{c} {}", count(*n))).collect();
    Some(if p.lost_events.total > 0 {
        format!("WARNING: {} calls lost, the graph is incomplete ({})", count(p.lost_events.total), causes.join(", "))
    } else {
        format!("NOTE: details missing from some calls ({})", causes.join(", "))
    })
}

impl Reporter for Text {
    fn render(&self, p: &Profile, opts: &ReportOptions) -> Vec<u8> {
        let mut out = String::new();
        let width = opts.width.max(40);
        if let Some(l) = losses_line(p) {
            out.push_str(&l);
            out.push('\n');
        }
        let m = &p.meta;
        let total = m.total_calls.max(1);
        let cmd = fit(&m.command.join(" "), width - "syscluster profile of: ".len());
        let _ = writeln!(out, "syscluster profile of: {cmd}");
        let exit = match &m.exit {
            Some(e) => match (e.code, e.signal) {
                (_, Some(s)) => format!(", killed by signal {s}"),
                (Some(c), _) => format!(", exit {c}"),
                _ => String::new(),
            },
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "{} calls in {}; {} wall; {}/{}, nodes keyed by {}{}",
            count(m.total_calls),
            tasks(m.processes, m.threads),
            duration(m.duration_ns as f64),
            m.backend,
            m.mode,
            m.node_key.as_str(),
            exit
        );
        if m.runs > 1 {
            let _ = writeln!(out, "merged from {} runs", m.runs);
        }
        let working_total: u64 = p.nodes.iter().map(|n| n.working_ns()).sum();
        let blocked_total: u64 = p.nodes.iter().map(|n| n.blocked_ns).sum();

        heading(&mut out, "Top system calls", width);
        let mut nodes: Vec<_> = p.nodes.iter().collect();
        nodes.sort_by(|a, b| b.count.cmp(&a.count).then(a.id.cmp(&b.id)));
        // Time blocked (off the CPU: waiting, or preempted) is not time the
        // kernel worked: "kernel" is the working time where both are known.
        let blocked = m.collected.kernel_time && m.collected.blocked_time;
        let mut cols = vec![("calls", 10), ("share", 6), ("errors", 8), ("kernel", 9)];
        if blocked {
            cols.push(("blocked", 9));
        }
        cols.push(("system call", 0));
        let mut t = Table::new(&cols);
        for n in nodes.iter().take(opts.top) {
            let kernel = if m.collected.kernel_time { duration(n.working_ns() as f64) } else { "-".into() };
            let mut row = vec![count(n.count), percent(n.count as f64 / total as f64), count(n.errors), kernel];
            if blocked {
                row.push(duration(n.blocked_ns as f64));
            }
            row.push(p.label(n.id));
            t.row(row);
        }
        t.render(&mut out, width);
        if blocked {
            let _ = writeln!(
                out,
                "  time in the kernel: {} working, {} blocked (off the CPU: waiting, not working)",
                duration(working_total as f64),
                duration(blocked_total as f64)
            );
        } else if m.collected.kernel_time {
            let _ = writeln!(out, "  time in the kernel: {} in all", duration(working_total as f64));
        }

        heading(&mut out, "Top edges (b immediately followed a in the same thread)", width);
        let mut t = Table::new(&[("weight", 10), ("share", 6), ("a → b", 0)]);
        for e in p.edges.iter().take(opts.top) {
            t.row(vec![
                count(e.weight),
                percent(e.weight as f64 / total as f64),
                format!("{} → {}", p.label(e.from), p.label(e.to)),
            ]);
        }
        t.render(&mut out, width);

        heading(&mut out, "Hot sequences (greedy chains over the heaviest edges)", width);
        if p.sequences.hot_paths.is_empty() {
            let _ = writeln!(out, "  none: no edge repeats");
        } else {
            let mut t = Table::new(&[("crossings", 10), ("share", 6), ("runs", 10), ("sequence", 0)]);
            for s in p.sequences.hot_paths.iter().take(opts.top) {
                t.row(vec![count(s.crossings), percent(s.share), count(s.weight), sequence_label(p, s, false)]);
            }
            t.render(&mut out, width);
        }

        heading(&mut out, "Loops (cycles that repeat)", width);
        if p.sequences.loops.is_empty() {
            let _ = writeln!(out, "  none");
        } else {
            let mut t = Table::new(&[("crossings", 10), ("share", 6), ("runs", 10), ("loop", 0)]);
            for s in p.sequences.loops.iter().take(opts.top) {
                t.row(vec![count(s.crossings), percent(s.share), count(s.weight), sequence_label(p, s, true)]);
            }
            t.render(&mut out, width);
        }

        if m.collected.callsites {
            heading(&mut out, "Code locations (first frame outside libc)", width);
            let mut t = Table::new(&[("calls", 10), ("system call", -16), ("location", 0)]);
            let mut rows: Vec<(u64, u32, String)> = Vec::new();
            for n in &p.nodes {
                for c in &n.callsites {
                    rows.push((c.count, n.id, c.location.to_string()));
                }
            }
            rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            for (c, id, loc) in rows.into_iter().take(opts.top) {
                t.row(vec![count(c), p.label(id), loc]);
            }
            t.render(&mut out, width);
        }

        if m.collected.value_profiles {
            heading(&mut out, "Value profiles (TNV tables: the most frequent values)", width);
            let mut vps: Vec<_> = p.value_profiles.iter().filter(|v| v.observations >= 2).collect();
            // The tables most worth a look: many observations, one dominant value.
            vps.sort_by(|a, b| {
                let score = |v: &&syscluster_model::profile::ValueProfile| {
                    v.observations as f64 * v.top.first().map_or(0.0, |t| t.share)
                };
                score(b).total_cmp(&score(a)).then(a.syscall.cmp(&b.syscall)).then(a.position.cmp(&b.position))
            });
            let mut t = Table::new(&[("observed", 10), ("not held", 9), ("argument", -22), ("top values (share)", 0)]);
            for v in vps.iter().take(opts.top) {
                let hex = syscluster_model::syscalls::by_name(&v.syscall)
                    .and_then(|s| usize::try_from(v.position).ok().and_then(|i| s.args.get(i)))
                    .is_some_and(|a| matches!(a.kind, ArgKind::Flags | ArgKind::Ptr));
                let tops: Vec<String> = v
                    .top
                    .iter()
                    .take(3)
                    .map(|x| format!("{} ({})", show_value(x.value, hex), percent(x.share)))
                    .collect();
                t.row(vec![
                    count(v.observations),
                    count(v.not_held),
                    format!("{}.{}", v.syscall, v.arg),
                    tops.join(", "),
                ]);
            }
            t.render(&mut out, width);
        }

        if m.collected.io_patterns && !p.io_patterns.is_empty() {
            heading(&mut out, "I/O patterns per file", width);
            for f in p.io_patterns.iter().take(opts.top) {
                let _ = writeln!(out, "  {}  [{}]", fit_end(&f.path, width - 6 - f.class.len()), f.class);
                let sizes: Vec<String> = {
                    let mut b: Vec<_> = f.size_histogram.iter().collect();
                    b.sort_by_key(|x| std::cmp::Reverse(x.reads + x.writes));
                    b.iter()
                        .take(3)
                        .map(|b| format!("{}×{}", size_range(b.min, b.max), count(b.reads + b.writes)))
                        .collect()
                };
                let line = format!(
                    "{} open{}, {} reads, {} writes, {}, {} sequential{}{}",
                    count(f.opens),
                    if f.opens == 1 { "" } else { "s" },
                    count(f.reads),
                    count(f.writes),
                    bytes(f.bytes_read + f.bytes_written),
                    percent(f.sequential_share),
                    if sizes.is_empty() { "" } else { "; sizes " },
                    sizes.join(" ")
                );
                let _ = writeln!(out, "      {}", fit(&line, width - 6));
            }
        }

        heading(&mut out, "Losses", width);
        if p.lost_events.is_empty() {
            let _ = writeln!(out, "  none: every call was recorded");
        } else {
            for (cause, n) in &p.lost_events.by_cause {
                let _ = writeln!(out, "  {:>11}  {cause}", count(*n));
            }
        }
        out.into_bytes()
    }
}

/// A size bucket: "8 B", "4-8 KiB".
fn size_range(min: u64, max: u64) -> String {
    if min == max {
        return bytes(min);
    }
    let (lo, hi) = (bytes(min), bytes(max + 1));
    match (lo.split_once(' '), hi.split_once(' ')) {
        (Some((l, lu)), Some((h, hu))) if lu == hu => format!("{l}-{h} {hu}"),
        _ => format!("{lo}-{hi}"),
    }
}

/// Small counts in decimal; flags, addresses and large values in hex.
fn show_value(v: i64, hex: bool) -> String {
    if !hex && (-4096..=65536).contains(&v) || v == 0 {
        v.to_string()
    } else {
        format!("{v:#x}")
    }
}
