//! `syscluster run`: an unmodified program under the runtime.

use crate::flags::RunArgs;
use crate::Failure;
use syscluster_supervisor::{run as run_program, shell_code, RunOptions, DEFAULT_THRESHOLD};

pub fn run(a: RunArgs) -> Result<i32, Failure> {
    // Without a plan, coalescing is the default; with one, only if asked.
    let coalesce = match (a.coalesce_writes, &a.plan) {
        (Some(n), _) => n,
        (None, None) => DEFAULT_THRESHOLD,
        (None, Some(_)) => 0,
    };
    let opts = RunOptions {
        coalesce_writes: (coalesce > 0).then_some(coalesce),
        plan: a.plan,
        flush_interval_ms: a.flush_interval,
        verbose: a.verbose,
        library: None,
        forward_signals: true,
    };
    match run_program(&a.command, &opts) {
        Ok(status) => Ok(shell_code(status)),
        Err(e) => Err(Failure::with_code(e.to_string(), e.exit_code())),
    }
}
