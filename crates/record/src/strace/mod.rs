//! Import of strace logs: `strace -f -ttt -T -o LOG CMD` becomes a profile.
//!
//! Lines are parsed in place ([`line`]), argument values decoded where strace
//! printed a value ([`args`]), calls split by another thread's line
//! (`<unfinished ...>` / `<... resumed>`) joined, and every call fed to the
//! profile builder in its thread's order. strace's pid column is the thread
//! id; processes are told from threads by the `CLONE_THREAD` flag of the
//! `clone`/`clone3` that created them.

pub mod args;
pub mod line;

use crate::Sink;
use line::{Body, Result_};
use rustc_hash::FxHashMap;
use std::fmt;
use std::io::{self, Read};
use std::path::Path;
use syscluster_analysis::BuilderOptions;
use syscluster_model::profile::Profile;
use syscluster_model::syscalls::{self, ArgKind};
use syscluster_model::{errno, LossCause, SyscallEvent};

#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Count lines that are not strace output as losses instead of failing.
    pub lenient: bool,
    /// Print progress to stderr about once a second.
    pub progress: bool,
}

/// What an import saw.
#[derive(Clone, Debug, Default)]
pub struct Imported {
    pub lines: u64,
    pub calls: u64,
    pub skipped_lines: u64,
    /// argv of the log's first successful execve.
    pub command: Option<Vec<String>>,
    pub first_time: Option<f64>,
    pub last_time: Option<f64>,
    /// Whether the log has `-T` durations (time in the kernel).
    pub durations: bool,
    /// Whether the log has a pid column (`-f`).
    pub pids: bool,
}

#[derive(Debug)]
pub enum ImportError {
    Io(String, io::Error),
    Syntax { file: String, line: u64, why: String, text: String },
    Truncated { file: String, line: u64 },
    Empty(String),
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::Io(file, e) => write!(f, "cannot read strace log {file}: {e}"),
            ImportError::Syntax { file, line, why, text } => {
                write!(f, "{file}:{line}: not strace output ({why}): {text} (use --lenient to skip such lines)")
            }
            ImportError::Truncated { file, line } => {
                write!(f, "{file}:{line}: the log is truncated: it ends in the middle of a line (no newline at its end); use --lenient to drop that line and import the rest")
            }
            ImportError::Empty(file) => {
                write!(f, "{file} holds no system calls (expected the output of: strace -f -ttt -T -o LOG CMD)")
            }
        }
    }
}

impl std::error::Error for ImportError {}

/// A call whose line was interrupted by another thread's.
struct Pending {
    nr: u32,
    time: Option<f64>,
    args: Vec<u8>,
}

struct Importer<'s> {
    sink: &'s mut Sink,
    names: FxHashMap<&'static [u8], u32>,
    tgid: FxHashMap<u32, u32>,
    threads_alive: FxHashMap<u32, u32>,
    pending: FxHashMap<u32, Pending>,
    path: Vec<u8>,
    /// The socket address or descriptor pair of the call (`SyscallEvent::addr`).
    addr: Option<Vec<u8>>,
    scratch: Vec<u8>,
    stats: Imported,
    opts: ImportOptions,
    file: String,
}

const CLONE_THREAD: i64 = 0x10000;

impl<'s> Importer<'s> {
    fn new(sink: &'s mut Sink, opts: ImportOptions, file: String) -> Self {
        let mut names = FxHashMap::default();
        for nr in 0..syscalls::NR_SYSCALLS as u32 {
            if let Some(s) = syscalls::by_nr(nr) {
                names.insert(s.name.as_bytes(), nr);
            }
        }
        for (alias, real) in [("fstatat", "newfstatat"), ("sendfile64", "sendfile"), ("umount", "umount2")] {
            if let Some(s) = syscalls::by_name(real) {
                names.insert(alias.as_bytes(), s.nr);
            }
        }
        Importer {
            sink,
            names,
            tgid: FxHashMap::default(),
            threads_alive: FxHashMap::default(),
            pending: FxHashMap::default(),
            path: Vec::new(),
            addr: None,
            scratch: Vec::new(),
            stats: Imported::default(),
            opts,
            file,
        }
    }

    fn nr_of(&self, name: &[u8]) -> Option<u32> {
        if let Some(&nr) = self.names.get(name) {
            return Some(nr);
        }
        // strace's name for numbers it does not know: syscall_0x1c9 / syscall_457.
        let n = name.strip_prefix(b"syscall_")?;
        let v = args::number(n)?;
        u32::try_from(v).ok()
    }

    /// The process of thread `tid`; a thread first seen while a clone is
    /// pending elsewhere belongs to that clone's process if CLONE_THREAD.
    fn process_of(&mut self, tid: u32) -> u32 {
        if let Some(&p) = self.tgid.get(&tid) {
            return p;
        }
        let mut owner = tid;
        let mut forked_from = None;
        for (&parent, pend) in &self.pending {
            let name = syscalls::name_of(pend.nr);
            if matches!(&*name, "clone" | "clone3" | "fork" | "vfork") {
                let thread = matches!(&*name, "clone" | "clone3")
                    && clone_flags(&pend.args).is_some_and(|f| f & CLONE_THREAD != 0);
                let parent_pid = self.tgid.get(&parent).copied().unwrap_or(parent);
                if thread {
                    owner = parent_pid;
                } else {
                    forked_from = Some(parent_pid);
                }
                break;
            }
        }
        self.tgid.insert(tid, owner);
        *self.threads_alive.entry(owner).or_insert(0) += 1;
        if let Some(parent) = forked_from {
            self.sink.builder.fork(parent, tid);
        }
        owner
    }

    fn line(&mut self, no: u64, text: &[u8]) -> Result<(), ImportError> {
        self.stats.lines += 1;
        let parsed = match line::parse(text) {
            Ok(l) => l,
            Err(why) => return self.bad(no, why, text),
        };
        let tid = parsed.pid.unwrap_or(0);
        if parsed.pid.is_some() {
            self.stats.pids = true;
        }
        if let Some(t) = parsed.time {
            self.stats.first_time.get_or_insert(t);
            self.stats.last_time = Some(t);
        }
        match parsed.body {
            Body::Note | Body::Signal => {}
            Body::Exit => {
                if let Some(p) = self.pending.remove(&tid) {
                    let args = p.args;
                    self.call(tid, p.nr, p.time, &args, Result_::None, None);
                }
                self.sink.builder.thread_exit(tid);
                if let Some(pid) = self.tgid.remove(&tid) {
                    let alive = self.threads_alive.entry(pid).or_insert(1);
                    *alive -= 1;
                    if *alive == 0 {
                        self.threads_alive.remove(&pid);
                        self.sink.builder.process_exit(pid);
                    }
                }
            }
            Body::Unfinished { name, args } => {
                let Some(nr) = self.nr_of(name) else { return self.bad(no, "unknown system call", text) };
                self.process_of(tid);
                self.pending.insert(tid, Pending { nr, time: parsed.time, args: args.to_vec() });
            }
            Body::Resumed { name, args, result, duration } => {
                let Some(p) = self.pending.remove(&tid) else {
                    // The first half was before the log started: the call is
                    // counted, its arguments unknown.
                    let Some(nr) = self.nr_of(name) else { return self.bad(no, "unknown system call", text) };
                    self.sink.builder.lost(LossCause::Unpaired, 1);
                    self.call(tid, nr, parsed.time, b"", result, duration);
                    return Ok(());
                };
                let mut joined = std::mem::take(&mut self.scratch);
                joined.clear();
                joined.extend_from_slice(&p.args);
                joined.push(b' ');
                joined.extend_from_slice(args);
                self.call(tid, p.nr, p.time, &joined, result, duration);
                self.scratch = joined;
            }
            Body::Call { name, args, result, duration } => {
                let Some(nr) = self.nr_of(name) else { return self.bad(no, "unknown system call", text) };
                self.call(tid, nr, parsed.time, args, result, duration);
            }
        }
        Ok(())
    }

    fn bad(&mut self, no: u64, why: &'static str, text: &[u8]) -> Result<(), ImportError> {
        if self.opts.lenient {
            self.stats.skipped_lines += 1;
            self.sink.builder.lost(LossCause::Unparsable, 1);
            return Ok(());
        }
        let shown: String = String::from_utf8_lossy(text).chars().take(80).collect();
        Err(ImportError::Syntax { file: self.file.clone(), line: no, why: why.to_string(), text: shown })
    }

    fn call(&mut self, tid: u32, nr: u32, time: Option<f64>, text: &[u8], result: Result_<'_>, duration: Option<f64>) {
        let pid = self.process_of(tid);
        let info = syscalls::by_nr(nr);
        let mut ev = SyscallEvent::new(pid, tid, nr);
        ev.unknown_args = 0x3f;
        ev.enter_ns = time.map_or(0, |t| (t * 1e9) as u64);
        ev.kernel_ns = duration.map(|d| (d * 1e9) as u64);
        if duration.is_some() {
            self.stats.durations = true;
        }
        ev.ret = match result {
            Result_::None => None,
            Result_::Value { value: -1, errno: Some(name) } => {
                let e = std::str::from_utf8(name).ok().and_then(errno::by_name).unwrap_or(libc::EINVAL);
                Some(-(e as i64))
            }
            Result_::Value { value, .. } => Some(value),
        };
        let name = info.map_or("", |s| s.name);
        let mut has_path = false;
        self.addr = None;
        if matches!(name, "clone" | "clone3") {
            // strace shows clone's arguments by name, in its own order.
            if let Some(f) = clone_flags(text) {
                ev.args[0] = f as u64;
                ev.unknown_args &= !1;
            }
        } else {
            let path_arg = info.and_then(|s| s.path_arg());
            let path = &mut self.path;
            // What tells what a descriptor is, in memory: see SyscallEvent::addr.
            let addr_arg = match name {
                "bind" | "connect" => Some((1, args::sockaddr as fn(&[u8]) -> Option<Vec<u8>>)),
                "pipe" | "pipe2" => Some((0, args::fd_pair as fn(&[u8]) -> Option<Vec<u8>>)),
                "socketpair" => Some((3, args::fd_pair as fn(&[u8]) -> Option<Vec<u8>>)),
                _ => None,
            };
            let addr = &mut self.addr;
            args::split(text, |i, a| {
                if i >= 6 {
                    return;
                }
                if let Some((_, parse)) = addr_arg.filter(|&(j, _)| j == i) {
                    *addr = parse(a);
                    return;
                }
                if Some(i) == path_arg && args::string(a, path) {
                    has_path = true;
                    return;
                }
                if let Some(v) = args::value(a) {
                    ev.args[i] = v as u64;
                    ev.unknown_args &= !(1 << i);
                }
            });
            if name == "execve" && self.stats.command.is_none() && ev.ret == Some(0) {
                self.stats.command = Some(exec_argv(text));
            }
        }
        if has_path {
            ev.path = Some(&self.path);
        }
        ev.addr = self.addr.as_deref();
        // A value strace printed for a pointer argument is the pointee's
        // address only for plain hex; everything else stays unknown.
        if let Some(info) = info {
            for (i, a) in info.args.iter().enumerate() {
                if a.kind == ArgKind::Path {
                    ev.unknown_args |= 1 << i;
                }
            }
        }
        self.stats.calls += 1;
        self.sink.builder.event(&ev);
        if let Some(ret) = ev.ret.filter(|&r| r > 0) {
            let thread = matches!(name, "clone" | "clone3") && ev.knows(0) && (ev.args[0] as i64) & CLONE_THREAD != 0;
            let child = ret as u32;
            if matches!(name, "clone" | "clone3" | "fork" | "vfork") && !self.tgid.contains_key(&child) {
                let owner = if thread { pid } else { child };
                self.tgid.insert(child, owner);
                *self.threads_alive.entry(owner).or_insert(0) += 1;
            }
        }
    }

    fn finish(mut self) -> Imported {
        // Calls still unfinished when the log ends never returned.
        let mut rest: Vec<(u32, Pending)> = self.pending.drain().collect();
        rest.sort_by_key(|(tid, _)| *tid);
        for (tid, p) in rest {
            self.call(tid, p.nr, p.time, &p.args, Result_::None, None);
        }
        self.stats
    }
}

/// The `flags=` value of a clone or clone3 call's arguments.
fn clone_flags(text: &[u8]) -> Option<i64> {
    let at = memchr::memmem::find(text, b"flags=")?;
    let rest = &text[at + 6..];
    let end = rest.iter().position(|&c| c == b',' || c == b'}' || c == b')' || c == b' ').unwrap_or(rest.len());
    args::value(&rest[..end])
}

/// argv of an `execve("path", ["a", "b"], …)` line.
fn exec_argv(text: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    args::split(text, |i, a| {
        if i == 1 && a.first() == Some(&b'[') && a.last() == Some(&b']') {
            let mut buf = Vec::new();
            args::split(&a[1..a.len() - 1], |_, s| {
                if args::string(s, &mut buf) {
                    out.push(String::from_utf8_lossy(&buf).into_owned());
                }
            });
        }
    });
    out
}

/// Imports a log from `reader` into `sink`; `file` names it in errors.
pub fn import_reader<R: Read>(
    mut reader: R,
    file: &str,
    opts: &ImportOptions,
    sink: &mut Sink,
    total_bytes: Option<u64>,
) -> Result<Imported, ImportError> {
    let mut imp = Importer::new(sink, opts.clone(), file.to_string());
    let mut buf = vec![0u8; 8 << 20];
    let mut filled = 0usize;
    let mut line_no = 0u64;
    let mut done_bytes = 0u64;
    let start = std::time::Instant::now();
    let mut next_progress = 1.0f64;
    loop {
        let n = loop {
            match reader.read(&mut buf[filled..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ImportError::Io(file.to_string(), e)),
            }
        };
        filled += n;
        let eof = n == 0;
        let mut at = 0;
        while let Some(nl) = memchr::memchr(b'\n', &buf[at..filled]) {
            line_no += 1;
            imp.line(line_no, &buf[at..at + nl])?;
            at += nl + 1;
        }
        if eof {
            if at < filled {
                // strace ends every line with a newline: a last line without
                // one was cut, wherever (`= 3` may be the start of
                // `= 32768`), and is never taken as it stands.
                line_no += 1;
                if !opts.lenient {
                    return Err(ImportError::Truncated { file: file.to_string(), line: line_no });
                }
                imp.sink.builder.lost(LossCause::Unparsable, 1);
                imp.stats.skipped_lines += 1;
            }
            break;
        }
        done_bytes += at as u64;
        buf.copy_within(at..filled, 0);
        filled -= at;
        if filled == buf.len() {
            // One line longer than the buffer: grow it.
            buf.resize(buf.len() * 2, 0);
        }
        if opts.progress {
            let t = start.elapsed().as_secs_f64();
            if t >= next_progress {
                next_progress = t + 1.0;
                let rate = imp.stats.lines as f64 / t / 1e6;
                match total_bytes {
                    Some(total) if total > 0 => eprint!(
                        "\rimport-strace: {:.0}% ({} of {} MB, {rate:.1} M lines/s)   ",
                        100.0 * done_bytes as f64 / total as f64,
                        done_bytes >> 20,
                        total >> 20
                    ),
                    _ => eprint!("\rimport-strace: {} M lines ({rate:.1} M lines/s)   ", imp.stats.lines / 1_000_000),
                }
            }
        }
    }
    if opts.progress && start.elapsed().as_secs_f64() >= 1.0 {
        eprintln!();
    }
    let stats = imp.finish();
    if stats.calls == 0 {
        return Err(ImportError::Empty(file.to_string()));
    }
    Ok(stats)
}

/// Imports the log at `path` into a profile.
pub fn import_file(
    path: &Path,
    opts: &ImportOptions,
    builder: BuilderOptions,
) -> Result<(Profile, Imported), ImportError> {
    let name = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| ImportError::Io(name.clone(), e))?;
    let total = f.metadata().ok().map(|m| m.len());
    let mut sink = Sink::new(builder);
    let stats = import_reader(f, &name, opts, &mut sink, total)?;
    let command = stats.command.clone().unwrap_or_else(|| vec![format!("(strace log {name})")]);
    let mut meta = crate::machine::meta(&command, "strace", "trace");
    // The log's machine is unknown; these are the importing machine's.
    meta.kernel = String::new();
    meta.cpu = String::new();
    meta.hostname = String::new();
    if let (Some(a), Some(b)) = (stats.first_time, stats.last_time) {
        meta.duration_ns = ((b - a).max(0.0) * 1e9) as u64;
        if a > 1e9 {
            meta.started_at = a;
        }
    }
    let profile = sink.finish(meta);
    Ok((profile, stats))
}
