//! Per-file I/O patterns (seed 001 §3, table 3): which files a program
//! opens, how it reads and writes them, in what sizes, and whether
//! sequentially.
//!
//! The tracker follows each process's descriptor table: an fd points to an
//! open file description (shared by `dup` and `fork`, which share its
//! offset), which points to a file.

use rustc_hash::FxHashMap;
use syscluster_model::profile::{IoPattern, SizeBucket};
use syscluster_model::{syscalls, SyscallEvent};

const O_APPEND: i64 = 0o2000;
const O_CLOEXEC: i64 = 0o2000000;
const F_DUPFD: i64 = 0;
const F_DUPFD_CLOEXEC: i64 = 1030;

/// What a call does to files, decided once per syscall number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    None,
    Open { flags_arg: Option<usize>, creat: bool },
    Close,
    Dup,
    Dup2,
    Fcntl,
    Read,
    Write,
    PRead,
    PWrite,
    Seek,
    SendFile,
    CopyRange,
    Socket,
    Exec,
}

fn op_of(nr: u32) -> Op {
    let Some(info) = syscalls::by_nr(nr) else { return Op::None };
    match info.name {
        "open" => Op::Open { flags_arg: Some(1), creat: false },
        "openat" => Op::Open { flags_arg: Some(2), creat: false },
        "openat2" => Op::Open { flags_arg: None, creat: false },
        "creat" => Op::Open { flags_arg: None, creat: true },
        "close" => Op::Close,
        "dup" => Op::Dup,
        "dup2" | "dup3" => Op::Dup2,
        "fcntl" => Op::Fcntl,
        "read" | "readv" | "recvfrom" | "recvmsg" => Op::Read,
        "write" | "writev" | "sendto" | "sendmsg" => Op::Write,
        "pread64" | "preadv" | "preadv2" => Op::PRead,
        "pwrite64" | "pwritev" | "pwritev2" => Op::PWrite,
        "lseek" => Op::Seek,
        "sendfile" => Op::SendFile,
        "copy_file_range" | "splice" => Op::CopyRange,
        "socket" | "accept" | "accept4" => Op::Socket,
        "execve" | "execveat" => Op::Exec,
        _ => Op::None,
    }
}

#[derive(Clone, Debug, Default)]
struct FileAcc {
    path: String,
    kind: &'static str,
    opens: u64,
    reads: u64,
    writes: u64,
    bytes_read: u64,
    bytes_written: u64,
    seeks: u64,
    sequential: u64,
    transfers: u64,
    hist: Vec<[u64; 2]>,
}

/// An open file description: shared by duplicated and inherited fds.
#[derive(Clone, Debug)]
struct Ofd {
    file: u32,
    offset: Option<u64>,
    /// Where the previous transfer ended, for the sequential share.
    last_end: Option<u64>,
    append: bool,
}

#[derive(Clone, Copy, Debug)]
struct FdEntry {
    ofd: u32,
    cloexec: bool,
}

/// Transfers of at least this size count as large (a page).
pub const LARGE_TRANSFER: u64 = 4096;

/// Transfers below this size count as small (seed 001's short writes were 8
/// and 180–360 bytes). A power of two, so that the size histogram tells
/// small from large exactly.
pub const SMALL_TRANSFER: u64 = 512;

pub struct IoTracker {
    ops: Vec<Op>,
    files: Vec<FileAcc>,
    by_path: FxHashMap<String, u32>,
    ofds: Vec<Ofd>,
    fds: FxHashMap<(u32, i64), FdEntry>,
}

impl Default for IoTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl IoTracker {
    pub fn new() -> IoTracker {
        let ops = (0..syscalls::NR_SYSCALLS as u32).map(op_of).collect();
        IoTracker { ops, files: Vec::new(), by_path: FxHashMap::default(), ofds: Vec::new(), fds: FxHashMap::default() }
    }

    fn file_id(&mut self, path: &str, kind: &'static str) -> u32 {
        if let Some(&id) = self.by_path.get(path) {
            return id;
        }
        let id = self.files.len() as u32;
        self.files.push(FileAcc { path: path.to_string(), kind, ..Default::default() });
        self.by_path.insert(path.to_string(), id);
        id
    }

    fn new_ofd(&mut self, file: u32, append: bool) -> u32 {
        self.ofds.push(Ofd { file, offset: Some(0), last_end: Some(0), append });
        (self.ofds.len() - 1) as u32
    }

    /// The description behind `fd` of `pid`; descriptors opened before the
    /// recording (stdin, stdout, …) get an entry named after the fd.
    fn ofd_of(&mut self, pid: u32, fd: i64) -> Option<u32> {
        if fd < 0 {
            return None;
        }
        if let Some(e) = self.fds.get(&(pid, fd)) {
            return Some(e.ofd);
        }
        let name = match fd {
            0 => "<stdin>".to_string(),
            1 => "<stdout>".to_string(),
            2 => "<stderr>".to_string(),
            n => format!("<fd {n}>"),
        };
        let file = self.file_id(&name, "unknown");
        let ofd = self.new_ofd(file, false);
        // Offsets of inherited descriptors are unknown.
        self.ofds[ofd as usize].offset = None;
        self.ofds[ofd as usize].last_end = None;
        self.fds.insert((pid, fd), FdEntry { ofd, cloexec: false });
        Some(ofd)
    }

    fn transfer(&mut self, ofd: u32, at: Option<u64>, bytes: u64, write: bool, moves_offset: bool) {
        let o = &mut self.ofds[ofd as usize];
        let start = if write && o.append { o.last_end } else { at.or(o.offset) };
        let sequential = match (start, o.last_end) {
            (Some(s), Some(e)) => s == e,
            _ => o.append && write,
        };
        let end = start.map(|s| s + bytes);
        o.last_end = if write && o.append { None } else { end };
        if moves_offset {
            o.offset = if write && o.append { None } else { end };
        }
        let f = &mut self.files[o.file as usize];
        f.transfers += 1;
        if sequential {
            f.sequential += 1;
        }
        let bucket = if bytes == 0 { 0 } else { 64 - bytes.leading_zeros() as usize };
        if f.hist.len() <= bucket {
            f.hist.resize(bucket + 1, [0, 0]);
        }
        f.hist[bucket][write as usize] += 1;
        if write {
            f.writes += 1;
            f.bytes_written += bytes;
        } else {
            f.reads += 1;
            f.bytes_read += bytes;
        }
    }

    /// Follows one completed call.
    pub fn event(&mut self, ev: &SyscallEvent<'_>) {
        let op = self.ops.get(ev.nr as usize).copied().unwrap_or(Op::None);
        if op == Op::None {
            return;
        }
        let Some(ret) = ev.ret else { return };
        if !matches!(op, Op::Open { .. } | Op::Socket | Op::Exec) && !ev.knows(0) {
            return;
        }
        let pid = ev.pid;
        match op {
            Op::None => {}
            Op::Open { flags_arg, creat } => {
                if ret < 0 {
                    return;
                }
                let flags = flags_arg.map_or(if creat { 0o1101 } else { 0 }, |i| ev.arg(i));
                let path = match ev.path {
                    Some(p) => String::from_utf8_lossy(p).into_owned(),
                    None => "<unknown path>".to_string(),
                };
                let kind = if path.starts_with("/dev/") { "device" } else { "file" };
                let file = self.file_id(&path, kind);
                self.files[file as usize].opens += 1;
                let ofd = self.new_ofd(file, flags & O_APPEND != 0);
                self.fds.insert((pid, ret), FdEntry { ofd, cloexec: flags & O_CLOEXEC != 0 });
            }
            Op::Socket => {
                if ret >= 0 {
                    let file = self.file_id("<socket>", "socket");
                    self.files[file as usize].opens += 1;
                    let ofd = self.new_ofd(file, false);
                    self.fds.insert((pid, ret), FdEntry { ofd, cloexec: false });
                }
            }
            Op::Close => {
                if ret == 0 {
                    self.fds.remove(&(pid, ev.arg(0)));
                }
            }
            Op::Dup | Op::Dup2 | Op::Fcntl => {
                if op == Op::Fcntl && !matches!(ev.arg(1), F_DUPFD | F_DUPFD_CLOEXEC) {
                    return;
                }
                if ret < 0 {
                    return;
                }
                if let Some(ofd) = self.ofd_of(pid, ev.arg(0)) {
                    let cloexec = op == Op::Fcntl && ev.arg(1) == F_DUPFD_CLOEXEC
                        || (op == Op::Dup2 && ev.arg(2) & O_CLOEXEC != 0 && syscalls::name_of(ev.nr) == "dup3");
                    self.fds.insert((pid, ret), FdEntry { ofd, cloexec });
                }
            }
            Op::Read | Op::Write => {
                if ret >= 0 {
                    if let Some(ofd) = self.ofd_of(pid, ev.arg(0)) {
                        self.transfer(ofd, None, ret as u64, op == Op::Write, true);
                    }
                }
            }
            Op::PRead | Op::PWrite => {
                if ret >= 0 {
                    if let Some(ofd) = self.ofd_of(pid, ev.arg(0)) {
                        let pos = ev.arg(3).max(0) as u64;
                        self.transfer(ofd, Some(pos), ret as u64, op == Op::PWrite, false);
                    }
                }
            }
            Op::Seek => {
                if ret >= 0 {
                    if let Some(ofd) = self.ofd_of(pid, ev.arg(0)) {
                        let o = &mut self.ofds[ofd as usize];
                        o.offset = Some(ret as u64);
                        self.files[o.file as usize].seeks += 1;
                    }
                }
            }
            Op::SendFile | Op::CopyRange => {
                if ret < 0 {
                    return;
                }
                // sendfile(out, in, …); copy_file_range and splice(in, _, out, …).
                let (fd_in, fd_out) = if op == Op::SendFile { (ev.arg(1), ev.arg(0)) } else { (ev.arg(0), ev.arg(2)) };
                let explicit_in = op == Op::SendFile && ev.args[2] != 0 || op == Op::CopyRange && ev.args[1] != 0;
                let explicit_out = op == Op::CopyRange && ev.args[3] != 0;
                if let Some(ofd) = self.ofd_of(pid, fd_in) {
                    self.transfer(ofd, None, ret as u64, false, !explicit_in);
                }
                if let Some(ofd) = self.ofd_of(pid, fd_out) {
                    self.transfer(ofd, None, ret as u64, true, !explicit_out);
                }
            }
            Op::Exec => {
                if ret == 0 {
                    self.fds.retain(|&(p, _), e| p != pid || !e.cloexec);
                }
            }
        }
    }

    /// A new process `child` forked from `parent`: it inherits the
    /// descriptors (sharing their offsets).
    pub fn fork(&mut self, parent: u32, child: u32) {
        let inherited: Vec<((u32, i64), FdEntry)> =
            self.fds.iter().filter(|((p, _), _)| *p == parent).map(|(&(_, fd), &e)| ((child, fd), e)).collect();
        for (k, e) in inherited {
            // The child may already have used a descriptor before the
            // parent's fork was seen (events arrive out of order across
            // threads); what it opened itself wins.
            self.fds.entry(k).or_insert(e);
        }
    }

    /// Process `pid` exited: its descriptors are gone.
    pub fn exit(&mut self, pid: u32) {
        self.fds.retain(|&(p, _), _| p != pid);
    }

    /// The per-file patterns, busiest first.
    pub fn patterns(&self) -> Vec<IoPattern> {
        let mut out: Vec<IoPattern> =
            self.files.iter().filter(|f| f.opens + f.reads + f.writes + f.seeks > 0).map(pattern).collect();
        out.sort_by(|a, b| (b.reads + b.writes).cmp(&(a.reads + a.writes)).then(a.path.cmp(&b.path)));
        out
    }
}

fn pattern(f: &FileAcc) -> IoPattern {
    let size_histogram = f
        .hist
        .iter()
        .enumerate()
        .filter(|(_, c)| c[0] + c[1] > 0)
        .map(|(k, c)| {
            let (min, max) =
                if k == 0 { (0, 0) } else { (1u64 << (k - 1), if k == 64 { u64::MAX } else { (1u64 << k) - 1 }) };
            SizeBucket { min, max, reads: c[0], writes: c[1] }
        })
        .collect();
    let sequential_share = if f.transfers == 0 { 0.0 } else { f.sequential as f64 / f.transfers as f64 };
    let kind = if f.path == "<socket>" { "socket" } else { f.kind };
    let mut p = IoPattern {
        path: f.path.clone(),
        kind: kind.to_string(),
        opens: f.opens,
        reads: f.reads,
        writes: f.writes,
        bytes_read: f.bytes_read,
        bytes_written: f.bytes_written,
        seeks: f.seeks,
        size_histogram,
        sequential_share,
        class: String::new(),
    };
    p.class = classify(&p).to_string();
    p
}

/// The pattern class of a file (docs/PROFILE_FORMAT.md lists the rules).
pub fn classify(p: &IoPattern) -> &'static str {
    let small = p.size_histogram.iter().filter(|b| b.max < SMALL_TRANSFER);
    let (small_reads, small_writes) = small.fold((0, 0), |(r, w), b| (r + b.reads, w + b.writes));
    let large: u64 = p.size_histogram.iter().filter(|b| b.min >= LARGE_TRANSFER).map(|b| b.reads + b.writes).sum();
    let ops = p.reads + p.writes;
    let bytes = p.bytes_read + p.bytes_written;
    if ops == 0 {
        return if p.seeks > 0 { "seeks only" } else { "no transfers" };
    }
    if p.writes >= 16 && small_writes * 10 >= p.writes * 8 {
        return "short writes";
    }
    if p.reads >= 16 && small_reads * 10 >= p.reads * 8 {
        return "short reads";
    }
    if p.opens >= 1 && bytes <= 64 * 1024 && ops <= 4 * p.opens {
        return "one-shot small file";
    }
    if ops >= 16 && p.sequential_share < 0.5 {
        return "random access";
    }
    if p.sequential_share >= 0.9 && large * 10 >= ops * 8 {
        return "bulk sequential";
    }
    if p.sequential_share >= 0.9 {
        return "sequential";
    }
    "mixed"
}
