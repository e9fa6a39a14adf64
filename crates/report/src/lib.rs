//! Renderings of what syscluster prints: a profile, advice, a calibration,
//! `stat`'s counts, `verify`'s comparison.  One trait ([`Render`]), one
//! file per format (text, json, dot, folded, html), each implementing it
//! for the values it shows; every format returns bytes, so that tests
//! compare or parse them directly.

pub mod dot;
pub mod folded;
pub mod html;
pub mod json;
pub mod text;

use std::collections::BTreeMap;
use syscluster_model::Profile;

/// Settings shared by the formats.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Rows per table (text) or edges drawn (dot).
    pub top: usize,
    /// Columns of the text report: rows longer than this are cut.
    pub width: usize,
}

/// The text report's width on a terminal of unknown size.
pub const DEFAULT_WIDTH: usize = 80;

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions { top: 15, width: DEFAULT_WIDTH }
    }
}

/// A format that can show a `T`.
pub trait Render<T: ?Sized> {
    fn render(&self, value: &T, opts: &ReportOptions) -> Vec<u8>;
}

/// What `syscluster stat` measured over repeated runs of one command
/// (nanoseconds and crossings, one entry per run).
#[derive(Clone, Debug, Default)]
pub struct Stat {
    pub command: Vec<String>,
    pub runs: u32,
    /// The recorder that counted (`none` when nothing was counted).
    pub counting_backend: String,
    pub wall: Vec<u64>,
    pub user: Vec<u64>,
    pub system: Vec<u64>,
    /// Crossings per run; empty when not counted.
    pub crossings: Vec<u64>,
    /// Crossings per run of each system call.
    pub by_syscall: BTreeMap<String, Vec<u64>>,
}

/// What `syscluster verify` found: each variant's figures over its runs,
/// side by side, and what differed between them.
#[derive(Clone, Debug, Default)]
pub struct Verification {
    pub runs: u32,
    pub original: Variant,
    pub candidate: Variant,
    /// The variants ran under ptrace with faults injected: their times are
    /// the recording's wall time only.
    pub traced: bool,
    /// Faults injected in both variants (`write:ENOSPC@3`).
    pub faults_injected: Vec<String>,
    /// Each scratch copy was a tmpfs of this many bytes.
    pub fs_limit: Option<u64>,
    /// Every difference, once, with the run it was first seen in.
    pub differences: Vec<(u32, String)>,
}

/// One side of a [`Verification`].
#[derive(Clone, Debug, Default)]
pub struct Variant {
    pub command: Vec<String>,
    /// How the first run ended.
    pub exit: Exit,
    /// Files created, changed and deleted in the first run's copy.
    pub files: (usize, usize, usize),
    /// Nanoseconds per run; `user` and `system` empty when traced.
    pub wall: Vec<u64>,
    pub user: Vec<u64>,
    pub system: Vec<u64>,
    /// Crossings per run; empty when not counted.
    pub crossings: Vec<u64>,
}

/// How a program ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Default for Exit {
    fn default() -> Self {
        Exit::Code(0)
    }
}

/// min, median, max of `v` (not empty).
pub fn spread(v: &[u64]) -> (u64, u64, u64) {
    let mut s = v.to_vec();
    s.sort_unstable();
    (s[0], s[s.len() / 2], s[s.len() - 1])
}

/// The format for a name (`text`, `json`, `dot`, `folded`, `html`; the HTML
/// page made here has no advice: see [`html::page`]).
pub fn by_name(name: &str) -> Option<Box<dyn Render<Profile>>> {
    match name {
        "text" => Some(Box::new(text::Text)),
        "json" => Some(Box::new(json::Json)),
        "dot" => Some(Box::new(dot::Dot)),
        "folded" => Some(Box::new(folded::Folded)),
        "html" => Some(Box::new(html::Html)),
        _ => None,
    }
}
