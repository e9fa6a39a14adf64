//! Recording a program's system calls: one entry point, several backends.
//!
//! - [`bpf`]: BPF programs on the `raw_syscalls` tracepoints, in two modes:
//!   *aggregate* builds the syscall graph inside the kernel, *events* streams
//!   every call through a ring buffer.
//! - [`ptrace`]: the unprivileged fallback, with a seccomp filter.
//! - [`strace`]: import of `strace -f -ttt -T` logs.
//!
//! Every backend feeds a [`Sink`]: the profile builder and the table of
//! mapped files that code locations refer to.

pub mod bpf;
pub mod callsite;
pub mod launch;
pub mod machine;
pub mod ptrace;
pub mod strace;

use std::ffi::OsString;
use std::fmt;
use syscluster_analysis::{BuilderOptions, ProfileBuilder};
use syscluster_model::profile::Profile;

pub use launch::{ExitStatus, LaunchError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Bpf,
    Ptrace,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Bpf => "bpf",
            Backend::Ptrace => "ptrace",
        }
    }
}

/// How the BPF backend records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Graph, counts and kernel time built inside the kernel.
    Aggregate,
    /// Every call streamed to user space: the full profile.
    Events,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Aggregate => "aggregate",
            Mode::Events => "events",
        }
    }
}

#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// `None`: BPF where it may be loaded, else ptrace.
    pub backend: Option<Backend>,
    pub mode: Mode,
    pub builder: BuilderOptions,
    /// Find the code location of every call.
    pub callsites: bool,
    /// Size of the BPF ring buffer (events mode), bytes; a power of two.
    pub ring_buffer_bytes: usize,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            backend: None,
            mode: Mode::Events,
            builder: BuilderOptions::default(),
            callsites: true,
            ring_buffer_bytes: 64 << 20,
        }
    }
}

/// Why a recording failed.
#[derive(Debug)]
pub enum RecordError {
    Launch(LaunchError),
    /// BPF may not be loaded here (permissions, kernel features); the text
    /// says what failed.
    BpfUnavailable(String),
    /// Tracing failed after the command started.
    Backend(String),
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::Launch(e) => e.fmt(f),
            RecordError::BpfUnavailable(why) => write!(f, "BPF is not available: {why}"),
            RecordError::Backend(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for RecordError {}

impl From<LaunchError> for RecordError {
    fn from(e: LaunchError) -> Self {
        RecordError::Launch(e)
    }
}

/// What a backend feeds while it records.
pub struct Sink {
    pub builder: ProfileBuilder,
    pub modules: callsite::Modules,
}

impl Sink {
    pub fn new(opts: BuilderOptions) -> Sink {
        Sink { builder: ProfileBuilder::new(opts), modules: callsite::Modules::new() }
    }

    /// The finished profile, code locations resolved.
    pub fn finish(self, meta: syscluster_model::profile::Meta) -> Profile {
        let mut symbolizer = callsite::Symbolizer::new(self.modules);
        self.builder.finish(meta, &mut |addr| symbolizer.resolve(addr))
    }
}

/// A finished recording.
pub struct Recording {
    pub profile: Profile,
    pub exit: ExitStatus,
    /// Things the user should know (a fallback taken, losses), one line each.
    pub notes: Vec<String>,
}

/// Records `argv` until it and all its descendants exit.
pub fn record(argv: &[OsString], opts: &RecordOptions) -> Result<Recording, RecordError> {
    if argv.is_empty() {
        return Err(LaunchError::Empty.into());
    }
    let command: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let mut notes = Vec::new();
    let mut sink = Sink::new(opts.builder.clone());
    let start = std::time::Instant::now();
    let mut meta;
    let exit = match opts.backend {
        Some(Backend::Ptrace) => {
            meta = machine::meta(&command, "ptrace", "trace");
            ptrace::record(argv, opts, &mut sink, &mut notes)?
        }
        Some(Backend::Bpf) => {
            meta = machine::meta(&command, "bpf", opts.mode.as_str());
            bpf::record(argv, opts, &mut sink)?
        }
        None => {
            meta = machine::meta(&command, "bpf", opts.mode.as_str());
            match bpf::record(argv, opts, &mut sink) {
                Err(RecordError::BpfUnavailable(why)) => {
                    notes.push(format!("BPF is not available ({why}); recording with ptrace instead"));
                    meta = machine::meta(&command, "ptrace", "trace");
                    sink = Sink::new(opts.builder.clone());
                    ptrace::record(argv, opts, &mut sink, &mut notes)?
                }
                other => other?,
            }
        }
    };
    meta.duration_ns = start.elapsed().as_nanos() as u64;
    meta.exit = Some(exit.to_profile());
    let profile = sink.finish(meta);
    Ok(Recording { profile, exit, notes })
}
