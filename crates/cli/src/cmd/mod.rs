//! One file per subcommand.

mod advise;
mod calibrate;
mod cc;
mod import;
pub mod kmod_gen;
mod merge;
mod record;
mod report;
mod run;
mod stat;
mod verify;

use crate::flags::{Command, NodeKeyArg};
use crate::Failure;
use std::io::Write;
use std::path::Path;
use syscluster_model::profile::NodeKeyMode;

pub fn run(command: Command) -> Result<i32, Failure> {
    match command {
        Command::Record(a) => record::run(a),
        Command::ImportStrace(a) => import::run(a),
        Command::Report(a) => report::run(a),
        Command::Merge(a) => merge::run(a),
        Command::Calibrate(a) => calibrate::run(a),
        Command::Advise(a) => advise::run(a),
        Command::Stat(a) => stat::run(a),
        Command::Run(a) => run::run(a),
        Command::Cc(a) => cc::run(a),
        Command::Verify(a) => verify::run(a),
        Command::KmodGen(a) => kmod_gen::run(a),
    }
}

pub(crate) fn node_key(k: NodeKeyArg) -> NodeKeyMode {
    match k {
        NodeKeyArg::Name => NodeKeyMode::Name,
        NodeKeyArg::Fd => NodeKeyMode::Fd,
        NodeKeyArg::Descriptor => NodeKeyMode::Descriptor,
        NodeKeyArg::Callsite => NodeKeyMode::Callsite,
    }
}

/// Writes `bytes` to `path`, atomically, or to stdout (a closed pipe is no
/// error); `what` names them in the error.
pub(crate) fn write_out(path: Option<&Path>, bytes: &[u8], what: &str) -> Result<(), Failure> {
    match path {
        Some(path) => syscluster_model::profile::write_atomically(path, bytes)
            .map_err(|e| Failure::new(format!("cannot write {}: {e}", path.display()))),
        None => {
            let mut out = std::io::stdout().lock();
            match out.write_all(bytes).and_then(|_| out.flush()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    Err(Failure::new(format!("cannot write the {what}: {e}")))
                }
                _ => Ok(()),
            }
        }
    }
}

/// Saves a profile, naming the file in the error.
pub(crate) fn save(profile: &syscluster_model::Profile, path: &std::path::Path) -> Result<(), Failure> {
    profile.save(path).map_err(|e| Failure::new(format!("cannot write profile {}: {e}", path.display())))
}

/// One line about what a profile holds, for stderr.
pub(crate) fn summary(p: &syscluster_model::Profile) -> String {
    let m = &p.meta;
    let mut s = format!(
        "{} calls, {} nodes, {} edges, {} process{}, {} thread{}",
        m.total_calls,
        p.nodes.len(),
        p.edges.len(),
        m.processes,
        if m.processes == 1 { "" } else { "es" },
        m.threads,
        if m.threads == 1 { "" } else { "s" }
    );
    if !p.lost_events.is_empty() {
        let causes: Vec<String> = p.lost_events.by_cause.iter().map(|(c, n)| format!("{c} {n}")).collect();
        s.push_str(&format!("; LOST: {}", causes.join(", ")));
    }
    s
}
