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
    // A bug must still end in one line and a non-zero exit, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let msg = info.payload().downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| info.payload().downcast_ref::<String>().cloned()).unwrap_or_default();
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("syscluster: internal error{at}: {msg} (please report this)");
    }));
    let result = std::panic::catch_unwind(|| cmd::run(cli.command));
    match result {
        Ok(Ok(code)) => code,
        Ok(Err(f)) => {
            eprintln!("syscluster: {}", f.message);
            f.code
        }
        Err(_) => 70,
    }
}
