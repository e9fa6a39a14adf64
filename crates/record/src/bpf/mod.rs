//! The BPF backend: programs on the raw tracepoints `sys_enter` and
//! `sys_exit` (raw: no perf-buffer copy, unlike `tracepoint/raw_syscalls`;
//! fentry/fexit may not be loaded where this was built) and on
//! `sched_process_fork` / `sched_process_exit`, which follow every thread
//! and process of the command. Transitions are per thread. A program on
//! `sched_switch` measures each call's time off the CPU (blocked or
//! preempted: not time the kernel worked for it), the nodes' `blocked_ns`.
//!
//! - [`Mode::Aggregate`]: the syscall graph is built in the kernel
//!   (`aggregate.bpf.c`: a per-thread cache of edge counters, flushed to a
//!   hash map); user space reads the maps once, at the end. Time in the
//!   kernel is measured on a random sample of the calls and scaled. Code
//!   locations only with `--node-key callsite`.
//! - [`Mode::Events`]: one record per call through a ring buffer
//!   (`events.bpf.c`), with its code location when
//!   [`RecordOptions::callsites`] is set, into the profile builder.
//!
//! A recorded task's state is found by the `pt_regs` address the raw
//! tracepoints pass (see `common.bpf.h`): no helper call on the hot path.
//! Code locations are found in the kernel by unwinding libc, the loader and
//! the vDSO with the tables of [`crate::callsite::unwind::skip_modules`]
//! (`unwind.bpf.h`). Every loss is counted by cause (`lost[]`).
//!
//! Everything that can fail for lack of permission or kernel support (load,
//! attach) happens before the command starts, so that the caller can fall
//! back to ptrace. The command is forked and held at its gate, registered
//! to be recorded, then released; counting starts at its `execve`.
//! `bench/record/` measures what this costs.

mod aggregate;
mod events;

#[allow(clippy::all, unused_qualifications, dead_code)]
mod skel {
    pub mod aggregate {
        include!(concat!(env!("OUT_DIR"), "/aggregate.skel.rs"));
    }
    pub mod events {
        include!(concat!(env!("OUT_DIR"), "/events.skel.rs"));
    }
    pub mod floor {
        include!(concat!(env!("OUT_DIR"), "/floor.skel.rs"));
    }
}

use crate::launch::Child;
use crate::{Ended, ExitStatus, Mode, RecordError, RecordOptions, Sink};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};
use std::ffi::OsString;
use std::io;
use std::mem::MaybeUninit;
use std::sync::Mutex;
use std::time::Duration;
use syscluster_model::profile::NodeKeyMode;
use syscluster_model::{syscalls, LossCause};

/// The constants of `syscluster.h`, as the skeleton generated them.
use skel::aggregate::types::{arg_info_bits, key_mode, limits, loss, phase};

/// How often user space looks at the kernel's counters (and, in events
/// mode, drains the ring buffer) while it waits.
const TICK: Duration = Duration::from_millis(10);

/// Records `argv` with BPF; see the module documentation.
pub fn record(argv: &[OsString], opts: &RecordOptions, sink: &mut Sink) -> Result<Ended, RecordError> {
    let _quiet = LibbpfLog::capture();
    let ended = match opts.mode {
        Mode::Aggregate => aggregate::record(argv, opts, sink),
        Mode::Events => events::record(argv, opts, sink),
    }?;
    Ok(ended)
}

/// Runs `f` while empty programs are attached to `sys_enter` (and
/// `sys_exit` if `exit_too`): what the attach points alone cost, the floor
/// of this backend's overhead. For the benchmark (`bench/record/`).
pub fn with_floor<R>(exit_too: bool, f: impl FnOnce() -> R) -> Result<R, RecordError> {
    let _quiet = LibbpfLog::capture();
    let mut object = MaybeUninit::uninit();
    let mut open = skel::floor::FloorSkelBuilder::default()
        .open(&mut object)
        .map_err(|e| unavailable("opening the BPF object", e))?;
    open.progs.floor_exit.set_autoload(exit_too);
    let mut skel = open.load().map_err(|e| unavailable("loading the BPF programs", e))?;
    skel.attach().map_err(|e| unavailable("attaching the BPF programs", e))?;
    Ok(f())
}

/// `arg_info[nr]` of the BPF programs: where each call's fd and path
/// arguments are, from the model's syscall table.
fn arg_info_table() -> [u8; limits::NR_SLOTS.0 as usize] {
    let mut t = [0u8; limits::NR_SLOTS.0 as usize];
    for (nr, slot) in t.iter_mut().enumerate() {
        if let Some(info) = syscalls::by_nr(nr as u32) {
            let fd = match syscalls::key_fd_arg(nr as u32) {
                Some((i, dirfd)) => (i as u8 + 1) | if dirfd { arg_info_bits::ARG_FD_DIRFD.0 as u8 } else { 0 },
                None => 0,
            };
            let path = info.path_arg().map_or(0, |i| i as u8 + 1);
            *slot = fd | (path << arg_info_bits::ARG_PATH_SHIFT.0 as u8);
        }
    }
    t
}

fn key_mode_of(m: NodeKeyMode) -> key_mode {
    match m {
        NodeKeyMode::Name => key_mode::KEY_NAME,
        // Events mode keys in user space; aggregate mode records fd numbers
        // in place of identities (see aggregate::record).
        NodeKeyMode::Fd | NodeKeyMode::Descriptor => key_mode::KEY_FD,
        NodeKeyMode::Callsite => key_mode::KEY_CALLSITE,
    }
}

/// The loss causes of the kernel's `lost[]` counters.
fn loss_cause(i: usize) -> Option<LossCause> {
    Some(match i as u32 {
        x if x == loss::LOSS_RINGBUF.0 => LossCause::RingBufferFull,
        x if x == loss::LOSS_MAP_FULL.0 => LossCause::MapFull,
        x if x == loss::LOSS_UNTRACKED.0 => LossCause::Untracked,
        x if x == loss::LOSS_CALLSITE.0 => LossCause::CallsiteUnknown,
        _ => return None,
    })
}

/// Adds the kernel's loss counters to the profile.
fn report_losses(lost: &[u64], sink: &mut Sink) {
    for (i, &n) in lost.iter().enumerate() {
        if let Some(cause) = loss_cause(i) {
            sink.builder.lost(cause, n);
        }
    }
}

/// A failure before the command started: BPF is not usable here.
fn unavailable(what: &str, e: libbpf_rs::Error) -> RecordError {
    let detail = LibbpfLog::last_error();
    let hint = if e.kind() == libbpf_rs::ErrorKind::PermissionDenied {
        " (loading BPF programs needs root, or CAP_BPF and CAP_PERFMON)"
    } else {
        ""
    };
    match detail {
        Some(d) => RecordError::BpfUnavailable(format!("{what}: {e}{hint}; libbpf: {d}")),
        None => RecordError::BpfUnavailable(format!("{what}: {e}{hint}")),
    }
}

thread_local! {
    static SLOTS_LOG2: std::cell::Cell<u32> = const { std::cell::Cell::new(limits::TASK_SLOTS_LOG2.0) };
}

/// log2 of the number of task states found without a helper call (the
/// `slots` array; tasks whose slot is taken go to the `spill` hash map).
fn slots_log2() -> u32 {
    SLOTS_LOG2.with(|c| c.get())
}

/// Runs `f` with recordings made on this thread keeping `1 << log2` task
/// states in their array (at most 2^16), the rest in the hash map: the
/// tests use one slot to exercise the hash map.
#[doc(hidden)]
pub fn with_task_slots<R>(log2: u32, f: impl FnOnce() -> R) -> R {
    let old = SLOTS_LOG2.with(|c| c.replace(log2.min(16)));
    let r = f();
    SLOTS_LOG2.with(|c| c.set(old));
    r
}

/// Views a generated `#[repr(C)]` type as the bytes the kernel expects.
fn bytes_of<T: Copy>(v: &T) -> &[u8] {
    // SAFETY: T is a plain C struct of integers (generated from BTF); its
    // padding is zeroed by the Default constructors used here.
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
}

/// The unwind tables of the modules whose frames are skipped (libc, the
/// loader, the vDSO), flattened for the BPF programs' `unwind_rows` and
/// `skip_modules`.
struct UnwindData {
    modules: Vec<SkipEntry>,
    /// The rows, as `unwind_row`s.
    rows: Vec<u8>,
    count: u32,
}

impl UnwindData {
    fn build(program: Option<&std::path::Path>) -> Result<UnwindData, String> {
        use crate::callsite::unwind::CfaRule;
        use skel::aggregate::types::{cfa_kind, unwind_row};
        let mut modules = Vec::new();
        let mut rows = Vec::new();
        let mut count = 0u32;
        for m in crate::callsite::runtime::skip_modules_for(program)?.iter().take(limits::MAX_SKIP.0 as usize) {
            let vdso = m.ino == 0;
            let kdev = if vdso { 0 } else { crate::callsite::modules::dev_to_kernel(m.dev) };
            let first = count;
            for r in &m.table.rows {
                let (kind, off) = match r.cfa {
                    CfaRule::Rsp(n) => (cfa_kind::CFA_RSP, n),
                    CfaRule::Rbp(n) => (cfa_kind::CFA_RBP, n),
                    CfaRule::Unknown => (cfa_kind::CFA_UNKNOWN, 0),
                    CfaRule::Outermost => (cfa_kind::CFA_OUTERMOST, 0),
                    CfaRule::Own => (cfa_kind::CFA_OWN, 0),
                };
                let row = unwind_row {
                    pc: r.pc,
                    cfa_off: off,
                    rbp_off: r.rbp_offset.unwrap_or(0),
                    kind: kind.0 as u8,
                    has_rbp: r.rbp_offset.is_some() as u8,
                    ..Default::default()
                };
                rows.extend_from_slice(bytes_of(&row));
                count += 1;
            }
            modules.push(SkipEntry { dev: kdev, ino: m.ino, first, count: count - first, vdso, runtime: m.runtime });
        }
        Ok(UnwindData { modules, rows, count })
    }

    /// Writes the rows into a loaded program's `unwind_rows`.
    fn fill(&self, map: &dyn MapCore) -> Result<(), RecordError> {
        if self.count == 0 {
            return Ok(());
        }
        let keys: Vec<u8> = (0..self.count).flat_map(|i| i.to_ne_bytes()).collect();
        map.update_batch(&keys, &self.rows, self.count, MapFlags::ANY, MapFlags::ANY)
            .map_err(|e| unavailable("loading the unwind tables", e))
    }
}

/// One skipped module of [`UnwindData`].
struct SkipEntry {
    /// Device in the kernel's encoding, and inode.
    dev: u32,
    ino: u64,
    /// Its rows: `first..first + count`.
    first: u32,
    count: u32,
    vdso: bool,
    /// The program's language runtime (see `SkipModule::runtime`).
    runtime: bool,
}

/// The unwind tables, or why code locations are off; the language runtime
/// of `argv`'s program is stepped over too.
fn unwind_data(wanted: bool, argv: &[OsString]) -> Option<UnwindData> {
    if !wanted {
        return None;
    }
    let program = argv.first().and_then(|c| crate::launch::resolve_program(c));
    match UnwindData::build(program.as_deref()) {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!("syscluster: no code locations: {e}");
            None
        }
    }
}

/// Reads a generated `#[repr(C)]` type from the start of `b`.
fn read_as<T: Copy>(b: &[u8]) -> Option<T> {
    if b.len() < std::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: the length is checked; T is plain old data, valid for any bytes.
    Some(unsafe { std::ptr::read_unaligned(b.as_ptr() as *const T) })
}

/// Forks the command held at its gate and registers it to be recorded
/// (its tid in the `children` map, armed: counting starts at its execve).
/// Failing here is still failing before the command runs: a child dropped
/// at its gate exits without running.
fn spawn_armed(argv: &[OsString], children: &dyn MapCore, counters: Counters) -> Result<Child, RecordError> {
    let child = Child::spawn(argv, None)?;
    // Before the command is released: a signal sent once it has started
    // (by a script that waits for its first output) must find the handler
    // there, not kill the recorder.
    crate::launch::forward_signals_to(child.pid)?;
    // SAFETY: see Counters; nothing runs in the kernel for it yet.
    unsafe {
        std::ptr::write_volatile(counters.live, 1);
        std::ptr::write_volatile(counters.unadopted, 1);
    }
    let tid = (child.pid as u32).to_ne_bytes();
    children
        .update(&tid, &[phase::PHASE_ARMED.0 as u8], MapFlags::ANY)
        .map_err(|e| unavailable("registering the command", e))?;
    Ok(child)
}

/// The counters of a loaded program's .bss that the loader writes.
#[derive(Clone, Copy)]
struct Counters {
    live: *mut i64,
    detached: *mut i64,
    unadopted: *mut i64,
}

impl Counters {
    /// The kernel's count of recorded tasks still alive, and of those the
    /// detached ones.
    fn live(&self) -> Live {
        // SAFETY: see Counters; the kernel updates them concurrently.
        unsafe { Live { all: std::ptr::read_volatile(self.live), detached: std::ptr::read_volatile(self.detached) } }
    }
}

/// Ends the recording in the kernel: detaches every program of `links`
/// and waits until none of them is still running on another CPU, so that
/// the maps read next no longer change. The programs of raw tracepoints run
/// inside an RCU read-side section (`__bpf_trace_run`), and
/// `membarrier(MEMBARRIER_CMD_GLOBAL)` waits for an RCU grace period
/// (`synchronize_rcu`): a program that had started before its detachment
/// has returned by then.
fn stop_programs<L: Default>(links: &mut L) {
    drop(std::mem::take(links));
    const MEMBARRIER_CMD_GLOBAL: libc::c_long = 1;
    // SAFETY: a system call without pointers. It fails only on kernels with
    // nohz_full CPUs (EINVAL); then a detached program still running has a
    // few microseconds to finish while the first map is opened.
    unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0 as libc::c_long) };
}

/// Recorded tasks still alive, and of those the detached ones.
#[derive(Clone, Copy)]
struct Live {
    all: i64,
    detached: i64,
}

/// Waits until the command has ended and no recorded task it waits for is
/// left, calling `tick` every [`TICK`] meanwhile. Its descendants may
/// outlive it: those still in its session are waited for; detached ones
/// only if `follow_detached`, and then only until the recorder is
/// interrupted once the command has ended.
fn wait_all(
    child: &mut Child,
    counters: Counters,
    follow_detached: bool,
    tick: &mut dyn FnMut(),
) -> Result<Ended, RecordError> {
    let mut status = None;
    let mut cpu_ns = None;
    let mut interrupts_then = 0;
    loop {
        if status.is_none() {
            let mut st = 0;
            // SAFETY: zeroed rusage is valid; wait4 reaps only our child.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            let r = unsafe { libc::wait4(child.pid, &mut st, libc::WNOHANG, &mut ru) };
            if r == child.pid {
                status = ExitStatus::from_wait(st);
                let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
                cpu_ns = Some(ns(ru.ru_utime) + ns(ru.ru_stime));
                if let Some(s) = status {
                    child.set_reaped(s);
                    crate::launch::stop_forwarding();
                    interrupts_then = crate::launch::interrupts();
                }
            } else if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return Err(RecordError::Backend(format!("waiting for the command: {}", io::Error::last_os_error())));
            }
        }
        if let Some(exit) = status {
            let n = counters.live();
            let waited_for = if follow_detached { n.all } else { n.all - n.detached };
            let stopped = follow_detached && crate::launch::interrupts() > interrupts_then;
            if waited_for <= 0 || stopped {
                return Ok(Ended { exit, left_running: n.all.max(0) as u64, ran_ns: child.ran_ns(), cpu_ns });
            }
        }
        tick();
    }
}

/// The kernel module's tracepoints (kmod/: `multicall:mc_enter` and
/// `mc_exit`), which carry the calls a multi-call runs inside it: they pass
/// no syscall entry, so the `sys_enter` programs see only the `ioctl`.
/// Both modes attach their programs for them where the module is loaded
/// when the recording starts, and as soon as it appears during the
/// recording (looked for every [`KMOD_LOOK`]); the recorder then says when
/// it attached (multi-calls before that are recorded as their `ioctl`), or
/// that it could not. While attached the module cannot be unloaded.
pub(super) struct KmodProbes {
    links: Vec<libbpf_rs::Link>,
    started: std::time::Instant,
    looked: std::time::Instant,
    /// When the module appeared during the recording and was attached.
    late: Option<Duration>,
    failed: Option<String>,
}

/// How often a recording looks whether the module was loaded.
const KMOD_LOOK: Duration = Duration::from_millis(100);

/// Where the module shows that it is loaded.
const KMOD_SYSFS: &str = "/sys/module/multicall";

type KmodAttach<'a> = dyn FnMut() -> Result<Vec<libbpf_rs::Link>, libbpf_rs::Error> + 'a;

impl KmodProbes {
    /// Attaches now if the module is loaded; a failure here is the
    /// recording's (before the command starts, as every attach).
    pub(super) fn start(attach: &mut KmodAttach) -> Result<KmodProbes, RecordError> {
        let now = std::time::Instant::now();
        let mut p = KmodProbes { links: Vec::new(), started: now, looked: now, late: None, failed: None };
        if std::path::Path::new(KMOD_SYSFS).exists() {
            p.links = attach().map_err(|e| unavailable("attaching to the multicall module's tracepoints", e))?;
        }
        Ok(p)
    }

    /// While the command runs: attaches if the module has appeared.
    pub(super) fn tick(&mut self, attach: &mut KmodAttach) {
        if !self.links.is_empty() || self.failed.is_some() || self.looked.elapsed() < KMOD_LOOK {
            return;
        }
        self.looked = std::time::Instant::now();
        if !std::path::Path::new(KMOD_SYSFS).exists() {
            return;
        }
        match attach() {
            Ok(links) => {
                self.links = links;
                self.late = Some(self.started.elapsed());
            }
            Err(e) => self.failed = Some(e.to_string()),
        }
    }

    /// Detaches the module's programs (before `stop_programs`, whose wait
    /// then covers them too).
    pub(super) fn detach(&mut self) {
        self.links.clear();
    }

    /// Says what a module loaded during the recording means for the profile.
    pub(super) fn report(&self) {
        if let Some(t) = self.late {
            eprintln!(
                "syscluster: multicall.ko was loaded during the recording: its multi-calls are recorded call by \
                 call from {} ms on; those run through it before were recorded as one ioctl each",
                t.as_millis()
            );
        }
        if let Some(e) = &self.failed {
            eprintln!(
                "syscluster: multicall.ko was loaded during the recording but its tracepoints could not be \
                 attached ({e}): its multi-calls are recorded as one ioctl each, not call by call"
            );
        }
    }
}

/// libbpf's messages: kept (not printed) while a recording sets up, so
/// that a failure can say what libbpf saw.
struct LibbpfLog {
    previous: Option<(libbpf_rs::PrintLevel, libbpf_rs::PrintCallback)>,
}

static LIBBPF_LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

impl LibbpfLog {
    fn capture() -> LibbpfLog {
        if std::env::var_os("SYSCLUSTER_BPF_DEBUG").is_some() {
            fn show(_level: libbpf_rs::PrintLevel, msg: String) {
                eprint!("{msg}");
            }
            let previous = libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Debug, show)));
            return LibbpfLog { previous };
        }
        LIBBPF_LINES.lock().unwrap_or_else(|e| e.into_inner()).clear();
        fn keep(_level: libbpf_rs::PrintLevel, msg: String) {
            let mut lines = LIBBPF_LINES.lock().unwrap_or_else(|e| e.into_inner());
            if lines.len() >= 64 {
                lines.remove(0);
            }
            lines.push(msg.trim_end().to_string());
        }
        let previous = libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Warn, keep)));
        LibbpfLog { previous }
    }

    /// The last line libbpf reported as an error.
    fn last_error() -> Option<String> {
        let lines = LIBBPF_LINES.lock().unwrap_or_else(|e| e.into_inner());
        lines.iter().rev().find(|l| !l.is_empty()).cloned()
    }
}

impl Drop for LibbpfLog {
    fn drop(&mut self) {
        libbpf_rs::set_print(self.previous.take());
    }
}
