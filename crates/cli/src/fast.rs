//! The command lines of `syscluster run` that the small `syscluster`
//! binary (src/main.rs) handles itself, without starting the full CLI:
//! only the plainest forms, each taken exactly as clap takes it.  Every
//! other command line — another subcommand, `--plan`, `--help`, a flag
//! given twice, a value clap might read differently, a mistyped flag —
//! goes to the full CLI, which parses (or refuses) it as always.

use crate::flags::RunArgs;
use std::ffi::OsString;

/// `Some` for `run [--coalesce-writes[=BYTES]] [--flush-interval[=]MS]
/// [-v|--verbose] [--] CMD [ARGS…]` (each flag at most once; a bare
/// `--coalesce-writes` only right before `--`), `None` for anything else.
pub fn run_args(args: &[OsString]) -> Option<RunArgs> {
    if args.get(1).map(|a| a.as_os_str()) != Some("run".as_ref()) {
        return None;
    }
    let mut out = RunArgs { coalesce_writes: None, plan: None, flush_interval: 5, verbose: false, command: Vec::new() };
    let (mut coalesce, mut flush) = (false, false);
    let mut i = 2;
    while let Some(a) = args.get(i) {
        let Some(a) = a.to_str() else {
            // Not UTF-8: a command word, unless clap would take it for a flag.
            use std::os::unix::ffi::OsStrExt;
            if a.as_bytes().starts_with(b"-") {
                return None;
            }
            break;
        };
        if !a.starts_with('-') {
            break;
        }
        i += 1;
        match a {
            "--" => break,
            "-v" | "--verbose" if !out.verbose => out.verbose = true,
            "--coalesce-writes" if !coalesce && args.get(i).is_some_and(|n| n == "--") => {
                coalesce = true;
                out.coalesce_writes = Some(4096);
            }
            "--flush-interval" if !flush => {
                flush = true;
                out.flush_interval = number(args.get(i)?.to_str()?)?;
                i += 1;
            }
            _ => {
                let (flag, value) = a.split_once('=')?;
                match flag {
                    "--coalesce-writes" if !coalesce => {
                        coalesce = true;
                        out.coalesce_writes = Some(number(value)?);
                    }
                    "--flush-interval" if !flush => {
                        flush = true;
                        out.flush_interval = number(value)?;
                    }
                    _ => return None,
                }
            }
        }
    }
    out.command = args.get(i..)?.to_vec();
    (!out.command.is_empty()).then_some(out)
}

/// Decimal digits only (clap would also take `+5`: left to it).
fn number<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    /// What the full CLI (clap) makes of the same command line.
    fn clap_run(v: &[&str]) -> Option<RunArgs> {
        match crate::flags::Cli::try_parse_from(os(v)).ok()?.command {
            crate::flags::Command::Run(a) => Some(a),
            _ => None,
        }
    }

    #[test]
    fn the_fast_forms_are_read_as_clap_reads_them() {
        for v in [
            &["syscluster", "run", "--", "true"][..],
            &["syscluster", "run", "true", "-v", "--", "x"],
            &["syscluster", "run", "-v", "--", "dd", "bs=8"],
            &["syscluster", "run", "--verbose", "cat", "-"],
            &["syscluster", "run", "--coalesce-writes", "--", "true"],
            &["syscluster", "run", "--coalesce-writes=100", "-v", "--", "true"],
            &["syscluster", "run", "--coalesce-writes=0", "true"],
            &["syscluster", "run", "--flush-interval", "7", "--", "true"],
            &["syscluster", "run", "--flush-interval=0007", "-v", "true", "--x"],
            &["syscluster", "run", "--", "--", "-v"],
        ] {
            let fast = run_args(&os(v)).unwrap_or_else(|| panic!("{v:?} not taken"));
            let full = clap_run(v).unwrap_or_else(|| panic!("{v:?} refused by clap"));
            assert_eq!(format!("{fast:?}"), format!("{full:?}"), "{v:?}");
        }
    }

    #[test]
    fn everything_else_goes_to_the_full_cli() {
        for v in [
            &["syscluster", "record", "--", "true"][..],
            &["syscluster", "run"],
            &["syscluster", "run", "--"],
            &["syscluster", "run", "--plan", "p.json", "--", "true"],
            &["syscluster", "run", "--help"],
            &["syscluster", "run", "-h", "true"],
            &["syscluster", "run", "-v", "-v", "true"],
            &["syscluster", "run", "-vv", "true"],
            &["syscluster", "run", "--mdoe", "true"],
            &["syscluster", "run", "--coalesce-writes", "100", "true"],
            &["syscluster", "run", "--coalesce-writes", "true"],
            &["syscluster", "run", "--coalesce-writes=+5", "true"],
            &["syscluster", "run", "--coalesce-writes=", "true"],
            &["syscluster", "run", "--flush-interval", "-v", "true"],
            &["syscluster", "run", "--flush-interval=99999999999", "true"],
            &["syscluster", "run", "--flush-interval=1", "--flush-interval=2", "true"],
            &["syscluster", "--version"],
        ] {
            assert!(run_args(&os(v)).is_none(), "{v:?} taken");
        }
        use std::os::unix::ffi::OsStringExt;
        let odd = vec!["syscluster".into(), "run".into(), OsString::from_vec(b"-\xff".to_vec()), "true".into()];
        assert!(run_args(&odd).is_none(), "a flag that is not UTF-8 is clap's to refuse");
        let word = vec!["syscluster".into(), "run".into(), OsString::from_vec(b"\xff".to_vec())];
        assert_eq!(run_args(&word).map(|a| a.command), Some(vec![OsString::from_vec(b"\xff".to_vec())]));
    }
}
