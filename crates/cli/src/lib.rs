//! The `syscluster` command line. `main` returns an exit code; each
//! subcommand's `run` returns a `Result` whose error is printed as one line.

mod cmd;
pub mod flags;

use clap::Parser;

/// A failure to report: one line, and the exit code to leave with.
pub struct Failure {
    pub message: String,
    pub code: i32,
}

impl Failure {
    pub fn new(message: impl Into<String>) -> Failure {
        Failure { message: message.into(), code: 1 }
    }
    pub fn with_code(message: impl Into<String>, code: i32) -> Failure {
        Failure { message: message.into(), code }
    }
}

impl<E: std::error::Error> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::new(e.to_string())
    }
}

/// Runs the command line; returns the process exit code.
pub fn main() -> i32 {
    let cli = match flags::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    guarded(|| cmd::run(cli.command))
}

/// Runs a subcommand: its failure is one line and its exit code; a bug
/// (a panic) one line and 70, not a backtrace.
fn guarded(f: impl FnOnce() -> Result<i32, Failure> + std::panic::UnwindSafe) -> i32 {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("syscluster: internal error{at}: {msg} (please report this)");
    }));
    match std::panic::catch_unwind(f) {
        Ok(Ok(code)) => code,
        Ok(Err(f)) => {
            eprintln!("syscluster: {}", f.message);
            f.code
        }
        Err(_) => 70,
    }
}

/// What Rust's start-up (`lang_start`) does that the CLI relies on, for
/// binaries whose `main` is the C entry point (src/cli.rs says why):
/// descriptors 0–2 exist (a closed one is opened on /dev/null, so that no
/// file the CLI opens becomes its stdout) and SIGPIPE is ignored (a closed
/// pipe is an error to report; the disposition the shell gave is kept for
/// the programs the CLI starts, `syscluster_model::inherited`).
pub fn start() {
    // SAFETY: plain C calls at start-up, on a single thread.
    unsafe {
        let mut fds = [0, 1, 2].map(|fd| libc::pollfd { fd, events: 0, revents: 0 });
        if libc::poll(fds.as_mut_ptr(), 3, 0) >= 0 {
            for p in fds {
                if p.revents & libc::POLLNVAL != 0 {
                    libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
                }
            }
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}
