//! `syscluster run`: an unmodified program under the runtime.

use crate::flags::RunArgs;
use crate::Failure;
use syscluster_runtime::{run as run_program, shell_code, RunOptions};

pub fn run(a: RunArgs) -> Result<i32, Failure> {
    let opts = RunOptions {
        coalesce_writes: (a.coalesce_writes > 0).then_some(a.coalesce_writes),
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
