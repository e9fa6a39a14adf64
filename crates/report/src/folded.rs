//! Folded stacks, the plain text format of FlameGraph's flamegraph.pl and
//! speedscope: one line per code location and system call,
//! `module;function (file:line);syscall count`, and `[unknown];syscall count`
//! for calls whose location was not recorded. Lines are sorted and equal
//! stacks merged, so the output is the same for the same profile.

use crate::{Render, ReportOptions};
use std::collections::BTreeMap;
use syscluster_model::profile::Location;
use syscluster_model::Profile;

pub struct Folded;

/// A frame name: no `;` (the separator) and no line breaks.
fn frame(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            ';' => ':',
            '\n' | '\r' => ' ',
            c => c,
        })
        .collect()
}

fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `main (copy.c:24)`, `main`, or `copy+0x1234`.
fn location_frame(l: &Location) -> String {
    match (l.function_name(), &l.file, l.line) {
        (Some(f), Some(file), Some(line)) => format!("{f} ({}:{line})", base(file)),
        (Some(f), _, _) => f.into_owned(),
        _ => format!("{}+{:#x}", base(&l.module), l.offset),
    }
}

impl Render<Profile> for Folded {
    fn render(&self, p: &Profile, _opts: &ReportOptions) -> Vec<u8> {
        let mut stacks: BTreeMap<String, u64> = BTreeMap::new();
        for n in &p.nodes {
            let call = frame(&n.syscall);
            let mut placed = 0u64;
            let sites: Vec<(&Location, u64)> = if n.callsites.is_empty() {
                n.key.callsite.iter().map(|l| (l, n.count)).collect()
            } else {
                n.callsites.iter().map(|c| (&c.location, c.count)).collect()
            };
            for (loc, c) in sites {
                if c == 0 {
                    continue;
                }
                let key = format!("{};{};{call}", frame(base(&loc.module)), frame(&location_frame(loc)));
                *stacks.entry(key).or_insert(0) += c;
                placed += c;
            }
            let rest = n.count.saturating_sub(placed);
            if rest > 0 {
                *stacks.entry(format!("[unknown];{call}")).or_insert(0) += rest;
            }
        }
        let mut out = String::new();
        for (stack, c) in stacks {
            out.push_str(&stack);
            out.push(' ');
            out.push_str(&c.to_string());
            out.push('\n');
        }
        out.into_bytes()
    }
}
