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

pub use launch::{Ended, ExitStatus, LaunchError};

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
    /// Keep recording detached tasks (processes that left the command's
    /// session with setsid, and their descendants) after the command
    /// ended, until they end or the recorder is interrupted. Without it the
    /// recording ends when the command and the tasks still in its session
    /// have ended; detached ones run on untraced.
    pub follow_detached: bool,
    /// Faults to inject (ptrace only: with any, the recording is made with
    /// ptrace whatever `backend` says, and BPF is refused).
    pub faults: Vec<ptrace::fault::Fault>,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            backend: None,
            mode: Mode::Events,
            builder: BuilderOptions::default(),
            callsites: true,
            ring_buffer_bytes: 64 << 20,
            follow_detached: false,
            faults: Vec::new(),
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

    /// The finished profile, code locations resolved. Code of the recorder
    /// itself can only be its launch of the command (the execve that starts
    /// recording): it is named so, not by a function of syscluster.
    pub fn finish(mut self, meta: syscluster_model::profile::Meta) -> Profile {
        let recorder = self.modules.recorder();
        let mut symbolizer = callsite::Symbolizer::new(self.modules);
        self.builder.finish(meta, &mut |addr| {
            if Some(addr.module) == recorder {
                launch_location()
            } else {
                symbolizer.resolve(addr)
            }
        })
    }
}

/// The code location of the command's first execve, which the recorder's
/// launcher issues.
pub fn launch_location() -> syscluster_model::profile::Location {
    syscluster_model::profile::Location {
        module: "[syscluster launch]".into(),
        offset: 0,
        function: Some("execve of the recorded command".into()),
        file: None,
        line: None,
        site: None,
    }
}

/// A finished recording.
pub struct Recording {
    pub profile: Profile,
    pub exit: ExitStatus,
    /// Threads still running, untraced, when the recording ended.
    pub left_running: u64,
    /// Things the user should know (a fallback taken, losses), one line each.
    pub notes: Vec<String>,
    /// For each of [`RecordOptions::faults`], the calls of its kind the
    /// command made: the fault was injected where this reaches its K.
    pub faults_seen: Vec<u64>,
}

/// Records `argv` until it and all its descendants exit (detached ones
/// only with [`RecordOptions::follow_detached`]).
pub fn record(argv: &[OsString], opts: &RecordOptions) -> Result<Recording, RecordError> {
    if argv.is_empty() {
        return Err(LaunchError::Empty.into());
    }
    // Getting ready takes seconds: a signal meanwhile stops the recording
    // before the command starts, with a word.
    launch::catch_signals();
    let command: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let mut notes = Vec::new();
    let mut sink = Sink::new(opts.builder.clone());
    let start = std::time::Instant::now();
    let mut meta;
    let mut faults_seen = Vec::new();
    if !opts.faults.is_empty() && opts.backend == Some(Backend::Bpf) {
        return Err(RecordError::Backend("faults can only be injected with the ptrace backend".into()));
    }
    let backend = if opts.faults.is_empty() { opts.backend } else { Some(Backend::Ptrace) };
    let ended = match backend {
        Some(Backend::Ptrace) => {
            meta = machine::meta(&command, "ptrace", "trace");
            let (ended, seen) = ptrace::record(argv, opts, &mut sink, &mut notes)?;
            faults_seen = seen;
            ended
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
                    ptrace::record(argv, opts, &mut sink, &mut notes)?.0
                }
                other => other?,
            }
        }
    };
    // The command's program by the name the user gave it (a symbolic link
    // is not replaced by its target), also where a short-lived process left
    // before its maps were read.
    if let Some(program) = argv.first().and_then(|c| launch::resolve_program(c)) {
        sink.modules.prefer_path(&program);
    }
    // The command's run, from its release: not the recorder's setup
    // (loading and attaching BPF programs takes a few hundred ms).
    meta.duration_ns = ended.ran_ns.unwrap_or_else(|| start.elapsed().as_nanos() as u64);
    meta.cpu_ns = ended.cpu_ns;
    meta.exit = Some(ended.exit.to_profile());
    meta.left_running = ended.left_running;
    if ended.left_running > 0 {
        let what = if meta.backend == "ptrace" {
            "ended by syscluster: under ptrace they cannot run on untraced"
        } else if opts.follow_detached {
            "they run on, untraced"
        } else {
            "they run on, untraced; --follow-detached records them"
        };
        notes.push(format!(
            "{} thread{} of detached tasks {} still running when the recording ended ({what})",
            ended.left_running,
            if ended.left_running == 1 { "" } else { "s" },
            if ended.left_running == 1 { "was" } else { "were" },
        ));
    }
    let profile = sink.finish(meta);
    Ok(Recording { profile, exit: ended.exit, left_running: ended.left_running, notes, faults_seen })
}
