//! The x86_64 system call table: numbers, names, and what each argument is.
//!
//! Generated at build time from `data/syscalls_x86_64.tsv`.

/// What an argument value means to the recorder and the analyses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// A file descriptor: part of the default node key.
    Fd,
    /// A directory fd of an `*at()` call (`AT_FDCWD` is -100).
    DirFd,
    /// A user pointer to a path name, captured as a string.
    Path,
    /// A byte or element count.
    Size,
    /// A file offset.
    Offset,
    /// Flags, modes, commands: small enumerations.
    Flags,
    /// Any other user pointer.
    Ptr,
    /// Any other integer.
    Int,
}

/// One argument of a system call.
#[derive(Clone, Copy, Debug)]
pub struct ArgInfo {
    pub name: &'static str,
    pub kind: ArgKind,
    pub ctype: &'static str,
}

/// One system call of the table.
#[derive(Clone, Copy, Debug)]
pub struct SyscallInfo {
    pub nr: u32,
    pub name: &'static str,
    /// False where the kernel has no tracepoint format for the call (its
    /// arguments are then unknown and `args` is empty).
    pub args_known: bool,
    pub args: &'static [ArgInfo],
}

impl SyscallInfo {
    /// Index of the first file-descriptor argument, if the call takes one.
    pub fn fd_arg(&self) -> Option<usize> {
        self.args.iter().position(|a| a.kind == ArgKind::Fd)
    }
    /// Index of the first path argument, if the call takes one.
    pub fn path_arg(&self) -> Option<usize> {
        self.args.iter().position(|a| a.kind == ArgKind::Path)
    }
    /// Index of the argument called `name`.
    pub fn arg_index(&self, name: &str) -> Option<usize> {
        self.args.iter().position(|a| a.name == name)
    }
}

include!(concat!(env!("OUT_DIR"), "/syscall_table.rs"));

/// The call with number `nr`, if there is one.
pub fn by_nr(nr: u32) -> Option<&'static SyscallInfo> {
    TABLE.get(nr as usize).and_then(|s| s.as_ref())
}

/// The call named `name` (as strace and the kernel spell it: "write",
/// "pread64", "newfstatat").
pub fn by_name(name: &str) -> Option<&'static SyscallInfo> {
    use std::collections::HashMap;
    use std::sync::OnceLock;
    static INDEX: OnceLock<HashMap<&'static str, u32>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut m: HashMap<&'static str, u32> = TABLE.iter().flatten().map(|s| (s.name, s.nr)).collect();
        // Names that glibc, strace or older kernels use for the same numbers.
        for (alias, real) in [
            ("fstatat", "newfstatat"),
            ("sendfile64", "sendfile"),
            ("fadvise64_64", "fadvise64"),
            ("umount", "umount2"),
        ] {
            if let Some(&nr) = m.get(real) {
                m.entry(alias).or_insert(nr);
            }
        }
        m
    });
    index.get(name).and_then(|&nr| by_nr(nr))
}

/// The name of call `nr`, or `syscall_<nr>` for numbers the table lacks.
pub fn name_of(nr: u32) -> std::borrow::Cow<'static, str> {
    match by_nr(nr) {
        Some(s) => std::borrow::Cow::Borrowed(s.name),
        None => std::borrow::Cow::Owned(format!("syscall_{nr}")),
    }
}

/// Index of the fd argument of call `nr`, if any (for the node key).
pub fn fd_arg(nr: u32) -> Option<usize> {
    by_nr(nr).and_then(|s| s.fd_arg())
}

/// The argument that keys a call's node in the syscall graph, if any: the
/// first fd argument, else the first directory fd (which counts only when
/// it is not `AT_FDCWD`, as in `newfstatat(3, "", …, AT_EMPTY_PATH)`, glibc's
/// `fstat`). The bool says it is a directory fd.
pub fn key_fd_arg(nr: u32) -> Option<(usize, bool)> {
    let s = by_nr(nr)?;
    if let Some(i) = s.fd_arg() {
        return Some((i, false));
    }
    s.args.iter().position(|a| a.kind == ArgKind::DirFd).map(|i| (i, true))
}

/// The pointer argument whose memory tells what a descriptor is
/// (`SyscallEvent::addr`), and whether it is read when the call returns
/// (the `int[2]` of `pipe`, `pipe2`, `socketpair`) rather than when it is
/// made (the `struct sockaddr` of `bind` and `connect`, whose length is the
/// next argument).
pub fn descriptor_memory_arg(nr: u32) -> Option<(usize, bool)> {
    match by_nr(nr)?.name {
        "bind" | "connect" => Some((1, false)),
        "pipe" | "pipe2" => Some((0, true)),
        "socketpair" => Some((3, true)),
        _ => None,
    }
}

/// `AT_FDCWD`: "relative to the working directory", not a descriptor.
pub const AT_FDCWD: i64 = -100;

/// Calls that never return to the caller when they succeed, so the recorder
/// sees no exit for them.
pub fn never_returns(nr: u32) -> bool {
    matches!(by_nr(nr).map(|s| s.name), Some("exit" | "exit_group"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_numbers() {
        assert_eq!(by_nr(0).unwrap().name, "read");
        assert_eq!(by_nr(1).unwrap().name, "write");
        assert_eq!(by_name("openat").unwrap().nr, 257);
        assert_eq!(by_name("copy_file_range").unwrap().nr, 326);
        assert_eq!(by_name("cachestat").unwrap().nr, 451);
        assert_eq!(by_name("fstatat").unwrap().nr, 262);
        assert!(by_name("no_such_call").is_none());
    }

    #[test]
    fn argument_kinds() {
        let w = by_name("write").unwrap();
        assert_eq!(w.fd_arg(), Some(0));
        assert_eq!(w.args[2].kind, ArgKind::Size);
        let o = by_name("openat").unwrap();
        assert_eq!(o.fd_arg(), None, "the dirfd of openat is not a node key");
        assert_eq!(o.path_arg(), Some(1));
        assert_eq!(by_name("sendfile").unwrap().fd_arg(), Some(0));
        assert_eq!(fd_arg(by_name("getpid").unwrap().nr), None);
        assert_eq!(name_of(9999), "syscall_9999");
    }

    #[test]
    fn generated_lists_name_calls_of_the_table() {
        use crate::syscall_lists as l;
        let all = l::MULTICALL_REFUSED
            .iter()
            .chain(l::MULTICALL_REFUSED_ON_DEVICE)
            .chain(l::OPENS_FD)
            .chain(l::CLOSES_FD)
            .chain(l::KEEPS_FDS)
            .chain(l::WAITS)
            .chain(l::MAY_WAIT)
            .chain(l::HARMLESS)
            .chain(l::NO_OUTPUT)
            .copied()
            .chain(l::MULTICALL_REFUSED_IF.iter().map(|r| r.0))
            .chain(l::URING_OPS.iter().map(|r| r.0))
            .chain(l::LIBC_FUNCTIONS.iter().map(|r| r.1));
        for name in all {
            assert!(by_name(name).is_some(), "{name} is not in the syscall table");
        }
        for name in l::MULTICALL_REFUSED.iter().chain(l::MULTICALL_REFUSED_ON_DEVICE) {
            assert!(l::multicall_refusal(name).is_some(), "{name} is refused without a reason");
        }
        // The drift issue 11 found: the library's uring backend expresses 16
        // calls, none of them a socket call; ptrace and seccomp are refused.
        assert_eq!(l::URING_OPS.len(), 16);
        assert!(!l::URING_OPS.iter().any(|(n, _)| matches!(*n, "sendto" | "recvfrom" | "accept")));
        assert!(l::MULTICALL_REFUSED.contains(&"ptrace") && l::MULTICALL_REFUSED.contains(&"seccomp"));
        let f = |name: &str| l::LIBC_FUNCTIONS.iter().find(|r| r.0 == name).copied();
        assert_eq!(f("__read_chk"), Some(("__read_chk", "read", true, Some(3))));
        assert_eq!(f("open").map(|r| r.1), Some("openat"), "glibc opens through openat");
        assert_eq!(f("__open_2"), Some(("__open_2", "openat", true, None)));
    }
}
