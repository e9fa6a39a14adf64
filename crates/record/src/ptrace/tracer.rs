//! The tracer's loop: one `waitpid` report at a time, each thread moved
//! through its calls, each completed call handed to the profile builder in
//! its thread's order.
//!
//! A traced call costs two stops: its entry (a seccomp stop, or a syscall-
//! enter stop without the filter) for the number, arguments, path and code
//! location, and its exit (PTRACE_SYSCALL from the entry) for the result.
//! Calls that never return (exit, exit_group) are emitted at their entry.

use super::callsites::Callsites;
use super::fault::Injector;
use super::memory;
use super::sys::{self, Report, Resume, SyscallInfo};
use crate::{ExitStatus, Sink};
use rustc_hash::FxHashMap;
use std::io;
use syscluster_model::{syscalls, CodeAddr, LossCause, SyscallEvent};

const EXECVE: u32 = libc::SYS_execve as u32;
const EXECVEAT: u32 = libc::SYS_execveat as u32;
const SETSID: u32 = libc::SYS_setsid as u32;

/// A call whose entry was seen and whose exit was not yet.
#[derive(Clone, Copy)]
struct Call {
    nr: u32,
    args: [u64; 6],
    enter_ns: u64,
    callsite: Option<CodeAddr>,
    /// The path argument was read into the thread's buffer.
    has_path: bool,
    /// The thread's `addr` buffer holds the call's socket address or
    /// descriptor pair (`SyscallEvent::addr`).
    has_addr: bool,
    /// An injected fault: the result to set at its exit.
    forced: Option<i64>,
}

struct Thread {
    /// Thread-group id.
    pid: u32,
    call: Option<Call>,
    /// The path argument of `call`, reused from call to call.
    path: Vec<u8>,
    /// The socket address or descriptor pair of `call`.
    addr: Vec<u8>,
    /// The launcher's child before the command's exec: its calls belong to
    /// the recorder, not to the command, and are not recorded.
    launching: bool,
    /// Its process left the command's session (setsid), or descends from
    /// one that did: a daemon, not waited for unless followed.
    detached: bool,
}

impl Thread {
    fn new(pid: u32) -> Thread {
        Thread { pid, call: None, path: Vec::new(), addr: Vec::new(), launching: false, detached: false }
    }
}

/// What the loop learned besides the calls.
pub struct Outcome {
    /// How the command's first process ended.
    pub status: Option<ExitStatus>,
    /// Whether the command's exec succeeded (else the launcher reports why).
    pub started: bool,
    /// Whether the seccomp filter was in place (else every call stopped twice
    /// through PTRACE_SYSCALL).
    pub filtered: bool,
    /// Threads still running when the recording ended, detached from the
    /// tracer (detached tasks not followed, or followed until interrupted).
    pub left_running: u64,
    /// Calls of each injected fault's kind seen.
    pub faults_seen: Vec<u64>,
}

pub struct Tracer<'a> {
    sink: &'a mut Sink,
    callsites: Option<Callsites>,
    threads: FxHashMap<i32, Thread>,
    root: i32,
    status: Option<ExitStatus>,
    started: bool,
    /// A seccomp stop was seen while launching: the filter is installed.
    filter_seen: bool,
    filtered: bool,
    /// Index of the path argument of each call number.
    path_args: Vec<Option<u8>>,
    /// Record detached tasks after the command ended, until interrupted.
    follow_detached: bool,
    /// The recorder's interrupt count when the command ended.
    interrupts_then: u32,
    /// What tells what a descriptor is, in memory, by call number: the
    /// argument, and whether it is read at the exit (an `int[2]` filled in)
    /// rather than at the entry (a `struct sockaddr` and its length).
    addr_args: Vec<Option<(u8, bool)>>,
    /// The faults to inject (`syscluster verify --inject`).
    injector: Injector,
}

impl<'a> Tracer<'a> {
    /// A tracer for `root`, the launcher's child, seized and stopped.
    pub fn new(
        sink: &'a mut Sink,
        root: i32,
        callsites: Option<Callsites>,
        follow_detached: bool,
        injector: Injector,
    ) -> Tracer<'a> {
        let mut threads = FxHashMap::default();
        let mut t = Thread::new(root as u32);
        t.launching = true;
        threads.insert(root, t);
        let path_args = (0..syscalls::NR_SYSCALLS as u32)
            .map(|nr| syscalls::by_nr(nr).and_then(|s| s.path_arg()).map(|i| i as u8))
            .collect();
        let addr_args = (0..syscalls::NR_SYSCALLS as u32)
            .map(|nr| syscalls::descriptor_memory_arg(nr).map(|(i, at_exit)| (i as u8, at_exit)))
            .collect();
        Tracer {
            sink,
            callsites,
            threads,
            root,
            status: None,
            started: false,
            filter_seen: false,
            filtered: false,
            path_args,
            addr_args,
            follow_detached,
            interrupts_then: 0,
            injector,
        }
    }

    /// Resumes the stopped root so that it stops at every call until its exec.
    pub fn start(&mut self) -> io::Result<()> {
        sys::resume(self.root, Resume::Syscall, 0)
    }

    /// Runs until every traced thread is gone.
    ///
    /// Detached tasks (a daemon's, after setsid) cannot be let go to run on
    /// untraced as under BPF: the seccomp filter stays with them and, with
    /// no tracer, fails their every call with ENOSYS. So once the command
    /// has ended and only detached threads are left, they are recorded on
    /// (with or without `follow_detached`) until they end or the recorder is
    /// interrupted; then they are killed, and counted in `left_running`.
    pub fn run(mut self) -> io::Result<Outcome> {
        let mut left_running = 0;
        let mut told = false;
        while !self.threads.is_empty() {
            if self.status.is_some() && left_running == 0 && self.threads.values().all(|t| t.detached) {
                if crate::launch::interrupts() > self.interrupts_then {
                    left_running = self.kill_left();
                } else if !told && !self.follow_detached {
                    told = true;
                    eprintln!(
                        "syscluster: the command ended; its detached tasks are still recorded (ptrace cannot let them \
                         run on untraced): interrupt syscluster (Ctrl-C) to stop the recording and end them"
                    );
                }
            }
            let (tid, status) = match sys::wait_any() {
                Ok(r) => r,
                Err(e) if e.raw_os_error() == Some(libc::ECHILD) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if left_running > 0 && Report::decode(status) == Report::NewChild {
                // Forked while being killed: ends too.
                if let Ok(child) = sys::event_msg(tid) {
                    unsafe { libc::kill(child as i32, libc::SIGKILL) };
                }
            }
            self.report(tid, status);
        }
        // Threads the kernel no longer reports on (cannot happen unless
        // someone else reaped them): their open calls are lost.
        let left = self.threads.len() as u64;
        if left > 0 {
            self.sink.builder.lost(LossCause::Untracked, left);
        }
        let faults_seen = self.injector.seen();
        Ok(Outcome { status: self.status, started: self.started, filtered: self.filtered, left_running, faults_seen })
    }

    /// Kills the processes of the threads left; returns how many threads
    /// they had. Their ends are reported to the loop as any other.
    fn kill_left(&mut self) -> u64 {
        let pids: rustc_hash::FxHashSet<u32> = self.threads.values().map(|t| t.pid).collect();
        for pid in pids {
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        self.threads.len() as u64
    }

    fn report(&mut self, tid: i32, status: i32) {
        match Report::decode(status) {
            Report::Gone(status) => self.gone(tid, status),
            r @ (Report::Seccomp | Report::Syscall) => match sys::syscall_info(tid) {
                Ok(SyscallInfo::Entry { nr, args, ip, sp }) => {
                    self.entry(tid, nr as u32, args, ip, sp, r == Report::Seccomp)
                }
                Ok(SyscallInfo::Exit { ret }) => self.exit(tid, ret),
                Ok(SyscallInfo::None) => self.resume(tid, 0),
                Err(e) => {
                    // ESRCH: killed in the stop, before its call ran.
                    if e.raw_os_error() != Some(libc::ESRCH) {
                        self.sink.builder.lost(LossCause::Unpaired, 1);
                    }
                    self.resume(tid, 0);
                }
            },
            Report::NewChild => {
                if let Ok(child) = sys::event_msg(tid) {
                    let detached = self.threads.get(&tid).is_some_and(|t| t.detached);
                    self.thread(child as i32, status >> 16 != libc::PTRACE_EVENT_CLONE).detached |= detached;
                }
                self.resume(tid, 0);
            }
            Report::Exec => self.exec(tid),
            Report::Attached => {
                self.thread(tid, false);
                self.resume(tid, 0);
            }
            // Stay stopped with the group until SIGCONT (reported then).
            Report::GroupStop => {
                let _ = sys::resume(tid, Resume::Listen, 0);
            }
            // The signal goes to the program as if nobody watched.
            Report::Signal(sig) => self.resume(tid, sig),
        }
    }

    /// The state of thread `tid`, created on first sight (its attach stop
    /// and its creator's fork/clone event arrive in either order).
    fn thread(&mut self, tid: i32, new_process: bool) -> &mut Thread {
        self.threads.entry(tid).or_insert_with(|| {
            let pid = if new_process { tid as u32 } else { sys::tgid_of(tid).unwrap_or(tid as u32) };
            Thread::new(pid)
        })
    }

    /// Resumes `tid` so that it stops where the next thing to record is.
    fn resume(&mut self, tid: i32, sig: i32) {
        let how = match self.threads.get(&tid) {
            Some(t) if t.call.is_some() || t.launching || !self.filtered => Resume::Syscall,
            _ => Resume::Cont,
        };
        // ESRCH: killed meanwhile; its end is reported by waitpid.
        let _ = sys::resume(tid, how, sig);
    }

    fn entry(&mut self, tid: i32, nr: u32, args: [u64; 6], ip: u64, sp: u64, seccomp: bool) {
        let enter_ns = sys::now_ns();
        let t = self.thread(tid, false);
        let launching = t.launching;
        if let Some(open) = t.call {
            if seccomp && open.nr == nr {
                // The seccomp stop after a syscall-enter stop of one call.
                self.filter_seen |= launching;
                self.resume(tid, 0);
                return;
            }
            // An entry without the previous call's exit.
            t.call = None;
            if !launching {
                self.emit(tid, open, None);
                self.sink.builder.lost(LossCause::Unpaired, 1);
            }
        }
        self.filter_seen |= launching && seccomp;
        if launching && nr != EXECVE && nr != EXECVEAT {
            self.resume(tid, 0);
            return;
        }
        let t = self.threads.get_mut(&tid).expect("thread created above");
        let pid = t.pid;
        let has_path = match self.path_args.get(nr as usize).copied().flatten() {
            Some(i) => memory::read_cstr(tid, args[i as usize], &mut t.path),
            None => false,
        };
        // The launcher's own exec is not the program's code: it is the
        // launch (named so when the profile is finished).
        let callsite = match &mut self.callsites {
            Some(_) if launching => self.sink.modules.recorder().map(|module| CodeAddr::at(module, 0)),
            Some(c) => c.find(pid, tid, ip, sp, &mut self.sink.modules, &mut self.sink.builder),
            None => None,
        };
        let t = self.threads.get_mut(&tid).expect("thread created above");
        let has_addr = match self.addr_args.get(nr as usize).copied().flatten() {
            Some((i, false)) => {
                t.addr.resize(args[i as usize + 1].min(128) as usize, 0);
                memory::read_upto(tid, args[i as usize], &mut t.addr).is_ok_and(|n| n == t.addr.len() && n > 0)
            }
            _ => false,
        };
        let forced = self.injector.entry(tid, nr, &args);
        let call = Call { nr, args, enter_ns, callsite, has_path, has_addr, forced };
        if syscalls::never_returns(nr) {
            self.resume(tid, 0);
            self.emit(tid, call, None);
        } else {
            self.threads.get_mut(&tid).expect("thread exists").call = Some(call);
            self.resume(tid, 0);
        }
    }

    fn exit(&mut self, tid: i32, ret: i64) {
        // A failed exec of the launcher (a PATH entry without the program)
        // is not recorded; the successful one is.
        let mut done = self.threads.get_mut(&tid).and_then(|t| t.call.take().filter(|_| !t.launching));
        // An injected errno: the kernel skipped the call (-ENOSYS without
        // the filter); the program sees the fault's result.
        let ret = match done.and_then(|c| c.forced) {
            Some(forced) => {
                let _ = super::fault::set_regs(tid, |r| r.rax = forced as u64);
                forced
            }
            None => ret,
        };
        // Descriptors a call wrote to memory, read before the program runs on.
        if let Some(call) = &mut done {
            if let (Some((i, true)), 0) = (self.addr_args.get(call.nr as usize).copied().flatten(), ret) {
                let t = self.threads.get_mut(&tid).expect("thread exists");
                t.addr.resize(8, 0);
                call.has_addr = memory::read_upto(tid, call.args[i as usize], &mut t.addr).is_ok_and(|n| n == 8);
            }
        }
        // The program runs on while the builder takes the call.
        self.resume(tid, 0);
        if let Some(call) = done {
            if call.nr == SETSID && ret > 0 {
                let pid = self.threads[&tid].pid;
                self.threads.values_mut().filter(|t| t.pid == pid).for_each(|t| t.detached = true);
            }
            if let Some(c) = &mut self.callsites {
                c.after_call(self.threads[&tid].pid, call.nr, &call.args, ret);
            }
            self.emit(tid, call, Some(ret));
        }
    }

    /// Thread `tid` completed an exec. If it was not the leader, it now
    /// has the leader's id and the old leader is gone without a report.
    fn exec(&mut self, tid: i32) {
        let former = sys::event_msg(tid).map(|m| m as i32).unwrap_or(tid);
        if former != tid {
            if let Some(old) = self.threads.remove(&tid) {
                if let Some(call) = old.call.filter(|_| !old.launching) {
                    self.emit_as(tid, old.pid, &old.path, &old.addr, call, None);
                }
                self.sink.builder.thread_exit(tid as u32);
            }
            if let Some(mut t) = self.threads.remove(&former) {
                self.sink.builder.thread_exit(former as u32);
                t.pid = tid as u32;
                self.threads.insert(tid, t);
            }
        }
        let t = self.thread(tid, true);
        t.pid = tid as u32;
        if t.launching {
            t.launching = false;
            self.started = true;
            self.filtered = self.filter_seen;
        }
        if let Some(c) = &mut self.callsites {
            c.exec(tid as u32);
        }
        self.resume(tid, 0);
    }

    fn gone(&mut self, tid: i32, status: i32) {
        if let Some(t) = self.threads.remove(&tid) {
            // Killed inside a call: the call was made and never returned.
            if let Some(call) = t.call.filter(|_| !t.launching) {
                self.emit_as(tid, t.pid, &t.path, &t.addr, call, None);
            }
            self.sink.builder.thread_exit(tid as u32);
            if t.pid == tid as u32 {
                self.sink.builder.process_exit(t.pid);
                if let Some(c) = &mut self.callsites {
                    c.process_exit(t.pid);
                }
            }
        }
        if tid == self.root {
            self.status = ExitStatus::from_wait(status);
            crate::launch::stop_forwarding();
            self.interrupts_then = crate::launch::interrupts();
        }
    }

    fn emit(&mut self, tid: i32, call: Call, ret: Option<i64>) {
        let t = &self.threads[&tid];
        let ev = event(t.pid, tid, &t.path, &t.addr, call, ret);
        self.sink.builder.event(&ev);
    }

    fn emit_as(&mut self, tid: i32, pid: u32, path: &[u8], addr: &[u8], call: Call, ret: Option<i64>) {
        self.sink.builder.event(&event(pid, tid, path, addr, call, ret));
    }
}

fn event<'a>(pid: u32, tid: i32, path: &'a [u8], addr: &'a [u8], call: Call, ret: Option<i64>) -> SyscallEvent<'a> {
    SyscallEvent {
        pid,
        tid: tid as u32,
        nr: call.nr,
        args: call.args,
        ret,
        enter_ns: call.enter_ns,
        // The time between the two stops is mostly the tracer's and the
        // scheduler's, not the kernel's: not measured.
        kernel_ns: None,
        blocked_ns: None,
        callsite: call.callsite,
        path: call.has_path.then_some(path),
        addr: call.has_addr.then_some(addr),
        unknown_args: 0,
    }
}
