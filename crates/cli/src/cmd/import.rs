//! `syscluster import-strace`: a strace log becomes a profile.

use crate::flags::ImportArgs;
use crate::Failure;
use std::io::IsTerminal;
use syscluster_analysis::BuilderOptions;
use syscluster_model::profile::NodeKeyMode;
use syscluster_record::strace::{import_file, ImportOptions};

pub fn run(a: ImportArgs) -> Result<i32, Failure> {
    let node_key = super::node_key(a.node_key);
    if node_key == NodeKeyMode::Callsite {
        return Err(Failure::with_code(
            "--node-key callsite needs code locations, which strace logs do not have; use descriptor, fd or name",
            2,
        ));
    }
    let opts = ImportOptions { lenient: a.lenient, progress: !a.quiet && std::io::stderr().is_terminal() };
    let start = std::time::Instant::now();
    let (profile, stats) = import_file(&a.log, &opts, BuilderOptions { node_key, ..Default::default() })?;
    super::save(&profile, &a.output)?;
    if !a.quiet {
        let secs = start.elapsed().as_secs_f64();
        eprintln!(
            "syscluster: imported {} lines ({:.1} M lines/s): {} → {}",
            stats.lines,
            stats.lines as f64 / secs.max(1e-9) / 1e6,
            super::summary(&profile),
            a.output.display()
        );
        if stats.skipped_lines > 0 {
            eprintln!("syscluster: skipped {} lines that are not strace output", stats.skipped_lines);
        }
        if !stats.durations {
            eprintln!("syscluster: the log has no durations (strace -T): no time in the kernel");
        }
    }
    Ok(0)
}
