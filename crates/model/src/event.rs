//! What a recorder produces: one record per system call, and the process
//! events that give calls their context.

use crate::syscalls::{self, ArgKind};

/// An address in a mapped file: the module (an index into the recorder's
/// module table) and the offset of the address in that file.
///
/// As a call's location: `offset` is the first frame of the user's code,
/// and `site`, when it is another frame, the return address of the call
/// into libc in the same module (the frame a preload library's wrapper
/// sees), which the location was found past: a language's runtime (Rust's
/// `std` calling `write`, Go's runtime making the `syscall` itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CodeAddr {
    pub module: u32,
    pub offset: u64,
    pub site: Option<u64>,
}

impl CodeAddr {
    /// A location that is its own site (the call into libc is made there).
    pub fn at(module: u32, offset: u64) -> CodeAddr {
        CodeAddr { module, offset, site: None }
    }
}

/// One system call as a recorder saw it.
#[derive(Clone, Debug)]
pub struct SyscallEvent<'a> {
    /// Thread-group id (the process).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    pub nr: u32,
    /// Raw argument registers, as the kernel received them.
    pub args: [u64; 6],
    /// The return value; `None` when the call never returned (exit_group,
    /// a thread killed in the call, the end of a truncated log).
    pub ret: Option<i64>,
    /// Entry time in nanoseconds (any monotonic origin).
    pub enter_ns: u64,
    /// Time spent in the kernel, where the backend measures it.
    pub kernel_ns: Option<u64>,
    /// The part of `kernel_ns` spent off the CPU (blocked or preempted),
    /// where the backend measures it.
    pub blocked_ns: Option<u64>,
    /// The code location that issued the call: the first frame outside libc
    /// and the dynamic loader.
    pub callsite: Option<CodeAddr>,
    /// The path argument of path-taking calls, as captured.
    pub path: Option<&'a [u8]>,
    /// Memory a pointer argument names that tells what a descriptor is,
    /// where the backend captures it: the `struct sockaddr` bytes of `bind`
    /// and `connect`, the `int[2]` that `pipe`, `pipe2` and `socketpair`
    /// filled in.
    pub addr: Option<&'a [u8]>,
    /// Bit i set: argument i is not known (a strace log shows a buffer's
    /// contents or a symbol it could not decode instead of the value).
    pub unknown_args: u8,
}

impl SyscallEvent<'_> {
    /// A blank event for call `nr` of thread `tid` in process `pid`.
    pub fn new(pid: u32, tid: u32, nr: u32) -> Self {
        SyscallEvent {
            pid,
            tid,
            nr,
            args: [0; 6],
            ret: None,
            enter_ns: 0,
            kernel_ns: None,
            blocked_ns: None,
            callsite: None,
            path: None,
            addr: None,
            unknown_args: 0,
        }
    }

    /// Argument `i` as the C type of the parameter gives it meaning: `int`
    /// parameters are truncated to 32 bits and sign-extended, so that
    /// `AT_FDCWD` is -100 whatever the upper register bits held.
    pub fn arg(&self, i: usize) -> i64 {
        normalize_arg(self.nr, i, self.args[i])
    }

    /// Whether argument `i` is known.
    #[inline]
    pub fn knows(&self, i: usize) -> bool {
        self.unknown_args & (1 << i) == 0
    }

    /// The fd the call operates on, for calls that take one.
    pub fn fd(&self) -> Option<i64> {
        syscalls::fd_arg(self.nr).filter(|&i| self.knows(i)).map(|i| self.arg(i))
    }

    /// The fd of the call's node key (see [`syscalls::key_fd_arg`]).
    pub fn key_fd(&self) -> Option<i64> {
        let (i, dirfd) = syscalls::key_fd_arg(self.nr)?;
        if !self.knows(i) {
            return None;
        }
        let v = self.arg(i);
        (!dirfd || v != syscalls::AT_FDCWD).then_some(v)
    }
}

/// How a raw register becomes an argument value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Width {
    Raw,
    Signed32,
    Unsigned32,
    Unsigned16,
}

fn width_of(info: &syscalls::SyscallInfo, i: usize) -> Width {
    let Some(a) = info.args.get(i) else { return Width::Raw };
    if a.kind == ArgKind::Ptr || a.kind == ArgKind::Path {
        return Width::Raw;
    }
    // The kernel takes every fd as an int, whatever the prototype says
    // (mmap's is unsigned long): mmap(-1) whether the register or strace says so.
    if a.kind == ArgKind::Fd || a.kind == ArgKind::DirFd {
        return Width::Signed32;
    }
    match a.ctype {
        "int" | "pid_t" | "clockid_t" | "timer_t" | "mqd_t" | "key_serial_t" | "rwf_t" | "const int" => Width::Signed32,
        "unsigned int" | "uid_t" | "gid_t" | "u32" | "__u32" | "qid_t" | "old_uid_t" | "old_gid_t" => Width::Unsigned32,
        "umode_t" | "unsigned short" => Width::Unsigned16,
        _ => Width::Raw,
    }
}

/// Interprets raw register `raw` as argument `i` of call `nr` (see
/// [`SyscallEvent::arg`]).
#[inline]
pub fn normalize_arg(nr: u32, i: usize, raw: u64) -> i64 {
    use std::sync::OnceLock;
    static WIDTHS: OnceLock<Vec<[Width; 6]>> = OnceLock::new();
    let widths = WIDTHS.get_or_init(|| {
        (0..syscalls::NR_SYSCALLS as u32)
            .map(|nr| match syscalls::by_nr(nr) {
                Some(info) => std::array::from_fn(|i| width_of(info, i)),
                None => [Width::Raw; 6],
            })
            .collect()
    });
    match widths.get(nr as usize).map_or(Width::Raw, |w| w[i.min(5)]) {
        Width::Raw => raw as i64,
        Width::Signed32 => raw as u32 as i32 as i64,
        Width::Unsigned32 => raw as u32 as i64,
        Width::Unsigned16 => raw as u16 as i64,
    }
}

/// Why events were lost or dropped. Every cause is counted and reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LossCause {
    /// The BPF ring buffer was full when a call completed.
    RingBufferFull,
    /// A BPF map that holds per-thread state or graph counts was full.
    MapFull,
    /// A call's entry was seen without its exit or the other way round.
    Unpaired,
    /// A line of a strace log could not be parsed.
    Unparsable,
    /// The unwinder could not find the code location of a call.
    CallsiteUnknown,
    /// A thread was created or exited while the recorder could not follow it.
    Untracked,
}

impl LossCause {
    pub const ALL: [LossCause; 6] = [
        LossCause::RingBufferFull,
        LossCause::MapFull,
        LossCause::Unpaired,
        LossCause::Unparsable,
        LossCause::CallsiteUnknown,
        LossCause::Untracked,
    ];

    /// The name used in the profile's `lost_events.by_cause`.
    pub fn as_str(self) -> &'static str {
        match self {
            LossCause::RingBufferFull => "ring_buffer_full",
            LossCause::MapFull => "map_full",
            LossCause::Unpaired => "unpaired",
            LossCause::Unparsable => "unparsable_line",
            LossCause::CallsiteUnknown => "callsite_unknown",
            LossCause::Untracked => "untracked_thread",
        }
    }

    /// Whether the cause loses whole calls (and so graph edges), rather than
    /// a detail of a call that was counted.
    pub fn loses_calls(self) -> bool {
        !matches!(self, LossCause::CallsiteUnknown | LossCause::Unpaired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_arguments_are_sign_extended() {
        let openat = syscalls::by_name("openat").unwrap().nr;
        // AT_FDCWD passed in a 32-bit register with garbage above it.
        assert_eq!(normalize_arg(openat, 0, 0xdead_beef_ffff_ff9c), -100);
        let write = syscalls::by_name("write").unwrap().nr;
        assert_eq!(normalize_arg(write, 0, 0x1_0000_0003), 3, "unsigned int fd");
        assert_eq!(normalize_arg(write, 2, 1 << 40), 1 << 40, "size_t count");
        let mmap = syscalls::by_name("mmap").unwrap().nr;
        // An anonymous mapping's fd: -1 in a 32-bit register, or in all 64.
        assert_eq!(normalize_arg(mmap, 4, 0xffff_ffff), -1);
        assert_eq!(normalize_arg(mmap, 4, u64::MAX), -1);
        let mut e = SyscallEvent::new(1, 1, write);
        e.args[0] = 7;
        assert_eq!(e.fd(), Some(7));
    }
}
