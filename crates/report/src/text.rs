//! Text: the profile's report, tables that fit the width asked for (80
//! columns by default; `report --wide` cuts nothing; a profile with losses
//! says so in its first line); advice; a calibration; `stat`'s and
//! `verify`'s tables.

use crate::{spread, Exit, Render, ReportOptions, Stat, Verification};
use std::fmt::Write as _;
use syscluster_advise::calibration::MulticallDecisions;
use syscluster_advise::{Advice, Calibration};
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

impl Render<Profile> for Text {
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

impl Render<Advice> for Text {
    fn render(&self, advice: &Advice, _opts: &ReportOptions) -> Vec<u8> {
        // The advisor's own words (its tests read them there too).
        syscluster_advise::text::render(advice).into_bytes()
    }
}

impl Render<Calibration> for Text {
    fn render(&self, c: &Calibration, _opts: &ReportOptions) -> Vec<u8> {
        let mut o = String::new();
        let x = &c.crossing;
        let _ = writeln!(o, "Crossing against function call (seed 000 table 1), measured on {}", c.machine);
        let _ = writeln!(o, "  {:<28} {:>10} {:>10} {:>8}", "", "ns", "median ns", "ratio");
        let _ = writeln!(
            o,
            "  {:<28} {:>10.1} {:>10.1} {:>7.0}×",
            format!("system call ({})", x.syscall),
            x.syscall_ns,
            x.syscall_median_ns,
            x.ratio
        );
        let _ = writeln!(
            o,
            "  {:<28} {:>10.2} {:>10.2} {:>7}×",
            "function call", x.function_call_ns, x.function_call_median_ns, 1
        );
        let _ = writeln!(o, "  (ns: the least disturbed of {} batches of {} calls)", x.samples, x.iterations);
        let _ = writeln!(o, "\nPer-call costs (crossing included)");
        for k in &c.costs {
            let _ = writeln!(o, "  {:<16} {:<5} {:>8} B {:>10.1} ns   {}", k.syscall, k.on, k.bytes, k.ns, k.what);
        }
        let _ = match &c.multicall {
            Some(m) => {
                let _ = writeln!(o, "\nlibmulticall backends, measured by {}:", m.source);
                let from = |n: u64| if n == 0 { "never".to_string() } else { format!("from runs of {n}") };
                match MulticallDecisions::of(m) {
                    Ok(d) => {
                        for (rule, (unreg, reg)) in &d.min_run {
                            let _ = writeln!(
                                o,
                                "  fusion {rule:<18} {}; with the fd registered: {}",
                                from(*unreg),
                                from(*reg)
                            );
                        }
                        let wins = if d.uring_wins { "chosen where it wins" } else { "never faster than direct here" };
                        writeln!(o, "  io_uring: {wins}")
                    }
                    Err(why) => writeln!(o, "  libmulticall would not use them ({why}): it keeps its built-in choices"),
                }
            }
            None => writeln!(
                o,
                "\nlibmulticall backends: not measured (mc-calibrate not found: build libmulticall, or pass --mc-calibrate)"
            ),
        };
        let _ = writeln!(o, "\nThe recorder's own cost (taken out of profiles before estimating)");
        if c.tracers.is_empty() {
            let _ = writeln!(o, "  not measured: no recorder could run here");
        }
        for t in &c.tracers {
            let _ = writeln!(
                o,
                "  {:<16} {:>10.0} ns per call ({:.0} ns inside the call{}) {:>8.1} ms per run",
                format!("{}/{}", t.backend, t.mode),
                t.per_call_ns,
                t.kernel_ns,
                t.cpu_per_call_ns.map_or(String::new(), |c| format!(", {c:.0} ns of the program's CPU")),
                t.fixed_ns / 1e6
            );
        }
        o.into_bytes()
    }
}

/// Nanoseconds as seconds, to the millisecond: "1.234 s".
pub fn secs(ns: u64) -> String {
    format!("{:.3} s", ns as f64 / 1e9)
}

/// `stat`'s table: times, crossings, and the `top` calls that cross most.
impl Render<Stat> for Text {
    fn render(&self, s: &Stat, opts: &ReportOptions) -> Vec<u8> {
        let mut out = String::new();
        let runs = s.runs;
        let _ = writeln!(
            out,
            "syscluster stat: {} ({} run{})",
            s.command.join(" "),
            runs,
            if runs == 1 { "" } else { "s" }
        );
        let _ = writeln!(out, "  {:<12} {:>14} {:>14} {:>14}", "", "min", "median", "max");
        for (name, v) in [("wall", &s.wall), ("user", &s.user), ("system", &s.system)] {
            let (lo, mid, hi) = spread(v);
            let _ = writeln!(out, "  {:<12} {:>14} {:>14} {:>14}", name, secs(lo), secs(mid), secs(hi));
        }
        if !s.crossings.is_empty() {
            let top = opts.top;
            let backend = &s.counting_backend;
            let (lo, mid, hi) = spread(&s.crossings);
            let _ = writeln!(out, "  {:<12} {:>14} {:>14} {:>14}", "crossings", lo, mid, hi);
            let _ = writeln!(out, "\n  crossings by system call (median; counted with {backend}):");
            let mut rows: Vec<(u64, &String)> = s.by_syscall.iter().map(|(k, v)| (spread(v).1, k)).collect();
            rows.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(y.1)));
            for (n, name) in rows.iter().take(top) {
                let _ = writeln!(out, "  {n:>14}  {name}");
            }
            if rows.len() > top {
                let rest: u64 = rows[top..].iter().map(|r| r.0).sum();
                let _ = writeln!(out, "  {rest:>14}  ({} other calls)", rows.len() - top);
            }
        }
        out.into_bytes()
    }
}

/// `verify`'s differences listed before "and N more".
const MAX_DIFFERENCES_SHOWN: usize = 8;

/// `verify`'s table: the two variants' medians side by side, then
/// `same: …` or the differences.
impl Render<Verification> for Text {
    fn render(&self, v: &Verification, _opts: &ReportOptions) -> Vec<u8> {
        let mut out = String::new();
        let runs = v.runs;
        let (a, b) = (&v.original, &v.candidate);
        let _ = writeln!(out, "syscluster verify ({} run{} each, interleaved)", runs, if runs == 1 { "" } else { "s" });
        let _ = writeln!(out, "  original:  {}", a.command.join(" "));
        let _ = writeln!(out, "  candidate: {}", b.command.join(" "));
        if !v.faults_injected.is_empty() {
            let notes: Vec<String> = v.faults_injected.iter().map(|f| format!("{f} injected in both")).collect();
            let _ = writeln!(out, "  faults:    {}", notes.join("; "));
        }
        if let Some(s) = v.fs_limit {
            let _ = writeln!(out, "  each copy on a tmpfs of {s} bytes");
        }
        let _ = writeln!(out, "\n  {:<22} {:>16} {:>16}", "(median of runs)", "original", "candidate");
        let mut row = |name: &str, x: String, y: String| {
            let _ = writeln!(out, "  {name:<22} {x:>16} {y:>16}");
        };
        let exit = |e: Exit| match e {
            Exit::Code(c) => c.to_string(),
            Exit::Signal(sig) => format!("killed({sig})"),
        };
        let median = |v: &[u64]| spread(v).1;
        row("exit", exit(a.exit), exit(b.exit));
        row("files created", a.files.0.to_string(), b.files.0.to_string());
        row("files changed", a.files.1.to_string(), b.files.1.to_string());
        row("files deleted", a.files.2.to_string(), b.files.2.to_string());
        let wall = if v.traced { "wall (ptrace)" } else { "wall" };
        row(wall, secs(median(&a.wall)), secs(median(&b.wall)));
        if !v.traced {
            row("user", secs(median(&a.user)), secs(median(&b.user)));
            row("system", secs(median(&a.system)), secs(median(&b.system)));
        }
        if !a.crossings.is_empty() {
            row("crossings", median(&a.crossings).to_string(), median(&b.crossings).to_string());
        }
        let found = &v.differences;
        if found.is_empty() {
            let _ = writeln!(out, "\nsame: stdout, stderr, exit status and files are identical in every run");
        } else {
            let _ =
                writeln!(out, "\nDIFFERENT ({} difference{}):", found.len(), if found.len() == 1 { "" } else { "s" });
            for (i, d) in found.iter().take(MAX_DIFFERENCES_SHOWN) {
                let run = if runs > 1 { format!("run {i}: ") } else { String::new() };
                let _ = writeln!(out, "  - {run}{d}");
            }
            if found.len() > MAX_DIFFERENCES_SHOWN {
                let _ = writeln!(out, "  … and {} more", found.len() - MAX_DIFFERENCES_SHOWN);
            }
        }
        out.into_bytes()
    }
}
