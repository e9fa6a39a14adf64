//! A stand-in for `syscluster run` until the CLI wires it (used by the
//! benchmark):
//!   sc-run [--coalesce-writes[=BYTES]] [--flush-interval MS] [-v] -- CMD [ARGS...]
//! Without --coalesce-writes the command runs without the runtime.

use std::ffi::OsString;
use syscluster_supervisor::{run, shell_code, RunOptions};

fn main() {
    let mut args = std::env::args_os().skip(1);
    let mut opts = RunOptions { coalesce_writes: None, ..RunOptions::default() };
    let mut argv: Vec<OsString> = Vec::new();
    while let Some(a) = args.next() {
        let s = a.to_string_lossy().into_owned();
        if s == "--" {
            argv.extend(args.by_ref());
            break;
        } else if s == "--coalesce-writes" {
            opts.coalesce_writes = Some(syscluster_supervisor::DEFAULT_THRESHOLD);
        } else if let Some(n) = s.strip_prefix("--coalesce-writes=") {
            opts.coalesce_writes = Some(n.parse().unwrap_or_else(|_| fail(&format!("bad size: {n}"))));
        } else if s == "--flush-interval" {
            let v = args.next().map(|v| v.to_string_lossy().into_owned()).unwrap_or_default();
            opts.flush_interval_ms = v.parse().unwrap_or_else(|_| fail(&format!("bad interval: {v}")));
        } else if s == "-v" {
            opts.verbose = true;
        } else {
            argv.push(a);
            argv.extend(args.by_ref());
            break;
        }
    }
    match run(&argv, &opts) {
        Ok(status) => std::process::exit(shell_code(status)),
        Err(e) => {
            eprintln!("sc-run: {e}");
            std::process::exit(e.exit_code());
        }
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("sc-run: {msg}");
    std::process::exit(2)
}
