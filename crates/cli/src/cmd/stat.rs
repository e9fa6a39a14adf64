//! `syscluster stat`: crossings by system call, and wall, user and system
//! time, over repeated runs.
//!
//! Timing and counting are separate runs: each repetition runs the command
//! once untraced (its times) and once under the recorder in aggregate mode
//! (its crossings), so that tracing overhead never leaks into the times.

use crate::flags::StatArgs;
use crate::Failure;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::Instant;
use syscluster_analysis::BuilderOptions;
use syscluster_model::profile::NodeKeyMode;
use syscluster_record::launch::{Child, ExitStatus};
use syscluster_record::{Backend, Mode, RecordOptions};
use syscluster_report::{json::Json, text::Text, Render, ReportOptions, Stat};

/// Times of one untraced run, nanoseconds.
pub(crate) struct Times {
    pub wall: u64,
    pub user: u64,
    pub sys: u64,
    pub exit: ExitStatus,
}

fn rusage_children() -> (u64, u64) {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

pub(crate) fn timed_run(argv: &[OsString]) -> Result<Times, Failure> {
    let (u0, s0) = rusage_children();
    let start = Instant::now();
    let mut child = Child::spawn(argv, None).map_err(launch_failure)?;
    child.release().map_err(launch_failure)?;
    let exit = child.wait().map_err(|e| Failure::new(format!("waiting for the command: {e}")))?;
    let wall = start.elapsed().as_nanos() as u64;
    let (u1, s1) = rusage_children();
    Ok(Times { wall, user: u1 - u0, sys: s1 - s0, exit })
}

/// Writes the table to stdout. When whoever read stdout has gone (`stat --
/// yes | head -1`), stat ends as the command did and as any program
/// writing there would: killed by SIGPIPE, saying nothing more.
fn write_table(bytes: &[u8]) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            // Rust ignores SIGPIPE; restore the default and take it.
            unsafe {
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                libc::raise(libc::SIGPIPE);
            }
            Err(Failure::with_code("standard output was closed", 128 + libc::SIGPIPE))
        }
        Err(e) => Err(Failure::new(format!("cannot write the table: {e}"))),
    }
}

pub(crate) fn launch_failure(e: syscluster_record::LaunchError) -> Failure {
    let code = match &e {
        syscluster_record::LaunchError::Exec(_, io) if io.kind() == std::io::ErrorKind::NotFound => 127,
        syscluster_record::LaunchError::Exec(..) => 126,
        _ => 1,
    };
    Failure::with_code(e.to_string(), code)
}

/// How `stat` and `verify` count crossings: aggregate mode, nodes by
/// name, nothing else collected (with ptrace when asked).
pub(crate) fn counting_options(ptrace: bool) -> RecordOptions {
    RecordOptions {
        backend: ptrace.then_some(Backend::Ptrace),
        mode: Mode::Aggregate,
        builder: BuilderOptions {
            node_key: NodeKeyMode::Name,
            value_profiles: false,
            io_patterns: false,
            ..Default::default()
        },
        callsites: false,
        ..Default::default()
    }
}

pub fn run(a: StatArgs) -> Result<i32, Failure> {
    let runs = a.runs.max(1);
    let mut times = Vec::new();
    let mut crossings: Vec<u64> = Vec::new();
    let mut by_call: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut backend = String::from("none");
    let mut first_failure: Option<ExitStatus> = None;
    let opts = counting_options(a.ptrace);
    for i in 0..runs {
        let t = timed_run(&a.command)?;
        if t.exit != ExitStatus::Code(0) {
            first_failure.get_or_insert(t.exit);
        }
        times.push(t);
        if a.no_count {
            continue;
        }
        let rec = syscluster_record::record(&a.command, &opts).map_err(|e| Failure::new(e.to_string()))?;
        if i == 0 {
            for note in &rec.notes {
                eprintln!("syscluster: {note}");
            }
        }
        backend = rec.profile.meta.backend.clone();
        if !rec.profile.lost_events.is_empty() {
            eprintln!("syscluster: run {}: some events were lost; counts are incomplete", i + 1);
        }
        crossings.push(rec.profile.meta.total_calls);
        for n in &rec.profile.nodes {
            let v = by_call.entry(n.syscall.clone()).or_insert_with(|| vec![0; i as usize]);
            v.push(n.count);
        }
        for v in by_call.values_mut() {
            v.resize(i as usize + 1, 0);
        }
    }
    let wall: Vec<u64> = times.iter().map(|t| t.wall).collect();
    let user: Vec<u64> = times.iter().map(|t| t.user).collect();
    let sys: Vec<u64> = times.iter().map(|t| t.sys).collect();
    let command: Vec<String> = a.command.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    let stat =
        Stat { command, runs, counting_backend: backend, wall, user, system: sys, crossings, by_syscall: by_call };
    let opts = ReportOptions { top: a.top, ..Default::default() };
    let out = if a.json { Json.render(&stat, &opts) } else { Text.render(&stat, &opts) };
    write_table(&out)?;
    if let Some(f) = first_failure {
        eprintln!(
            "syscluster: the command failed ({}) in at least one run",
            match f {
                ExitStatus::Code(c) => format!("exit {c}"),
                ExitStatus::Signal(s) => format!("signal {s}"),
            }
        );
        return Ok(f.shell_code());
    }
    Ok(0)
}
