//! The ptrace backend: the unprivileged recorder.
//!
//! The command is forked and held at the launcher's gate; the recorder
//! attaches with PTRACE_SEIZE before the gate opens, so that the options
//! (follow fork, vfork, clone and exec; seccomp stops; kill the tracees if
//! the recorder dies) hold from the first instruction, no SIGSTOP has to be
//! raised and swallowed, and group-stops are told apart from signals. The
//! child installs a seccomp filter that returns `SECCOMP_RET_TRACE` for the
//! traced calls, then execs. Recording starts at the command's `execve`,
//! the first call strace shows, so that ptrace, BPF and strace profiles of
//! one program agree.
//!
//! # Cost
//!
//! A traced call stops the tracee twice: at its entry (the seccomp stop) and
//! at its exit (PTRACE_SYSCALL from the entry, the only way to see the
//! result): four context switches per call, about 10 µs per stop on the
//! reference VM (more under load), against 0.85 µs for an 8-byte write.
//! `bench/ptrace/overhead.sh` (W1, load 5–6) measured 21–24× for this
//! backend, 21–25× for a tracer that does nothing but the two stops,
//! 12.5–14.5× for one stop per call (no results at all), 26–29× for
//! `strace -f`: 10× is out of reach for ptrace here. What is saved: one
//! PTRACE_GET_SYSCALL_INFO per stop (number, arguments, ip, sp; all
//! registers only when an unwind needs rbp), one `process_vm_readv` per
//! path and one per stack walk, maps kept per process, the builder fed after
//! the tracee is resumed, no allocation per call in the tracer. The filter
//! traces every call, as the profile needs them all; `seccomp::program`
//! takes a list of calls to let through untraced, should an option ever ask
//! for that. Not done, measured: pinning the tracer alone to a CPU ran
//! slower (the scheduler wakes the tracee on the idle CPU anyway); pinning
//! the tracee too gained about 10% but changes what `sched_getaffinity`
//! tells the program (`nproc`, thread pool sizes).
//!
//! - `sys`: the ptrace requests and `waitpid` reports;
//! - `seccomp`: the filter;
//! - `memory`: reading path strings from the tracee;
//! - `tracer`: the loop that turns stops into calls;
//! - `callsites`: code locations, unwound at each call's entry;
//! - `fault`: faults injected into chosen calls (`syscluster verify --inject`).

mod callsites;
pub mod fault;
pub(crate) mod memory;
mod seccomp;
mod sys;
mod tracer;

use crate::launch::{self, Child, PreExec};
use crate::{Ended, RecordError, RecordOptions, Sink};
use std::ffi::OsString;
use std::io;

/// Records `argv` with ptrace until it and its descendants exit (detached
/// ones only with [`RecordOptions::follow_detached`]).
/// Things the user should know (the filter was unavailable) go to `notes`.
/// Returns how the command ended and, for each of `opts.faults`, how many
/// calls of its kind the command made.
pub fn record(
    argv: &[OsString],
    opts: &RecordOptions,
    sink: &mut Sink,
    notes: &mut Vec<String>,
) -> Result<(Ended, Vec<u64>), RecordError> {
    let hook: Option<PreExec> = if seccomp::available() {
        let prog = seccomp::program(&[]);
        // A filter that cannot be installed is noticed by the tracer (no
        // seccomp stop before the exec), which then stops at every call.
        Some(Box::new(move || {
            let _ = seccomp::install(&prog);
            Ok(())
        }))
    } else {
        None
    };
    let mut child = Child::spawn(argv, hook)?;
    let backend = |what: &str, e: io::Error| RecordError::Backend(format!("ptrace: {what}: {e}"));
    sys::seize(child.pid).map_err(|e| backend("cannot trace the command", e))?;
    stop_at_gate(child.pid).map_err(|e| backend("cannot stop the command", e))?;
    let program = argv.first().and_then(|c| launch::resolve_program(c));
    let callsites = match opts.callsites.then(|| callsites::Callsites::new(program.as_deref())) {
        Some(Ok(c)) => Some(c),
        Some(Err(why)) => {
            notes.push(format!("code locations are not recorded: {why}"));
            None
        }
        None => None,
    };
    let injector = fault::Injector::new(&opts.faults);
    let mut tracer = tracer::Tracer::new(sink, child.pid, callsites, opts.follow_detached, injector);
    tracer.start().map_err(|e| backend("cannot resume the command", e))?;
    // Before the command runs: a signal sent once it has started (by a
    // script that waits for its first output) finds the handler there.
    launch::forward_signals_to(child.pid)?;
    child.open_gate()?;
    let outcome = tracer.run().map_err(|e| backend("waiting for the command", e))?;
    let ran_ns = child.ran_ns();
    if let Some(s) = outcome.status {
        child.set_reaped(s);
    }
    // The exec verdict: the launcher's error pipe holds the exec's errno if
    // it failed ("command not found"), or is closed if it succeeded.
    child.exec_result()?;
    if outcome.started && !outcome.filtered {
        notes.push("the seccomp filter could not be installed; every call stopped twice (slower)".into());
    }
    let exit =
        outcome.status.ok_or_else(|| RecordError::Backend("ptrace: the command's end was not reported".into()))?;
    Ok((Ended { exit, left_running: outcome.left_running, ran_ns, cpu_ns: None }, outcome.faults_seen))
}

/// Stops the seized child (blocked at the launch gate) so that the tracer
/// can resume it with syscall stops before anything else runs.
fn stop_at_gate(pid: i32) -> io::Result<()> {
    if unsafe { libc::ptrace(libc::PTRACE_INTERRUPT, pid, 0usize, 0usize) } < 0 {
        return Err(io::Error::last_os_error());
    }
    loop {
        let mut status = 0;
        let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        match sys::Report::decode(status) {
            sys::Report::Attached => return Ok(()),
            sys::Report::Gone(_) => return Err(io::Error::other("the command ended before it started")),
            // A signal sent to the child at the gate: keep it for the program.
            sys::Report::Signal(sig) => sys::resume(pid, sys::Resume::Cont, sig)?,
            _ => sys::resume(pid, sys::Resume::Cont, 0)?,
        }
    }
}
