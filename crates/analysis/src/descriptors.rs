//! What each descriptor *is*, for the `descriptor` node key: each
//! process's descriptor table followed through the calls that create, copy
//! and close descriptors, so that `read(7)` becomes `read(accepted tcp
//! 127.0.0.1:8080)` and a server's request loop is one loop whatever the
//! number of connections. The identities are documented in
//! docs/PROFILE_FORMAT.md ("The `descriptor` key").

use rustc_hash::FxHashMap;
use syscluster_model::{syscalls, SyscallEvent};

const O_CREAT: i64 = 0o100;
const O_EXCL: i64 = 0o200;
const O_CLOEXEC: i64 = 0o2000000;
/// `O_TMPFILE` includes `O_DIRECTORY`.
const O_TMPFILE: i64 = 0o20000000;
const F_DUPFD: i64 = 0;
const F_DUPFD_CLOEXEC: i64 = 1030;
const F_SETFD: i64 = 2;
const FD_CLOEXEC: i64 = 1;
const MFD_CLOEXEC: i64 = 1;
const SOCK_TYPE_MASK: i64 = 0xf;

/// What a call does to the descriptor table, decided once per number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    None,
    /// Opens the path argument; the flags argument, if any.
    Open(Option<usize>),
    Creat,
    Socket,
    SocketPair,
    Bind,
    Listen,
    Connect,
    Accept,
    Pipe,
    /// Creates a descriptor of a fixed kind; the argument holding its
    /// `*_CLOEXEC` flag (which is `O_CLOEXEC` unless `memfd`).
    Anon(&'static str, Option<usize>),
    Dup,
    Dup2,
    Dup3,
    Fcntl,
    Close,
    CloseRange,
    Exec,
}

fn op_of(nr: u32) -> Op {
    let Some(info) = syscalls::by_nr(nr) else { return Op::None };
    match info.name {
        "open" => Op::Open(Some(1)),
        "openat" => Op::Open(Some(2)),
        "openat2" | "open_by_handle_at" => Op::Open(None),
        "creat" => Op::Creat,
        "socket" => Op::Socket,
        "socketpair" => Op::SocketPair,
        "bind" => Op::Bind,
        "listen" => Op::Listen,
        "connect" => Op::Connect,
        "accept" | "accept4" => Op::Accept,
        "pipe" | "pipe2" => Op::Pipe,
        "epoll_create" => Op::Anon("epoll", None),
        "epoll_create1" => Op::Anon("epoll", Some(0)),
        "eventfd" => Op::Anon("eventfd", None),
        "eventfd2" => Op::Anon("eventfd", Some(1)),
        "timerfd_create" => Op::Anon("timerfd", Some(1)),
        "signalfd" => Op::Anon("signalfd", None),
        "signalfd4" => Op::Anon("signalfd", Some(3)),
        "inotify_init" => Op::Anon("inotify", None),
        "inotify_init1" => Op::Anon("inotify", Some(0)),
        "fanotify_init" => Op::Anon("fanotify", None),
        "memfd_create" => Op::Anon("memfd", Some(1)),
        "memfd_secret" => Op::Anon("memfd", None),
        "userfaultfd" => Op::Anon("userfaultfd", None),
        "pidfd_open" | "pidfd_getfd" => Op::Anon("pidfd", None),
        "io_uring_setup" => Op::Anon("io_uring", None),
        "perf_event_open" => Op::Anon("perf_event", None),
        "bpf" => Op::Anon("bpf", None),
        "fsopen" | "fspick" | "open_tree" | "fsmount" => Op::Anon("mount", None),
        "dup" => Op::Dup,
        "dup2" => Op::Dup2,
        "dup3" => Op::Dup3,
        "fcntl" => Op::Fcntl,
        "close" => Op::Close,
        "close_range" => Op::CloseRange,
        "execve" | "execveat" => Op::Exec,
        _ => Op::None,
    }
}

/// A socket's state, for its identity.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Socket {
    /// Created (and maybe bound): `socket tcp`.
    New { proto: String, local: Option<String> },
    /// Listening: `listen tcp 127.0.0.1:8080` (or `listen tcp #2` when
    /// the address was not captured).
    Listening { proto: String, at: String },
}

#[derive(Clone, Debug)]
struct Entry {
    /// Interned identity.
    id: u32,
    cloexec: bool,
    /// Sockets only: what `bind`, `listen` and `accept` need.
    socket: Option<Box<Socket>>,
}

/// Each process's descriptors and what they are.
pub struct Descriptors {
    ops: Vec<Op>,
    names: Vec<String>,
    ids: FxHashMap<String, u32>,
    fds: FxHashMap<(u32, i64), Entry>,
    /// Listening sockets without a captured address, numbered in order.
    anonymous_listeners: u32,
    /// Processes that made pipes (or socket pairs) whose descriptors the
    /// backend did not capture (they are written to memory): a descriptor
    /// of theirs seen first in a later call is taken for one of them.
    uncaptured: FxHashMap<u32, &'static str>,
}

impl Default for Descriptors {
    fn default() -> Self {
        Self::new()
    }
}

impl Descriptors {
    pub fn new() -> Descriptors {
        Descriptors {
            ops: (0..syscalls::NR_SYSCALLS as u32).map(op_of).collect(),
            names: Vec::new(),
            ids: FxHashMap::default(),
            fds: FxHashMap::default(),
            anonymous_listeners: 0,
            uncaptured: FxHashMap::default(),
        }
    }

    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }

    /// Whether identity `id` is a file opened by path (`file PATH`, `temp
    /// file in DIR`).
    pub fn is_file(&self, id: u32) -> bool {
        let n = self.name(id);
        n.starts_with("file ") || n.starts_with("temp file in ")
    }

    /// The identity with id `id`.
    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// What `fd` of process `pid` is now: one opened before the recording
    /// (or by a call the recorder missed) is `stdin`, `stdout`, `stderr`
    /// for 0–2 and `inherited fd N` otherwise. `None` for negative numbers.
    pub fn identity(&mut self, pid: u32, fd: i64) -> Option<u32> {
        if fd < 0 {
            return None;
        }
        if let Some(e) = self.fds.get(&(pid, fd)) {
            return Some(e.id);
        }
        if fd > 2 {
            if let Some(kind) = self.uncaptured.get(&pid).copied() {
                self.set(pid, fd, kind, false, None);
                return self.fds.get(&(pid, fd)).map(|e| e.id);
            }
        }
        Some(match fd {
            0 => self.intern("stdin"),
            1 => self.intern("stdout"),
            2 => self.intern("stderr"),
            n => self.intern(&format!("inherited fd {n}")),
        })
    }

    fn set(&mut self, pid: u32, fd: i64, name: &str, cloexec: bool, socket: Option<Socket>) {
        if fd < 0 {
            return;
        }
        let id = self.intern(name);
        self.fds.insert((pid, fd), Entry { id, cloexec, socket: socket.map(Box::new) });
    }

    /// An entry for `fd` as it is, made explicit (for dup and fcntl).
    fn entry(&mut self, pid: u32, fd: i64) -> Option<Entry> {
        let id = self.identity(pid, fd)?;
        Some(self.fds.get(&(pid, fd)).cloned().unwrap_or(Entry { id, cloexec: false, socket: None }))
    }

    fn copy(&mut self, pid: u32, from: i64, to: i64, cloexec: bool) {
        if to < 0 {
            return;
        }
        if let Some(mut e) = self.entry(pid, from) {
            e.cloexec = cloexec;
            self.fds.insert((pid, to), e);
        }
    }

    /// Follows one completed call (after its node was keyed: a call is
    /// keyed by what its descriptor was when it was made).
    pub fn event(&mut self, ev: &SyscallEvent<'_>) {
        let op = self.ops.get(ev.nr as usize).copied().unwrap_or(Op::None);
        if op == Op::None {
            return;
        }
        let Some(ret) = ev.ret else { return };
        if ret < 0 {
            return;
        }
        let pid = ev.pid;
        let arg = |i: usize| ev.knows(i).then(|| ev.arg(i));
        match op {
            Op::None => {}
            Op::Open(flags_arg) => {
                let flags = flags_arg.and_then(arg).unwrap_or(0);
                let name = file_identity(ev.path, flags);
                self.set(pid, ret, &name, flags & O_CLOEXEC != 0, None);
            }
            Op::Creat => {
                let name = file_identity(ev.path, O_CREAT);
                self.set(pid, ret, &name, false, None);
            }
            Op::Socket => {
                let (Some(domain), Some(ty)) = (arg(0), arg(1)) else {
                    self.set(pid, ret, "socket", false, None);
                    return;
                };
                let proto = protocol(domain, ty);
                let name = format!("socket {proto}");
                self.set(pid, ret, &name, ty & O_CLOEXEC != 0, Some(Socket::New { proto, local: None }));
            }
            Op::SocketPair => {
                // socketpair(domain, type, protocol, sv): the pair is in
                // memory, in `addr` where the backend captured it.
                let proto = match (arg(0), arg(1)) {
                    (Some(d), Some(t)) => protocol(d, t),
                    _ => "unix".into(),
                };
                let cloexec = arg(1).unwrap_or(0) & O_CLOEXEC != 0;
                match ev.addr.and_then(fd_pair) {
                    Some((a, b)) => {
                        let name = format!("socketpair {proto}");
                        self.set(pid, a, &name, cloexec, None);
                        self.set(pid, b, &name, cloexec, None);
                    }
                    None => {
                        self.uncaptured.entry(pid).or_insert("socketpair");
                    }
                }
            }
            Op::Bind => {
                let Some(fd) = arg(0) else { return };
                if let Some(e) = self.fds.get_mut(&(pid, fd)) {
                    if let Some(Socket::New { local, .. }) = e.socket.as_deref_mut() {
                        *local = ev.addr.and_then(format_sockaddr);
                    }
                }
            }
            Op::Listen => {
                let Some(fd) = arg(0) else { return };
                let Some(e) = self.fds.get(&(pid, fd)) else {
                    // Listening before the recording started: still one
                    // listener, by number.
                    let name = format!("listen inherited fd {fd}");
                    let at = format!("inherited fd {fd}");
                    self.set(pid, fd, &name, false, Some(Socket::Listening { proto: String::new(), at }));
                    return;
                };
                let Some(Socket::New { proto, local }) = e.socket.as_deref().cloned() else { return };
                let cloexec = e.cloexec;
                let at = match local {
                    Some(a) => a,
                    None => {
                        self.anonymous_listeners += 1;
                        format!("#{}", self.anonymous_listeners)
                    }
                };
                let name = format!("listen {proto} {at}");
                self.set(pid, fd, &name, cloexec, Some(Socket::Listening { proto, at }));
            }
            Op::Connect => {
                let Some(fd) = arg(0) else { return };
                if let Some(e) = self.fds.get(&(pid, fd)) {
                    if let Some(Socket::New { proto, .. }) = e.socket.as_deref().cloned() {
                        let cloexec = e.cloexec;
                        let name = match ev.addr.and_then(format_sockaddr) {
                            Some(peer) => format!("connected {proto} {peer}"),
                            None => format!("connected {proto}"),
                        };
                        self.set(pid, fd, &name, cloexec, None);
                    }
                }
            }
            Op::Accept => {
                let Some(fd) = arg(0) else { return };
                let flags = if syscalls::name_of(ev.nr) == "accept4" { arg(3).unwrap_or(0) } else { 0 };
                let name = match self.fds.get(&(pid, fd)).and_then(|e| e.socket.as_deref()) {
                    Some(Socket::Listening { proto, at }) if proto.is_empty() => format!("accepted {at}"),
                    Some(Socket::Listening { proto, at }) => format!("accepted {proto} {at}"),
                    _ => {
                        let listener = self.identity(pid, fd).map(|id| self.name(id).to_string()).unwrap_or_default();
                        format!("accepted from {listener}")
                    }
                };
                self.set(pid, ret, &name, flags & O_CLOEXEC != 0, None);
            }
            Op::Pipe => {
                // The two ends are written to memory (pipe(int[2])), in
                // `addr` where the backend captured them.
                let cloexec = syscalls::name_of(ev.nr) == "pipe2" && arg(1).unwrap_or(0) & O_CLOEXEC != 0;
                match ev.addr.and_then(fd_pair) {
                    Some((r, w)) => {
                        self.set(pid, r, "pipe read end", cloexec, None);
                        self.set(pid, w, "pipe write end", cloexec, None);
                    }
                    None => {
                        self.uncaptured.insert(pid, "pipe");
                    }
                }
            }
            Op::Anon(kind, flags_arg) => {
                let flags = flags_arg.and_then(arg).unwrap_or(0);
                let cloexec = if kind == "memfd" { flags & MFD_CLOEXEC != 0 } else { flags & O_CLOEXEC != 0 };
                // signalfd4(fd, …) on an existing signalfd returns it.
                self.set(pid, ret, kind, cloexec, None);
            }
            Op::Dup => {
                let Some(fd) = arg(0) else { return };
                self.copy(pid, fd, ret, false);
            }
            Op::Dup2 | Op::Dup3 => {
                let Some(fd) = arg(0) else { return };
                if fd == ret {
                    return; // dup2(fd, fd) changes nothing
                }
                let cloexec = op == Op::Dup3 && arg(2).unwrap_or(0) & O_CLOEXEC != 0;
                self.copy(pid, fd, ret, cloexec);
            }
            Op::Fcntl => {
                let (Some(fd), Some(cmd)) = (arg(0), arg(1)) else { return };
                match cmd {
                    F_DUPFD | F_DUPFD_CLOEXEC => self.copy(pid, fd, ret, cmd == F_DUPFD_CLOEXEC),
                    F_SETFD => {
                        let on = arg(2).unwrap_or(0) & FD_CLOEXEC != 0;
                        if let Some(mut e) = self.entry(pid, fd) {
                            e.cloexec = on;
                            self.fds.insert((pid, fd), e);
                        }
                    }
                    _ => {}
                }
            }
            Op::Close => {
                if let Some(fd) = arg(0) {
                    self.fds.remove(&(pid, fd));
                }
            }
            Op::CloseRange => {
                // close_range(first, last, flags): CLOSE_RANGE_CLOEXEC (4)
                // marks instead of closing.
                let (Some(first), Some(last)) = (arg(0), arg(1)) else { return };
                let (first, last) = (first as u32 as i64, last as u32 as i64);
                let mark = arg(2).unwrap_or(0) & 4 != 0;
                for (_, e) in self.fds.iter_mut().filter(|((p, fd), _)| *p == pid && (first..=last).contains(fd)) {
                    e.cloexec |= mark;
                }
                if !mark {
                    self.fds.retain(|&(p, fd), _| p != pid || !(first..=last).contains(&fd));
                }
            }
            Op::Exec => {
                self.fds.retain(|&(p, _), e| p != pid || !e.cloexec);
            }
        }
    }

    /// A new process `child` forked from `parent` inherits its table.
    pub fn fork(&mut self, parent: u32, child: u32) {
        let inherited: Vec<(i64, Entry)> =
            self.fds.iter().filter(|((p, _), _)| *p == parent).map(|(&(_, fd), e)| (fd, e.clone())).collect();
        for (fd, e) in inherited {
            // What the child already opened itself (events of different
            // processes may arrive out of order) wins.
            self.fds.entry((child, fd)).or_insert(e);
        }
        if let Some(&kind) = self.uncaptured.get(&parent) {
            self.uncaptured.entry(child).or_insert(kind);
        }
    }

    /// Process `pid` exited.
    pub fn exit(&mut self, pid: u32) {
        self.fds.retain(|&(p, _), _| p != pid);
        self.uncaptured.remove(&pid);
    }
}

/// The two descriptors of `int fds[2]`.
fn fd_pair(b: &[u8]) -> Option<(i64, i64)> {
    let a = i32::from_ne_bytes(b.get(0..4)?.try_into().ok()?);
    let c = i32::from_ne_bytes(b.get(4..8)?.try_into().ok()?);
    Some((a as i64, c as i64))
}

/// A file by path, or by role when the path is made for this run: a file
/// created exclusively (`O_CREAT|O_EXCL`, as `mkstemp` does) or with
/// `O_TMPFILE` is `temp file in DIR`.
fn file_identity(path: Option<&[u8]>, flags: i64) -> String {
    let Some(p) = path else { return "file".to_string() };
    let p = String::from_utf8_lossy(p);
    if flags & O_TMPFILE == O_TMPFILE {
        return format!("temp file in {p}");
    }
    if flags & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL {
        let dir = match p.rfind('/') {
            Some(0) => "/",
            Some(i) => &p[..i],
            None => ".",
        };
        return format!("temp file in {dir}");
    }
    format!("file {p}")
}

/// `tcp`, `udp6`, `unix-stream`, … for socket(domain, type).
fn protocol(domain: i64, ty: i64) -> String {
    let ty = ty & SOCK_TYPE_MASK;
    let kind = match ty {
        1 => "stream",
        2 => "dgram",
        3 => "raw",
        5 => "seqpacket",
        _ => "",
    };
    match (domain, ty) {
        (2, 1) => "tcp".into(),
        (2, 2) => "udp".into(),
        (10, 1) => "tcp6".into(),
        (10, 2) => "udp6".into(),
        (2, _) => format!("inet-{kind}"),
        (10, _) => format!("inet6-{kind}"),
        (1, _) => format!("unix-{kind}"),
        (16, _) => "netlink".into(),
        (17, _) => "packet".into(),
        _ => format!("af{domain}-type{ty}"),
    }
}

/// `127.0.0.1:8080`, `[::1]:8080`, `/run/x.sock`, `@abstract` from the
/// bytes of a `struct sockaddr`.
pub fn format_sockaddr(b: &[u8]) -> Option<String> {
    let family = u16::from_ne_bytes([*b.first()?, *b.get(1)?]);
    let port = |b: &[u8]| Some(u16::from_be_bytes([*b.get(2)?, *b.get(3)?]));
    match family {
        2 => {
            let a = b.get(4..8)?;
            Some(format!("{}.{}.{}.{}:{}", a[0], a[1], a[2], a[3], port(b)?))
        }
        10 => {
            let a: [u8; 16] = b.get(8..24)?.try_into().ok()?;
            Some(format!("[{}]:{}", std::net::Ipv6Addr::from(a), port(b)?))
        }
        1 => {
            let p = b.get(2..).unwrap_or(&[]);
            if p.is_empty() {
                return Some("unnamed".into());
            }
            if p[0] == 0 {
                let end = p.iter().skip(1).position(|&c| c == 0).map_or(p.len(), |i| i + 1);
                return Some(format!("@{}", String::from_utf8_lossy(&p[1..end])));
            }
            let end = p.iter().position(|&c| c == 0).unwrap_or(p.len());
            Some(String::from_utf8_lossy(&p[..end]).into_owned())
        }
        _ => None,
    }
}

/// Encodes an IPv4 or IPv6 address and port, or a unix path, as the bytes
/// of a `struct sockaddr` (for backends that see the address as text).
pub fn encode_sockaddr(family: u16, addr: &str, port: u16) -> Option<Vec<u8>> {
    let mut b = family.to_ne_bytes().to_vec();
    match family {
        2 => {
            let a: std::net::Ipv4Addr = addr.parse().ok()?;
            b.extend(port.to_be_bytes());
            b.extend(a.octets());
            b.extend([0; 8]);
        }
        10 => {
            let a: std::net::Ipv6Addr = addr.parse().ok()?;
            b.extend(port.to_be_bytes());
            b.extend([0; 4]);
            b.extend(a.octets());
            b.extend([0; 4]);
        }
        1 => {
            if let Some(name) = addr.strip_prefix('@') {
                b.push(0);
                b.extend(name.as_bytes());
            } else {
                b.extend(addr.as_bytes());
                b.push(0);
            }
        }
        _ => return None,
    }
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nr(name: &str) -> u32 {
        syscalls::by_name(name).unwrap().nr
    }

    /// Feeds call `name(args…) = ret` of process `pid`.
    fn call(
        d: &mut Descriptors,
        pid: u32,
        name: &str,
        args: &[i64],
        ret: i64,
        path: Option<&[u8]>,
        addr: Option<&[u8]>,
    ) {
        let mut ev = SyscallEvent::new(pid, pid, nr(name));
        for (i, &a) in args.iter().enumerate() {
            ev.args[i] = a as u64;
        }
        ev.ret = Some(ret);
        ev.path = path;
        ev.addr = addr;
        d.event(&ev);
    }

    fn what(d: &mut Descriptors, pid: u32, fd: i64) -> String {
        let id = d.identity(pid, fd).unwrap();
        d.name(id).to_string()
    }

    const AF_INET: i64 = 2;
    const SOCK_STREAM: i64 = 1;

    #[test]
    fn accepted_connections_are_keyed_by_their_listener() {
        let mut d = Descriptors::new();
        let addr = encode_sockaddr(2, "127.0.0.1", 8080).unwrap();
        call(&mut d, 10, "socket", &[AF_INET, SOCK_STREAM | O_CLOEXEC, 0], 3, None, None);
        assert_eq!(what(&mut d, 10, 3), "socket tcp");
        call(&mut d, 10, "bind", &[3, 0, 16], 0, None, Some(&addr));
        call(&mut d, 10, "listen", &[3, 128], 0, None, None);
        assert_eq!(what(&mut d, 10, 3), "listen tcp 127.0.0.1:8080");
        // Connection after connection on fds 4, 5, 4 again: one identity.
        for fd in [4, 5, 4] {
            call(&mut d, 10, "accept4", &[3, 0, 0, O_CLOEXEC], fd, None, None);
            assert_eq!(what(&mut d, 10, fd), "accepted tcp 127.0.0.1:8080");
            call(&mut d, 10, "close", &[fd], 0, None, None);
        }
        // A listener whose address was not seen is numbered.
        call(&mut d, 10, "socket", &[10, SOCK_STREAM, 0], 6, None, None);
        call(&mut d, 10, "listen", &[6, 128], 0, None, None);
        assert_eq!(what(&mut d, 10, 6), "listen tcp6 #1");
        call(&mut d, 10, "accept", &[6, 0, 0], 7, None, None);
        assert_eq!(what(&mut d, 10, 7), "accepted tcp6 #1");
        // A client socket is named by its peer.
        call(&mut d, 10, "socket", &[AF_INET, SOCK_STREAM, 0], 8, None, None);
        call(&mut d, 10, "connect", &[8, 0, 16], 0, None, Some(&addr));
        assert_eq!(what(&mut d, 10, 8), "connected tcp 127.0.0.1:8080");
    }

    #[test]
    fn dup_close_and_reuse_of_a_number() {
        let mut d = Descriptors::new();
        assert_eq!(what(&mut d, 1, 0), "stdin");
        assert_eq!(what(&mut d, 1, 1), "stdout");
        assert_eq!(what(&mut d, 1, 9), "inherited fd 9");
        call(&mut d, 1, "openat", &[-100, 0, 0], 3, Some(b"/etc/hosts"), None);
        assert_eq!(what(&mut d, 1, 3), "file /etc/hosts");
        call(&mut d, 1, "dup", &[3], 4, None, None);
        call(&mut d, 1, "dup2", &[3, 1], 1, None, None);
        call(&mut d, 1, "fcntl", &[3, F_DUPFD, 10], 10, None, None);
        for fd in [4, 1, 10] {
            assert_eq!(what(&mut d, 1, fd), "file /etc/hosts", "fd {fd}");
        }
        // fd 3 closed, then the number is reused by a different kind of
        // descriptor; its duplicates keep what they are.
        call(&mut d, 1, "close", &[3], 0, None, None);
        call(&mut d, 1, "epoll_create1", &[O_CLOEXEC], 3, None, None);
        assert_eq!(what(&mut d, 1, 3), "epoll");
        assert_eq!(what(&mut d, 1, 4), "file /etc/hosts");
        call(&mut d, 1, "close", &[3], 0, None, None);
        call(&mut d, 1, "eventfd2", &[0, 0], 3, None, None);
        assert_eq!(what(&mut d, 1, 3), "eventfd");
        // A failed call changes nothing.
        call(&mut d, 1, "close", &[3], -9, None, None);
        assert_eq!(what(&mut d, 1, 3), "eventfd");
        // Pipe ends, captured or not.
        let pair = [5i32.to_ne_bytes(), 6i32.to_ne_bytes()].concat();
        call(&mut d, 1, "pipe2", &[0, 0], 0, None, Some(&pair));
        assert_eq!(what(&mut d, 1, 5), "pipe read end");
        assert_eq!(what(&mut d, 1, 6), "pipe write end");
        call(&mut d, 2, "pipe", &[0], 0, None, None);
        assert_eq!(what(&mut d, 2, 11), "pipe");
        // Temporary files by role, not by their per-run name.
        call(&mut d, 1, "openat", &[-100, 0, O_CREAT | O_EXCL | 2], 7, Some(b"/tmp/fooXa81Kq"), None);
        assert_eq!(what(&mut d, 1, 7), "temp file in /tmp");
        call(&mut d, 1, "openat", &[-100, 0, 0o20200002], 8, Some(b"/var/tmp"), None);
        assert_eq!(what(&mut d, 1, 8), "temp file in /var/tmp");
    }

    #[test]
    fn cloexec_descriptors_close_at_exec_and_forks_inherit() {
        let mut d = Descriptors::new();
        call(&mut d, 1, "openat", &[-100, 0, O_CLOEXEC], 3, Some(b"/a"), None);
        call(&mut d, 1, "openat", &[-100, 0, 0], 4, Some(b"/b"), None);
        call(&mut d, 1, "dup3", &[4, 5, O_CLOEXEC], 5, None, None);
        call(&mut d, 1, "fcntl", &[4, F_DUPFD_CLOEXEC, 0], 6, None, None);
        call(&mut d, 1, "openat", &[-100, 0, 0], 7, Some(b"/c"), None);
        call(&mut d, 1, "fcntl", &[7, F_SETFD, FD_CLOEXEC], 0, None, None);
        call(&mut d, 1, "socket", &[AF_INET, SOCK_STREAM | O_CLOEXEC, 0], 8, None, None);
        d.fork(1, 2);
        call(&mut d, 2, "execve", &[0, 0, 0], 0, None, None);
        // The child kept what was not close-on-exec; the parent kept all.
        assert_eq!(what(&mut d, 2, 4), "file /b");
        for fd in [3, 5, 6, 7, 8] {
            assert_eq!(what(&mut d, 2, fd), format!("inherited fd {fd}"), "fd {fd} survived exec");
        }
        assert_eq!(what(&mut d, 1, 3), "file /a");
        assert_eq!(what(&mut d, 1, 8), "socket tcp");
        // A failed exec closes nothing.
        call(&mut d, 1, "execve", &[0, 0, 0], -2, None, None);
        assert_eq!(what(&mut d, 1, 3), "file /a");
        d.exit(1);
        assert_eq!(what(&mut d, 1, 4), "inherited fd 4");
    }

    #[test]
    fn socket_addresses_round_trip() {
        for (fam, a, p, want) in [
            (2, "127.0.0.1", 80, "127.0.0.1:80"),
            (10, "::1", 8080, "[::1]:8080"),
            (1, "/run/x.sock", 0, "/run/x.sock"),
            (1, "@abstract", 0, "@abstract"),
        ] {
            assert_eq!(format_sockaddr(&encode_sockaddr(fam, a, p).unwrap()).as_deref(), Some(want));
        }
        assert_eq!(format_sockaddr(&[2]), None, "cut short");
    }
}
