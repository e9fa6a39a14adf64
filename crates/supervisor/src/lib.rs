//! `syscluster run`: runs an unmodified, dynamically linked program under
//! the runtime (`preload/`, an `LD_PRELOAD` library) that coalesces its
//! short writes to regular files, and exits with the program's status.
//!
//! The library does the work inside the program (and inside every program
//! it starts); this crate is the supervisor around it:
//!
//! - finds the library ([`find_library`]) and passes the settings to it
//!   through the environment;
//! - checks whether the program can be interposed at all
//!   ([`check_program`]): static, set-user-ID and file-capability programs
//!   cannot, and run unchanged with one line on stderr;
//! - prints the library's reports (raw system calls found, lost bytes, and
//!   with `-v` per-process counts), each distinct one once;
//! - with a plan (`run --plan`, [`plan`]), checks it against the program
//!   before it runs — refusing an invalid, stale or foreign one — and
//!   passes the library the code locations of the clusters it can apply;
//! - becomes a child subreaper, so that when a program dies abruptly
//!   (SIGKILL) the runtime's guardian task that completes its pending
//!   writes is handed to us, and waits for it: when `run` returns, every
//!   write the program saw acknowledged is in the file.
//!
//! See docs/RUNTIME.md for the design and the exact guarantees.

mod library;
pub mod plan;
mod program;
mod report;
mod spawn;
mod supervise;

pub use library::{find_library, LIBRARY_NAME};
pub use program::{check_program, resolve_program, script_interpreter, Interposable, MAX_SCRIPT_DEPTH};

use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// Writes shorter than this many bytes are deferred when no size is given.
pub const DEFAULT_THRESHOLD: usize = 4096;
/// The default time bound, in milliseconds, after which a deferred write
/// is written out even if nothing else forces it.
pub const DEFAULT_FLUSH_MS: u32 = 5;

/// What `syscluster run` is asked to do.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Defer writes shorter than this many bytes to regular files
    /// (`--coalesce-writes[=BYTES]`); `None`: no write is deferred but at
    /// the write sites of a plan.
    pub coalesce_writes: Option<usize>,
    /// Apply the clusters of this plan at their code locations (`--plan`).
    /// Its write sites defer writes shorter than `coalesce_writes`, or
    /// [`DEFAULT_THRESHOLD`] without it.
    pub plan: Option<PathBuf>,
    /// The time bound in milliseconds (`--flush-interval MS`).
    pub flush_interval_ms: u32,
    /// `-v`: say what is done, and per process what was coalesced.
    pub verbose: bool,
    /// Use this library instead of searching for one.
    pub library: Option<PathBuf>,
    /// Pass SIGINT, SIGTERM, SIGHUP and SIGQUIT on to the program (a
    /// command-line tool wants this; a test harness may not).
    pub forward_signals: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            coalesce_writes: Some(DEFAULT_THRESHOLD),
            plan: None,
            flush_interval_ms: DEFAULT_FLUSH_MS,
            verbose: false,
            library: None,
            forward_signals: true,
        }
    }
}

/// Why a program could not be run.
#[derive(Debug)]
pub enum RunError {
    /// No command was given.
    Empty,
    /// The command is not on PATH / does not exist.
    NotFound(String),
    /// It exists but could not be executed.
    Exec(String, io::Error),
    /// The preload library is nowhere to be found.
    Library(String),
    /// An option is out of range.
    BadOption(String),
    /// The plan is invalid, stale, or made for another program.
    Plan(String),
    Os(&'static str, io::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Empty => write!(f, "no command given (usage: syscluster run [OPTIONS] -- CMD [ARGS...])"),
            RunError::NotFound(c) => write!(f, "command not found: {c}"),
            RunError::Exec(c, e) => write!(f, "cannot execute {c}: {e}"),
            RunError::Library(s) => write!(f, "{s}"),
            RunError::BadOption(s) | RunError::Plan(s) => write!(f, "{s}"),
            RunError::Os(what, e) => write!(f, "{what}: {e}"),
        }
    }
}

impl std::error::Error for RunError {}

impl RunError {
    /// The exit code a shell uses for this failure (127 not found, 126
    /// not executable, 125 for everything about syscluster itself).
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::NotFound(_) => 127,
            RunError::Exec(_, _) => 126,
            _ => 125,
        }
    }
}

/// One line on stderr, in one write (lines of processes sharing stderr
/// stay whole).
fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("syscluster run: {line}\n").as_bytes());
}

/// The code a shell reports for a status: the exit code, or 128 + signal.
pub fn shell_code(status: ExitStatus) -> i32 {
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// Runs `argv` under the runtime and returns its exit status once the
/// program and every guardian of a program that died abruptly are gone.
/// The program keeps our stdin, stdout and stderr.
pub fn run(argv: &[OsString], opts: &RunOptions) -> Result<ExitStatus, RunError> {
    let first = argv.first().ok_or(RunError::Empty)?;
    let name = first.to_string_lossy().into_owned();
    if opts.flush_interval_ms == 0 || opts.flush_interval_ms > 60_000 {
        return Err(RunError::BadOption(format!(
            "flush interval {} ms is out of range (1 to 60000)",
            opts.flush_interval_ms
        )));
    }
    if opts.coalesce_writes == Some(0) {
        return Err(RunError::BadOption("--coalesce-writes needs a size of at least 1 byte".into()));
    }
    let path = resolve_program(first).ok_or_else(|| RunError::NotFound(name.clone()))?;
    // A plan is checked before anything runs: a bad one is an error.
    let plan = match &opts.plan {
        Some(file) => {
            let interp = script_interpreter(&path).flatten();
            let programs: Vec<&Path> = std::iter::once(path.as_path()).chain(interp.as_deref()).collect();
            let threshold = opts.coalesce_writes.unwrap_or(DEFAULT_THRESHOLD);
            Some(plan::prepare(file, &programs, threshold).map_err(RunError::Plan)?)
        }
        None => None,
    };
    let mut reporter = report::Reporter::start(opts.verbose).map_err(|e| RunError::Os("report socket", e))?;
    let mut cmd = Command::new(first);
    // Only what this run asks for reaches the program.
    cmd.args(&argv[1..]).env_remove("SYSCLUSTER_PLAN").env_remove("SYSCLUSTER_COALESCE");
    if let Some(p) = &plan {
        p.refused.iter().for_each(|l| say(l));
        if opts.verbose {
            p.applied.iter().for_each(|l| say(l));
        }
    }
    let plan_spec = plan.as_ref().map(|p| p.spec.as_str()).filter(|s| !s.is_empty());
    if opts.coalesce_writes.is_some() || plan_spec.is_some() {
        match check_program(&path) {
            Interposable::Yes => {
                let lib = find_library(opts.library.as_deref())?;
                if opts.verbose {
                    match opts.coalesce_writes {
                        Some(threshold) => eprintln!(
                            "syscluster run: coalescing writes shorter than {threshold} bytes to regular files, \
                             time bound {} ms, with {}",
                            opts.flush_interval_ms,
                            lib.display()
                        ),
                        None => eprintln!(
                            "syscluster run: applying the plan (time bound {} ms) with {}",
                            opts.flush_interval_ms,
                            lib.display()
                        ),
                    }
                }
                let mut preload = OsString::from(lib.as_os_str());
                if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
                    preload.push(" ");
                    preload.push(old);
                }
                cmd.env("LD_PRELOAD", preload)
                    .env("SYSCLUSTER_FLUSH_MS", opts.flush_interval_ms.to_string())
                    .env("SYSCLUSTER_REPORT", reporter.name());
                if let Some(threshold) = opts.coalesce_writes {
                    cmd.env("SYSCLUSTER_COALESCE", threshold.to_string());
                }
                if let Some(spec) = plan_spec {
                    cmd.env("SYSCLUSTER_PLAN", spec);
                }
                if opts.verbose {
                    cmd.env("SYSCLUSTER_VERBOSE", "1");
                }
            }
            Interposable::No(why) => {
                eprintln!("syscluster run: {why}; it runs unchanged");
            }
        }
    }
    supervise::become_subreaper();
    // With the signal dispositions we were given (see spawn.rs).
    let pid = spawn::spawn(&cmd).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => RunError::NotFound(name.clone()),
        _ => RunError::Exec(name.clone(), e),
    })?;
    if opts.forward_signals {
        supervise::forward_signals_to(pid);
    }
    let status = reporter.wait_for(pid).map_err(|e| RunError::Os("waitpid", e));
    if opts.forward_signals {
        supervise::forward_signals_to(0);
    }
    let status = status?;
    supervise::wait_for_guardians();
    reporter.finish();
    Ok(ExitStatus::from_raw(status))
}
