//! The ptrace requests the tracer makes, and what a `waitpid` status means.
//!
//! Thin wrappers: each is one system call, returns `io::Result`, and never
//! allocates (the tracer makes several per traced call).

use std::io;

/// Options set at attach: follow every kind of child, see seccomp stops and
/// tell syscall stops from signals, kill everything if the recorder dies.
pub const OPTIONS: libc::c_int = libc::PTRACE_O_TRACESYSGOOD
    | libc::PTRACE_O_TRACEFORK
    | libc::PTRACE_O_TRACEVFORK
    | libc::PTRACE_O_TRACECLONE
    | libc::PTRACE_O_TRACEEXEC
    | libc::PTRACE_O_TRACESECCOMP
    | libc::PTRACE_O_EXITKILL;

/// `status >> 16` of a stop caused by PTRACE_INTERRUPT, an auto-attach or a
/// group-stop of a seized tracee (not exported by the libc crate).
const PTRACE_EVENT_STOP: i32 = 128;

/// What one `waitpid` report says about one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// The thread ended: `_exit` code or killing signal (the raw status).
    Gone(i32),
    /// Entry of a call, stopped by the seccomp filter's `SECCOMP_RET_TRACE`.
    Seccomp,
    /// Entry or exit of a call (PTRACE_SYSCALL): PTRACE_GET_SYSCALL_INFO
    /// tells which.
    Syscall,
    /// A new process or thread was created (fork, vfork, clone).
    NewChild,
    Exec,
    /// A seized thread's first stop, or a stop after PTRACE_INTERRUPT.
    Attached,
    /// The thread stopped with its group (SIGSTOP, SIGTSTP, …).
    GroupStop,
    /// A signal is about to be delivered; resuming with it delivers it.
    Signal(i32),
}

impl Report {
    pub fn decode(status: i32) -> Report {
        if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            return Report::Gone(status);
        }
        let sig = libc::WSTOPSIG(status);
        if sig == libc::SIGTRAP | 0x80 {
            return Report::Syscall;
        }
        match status >> 16 {
            0 => Report::Signal(sig),
            libc::PTRACE_EVENT_SECCOMP => Report::Seccomp,
            libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK | libc::PTRACE_EVENT_CLONE => Report::NewChild,
            libc::PTRACE_EVENT_EXEC => Report::Exec,
            PTRACE_EVENT_STOP if sig == libc::SIGTRAP => Report::Attached,
            PTRACE_EVENT_STOP => Report::GroupStop,
            // Events not requested (vfork-done, exit): nothing to do but resume.
            _ => Report::Attached,
        }
    }
}

fn check(r: libc::c_long) -> io::Result<libc::c_long> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Attaches to `pid` without stopping it, with [`OPTIONS`].
pub fn seize(pid: i32) -> io::Result<()> {
    check(unsafe { libc::ptrace(libc::PTRACE_SEIZE, pid, 0usize, OPTIONS as usize) }).map(drop)
}

/// How a stopped thread goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// Until the next seccomp stop, event or signal.
    Cont,
    /// As `Cont`, and also stop at the next syscall entry or exit.
    Syscall,
    /// Stay in group-stop, but report the next signal or SIGCONT.
    Listen,
}

/// Resumes stopped thread `tid`, delivering signal `sig` (0: none).
pub fn resume(tid: i32, how: Resume, sig: i32) -> io::Result<()> {
    let req = match how {
        Resume::Cont => libc::PTRACE_CONT,
        Resume::Syscall => libc::PTRACE_SYSCALL,
        Resume::Listen => libc::PTRACE_LISTEN,
    };
    check(unsafe { libc::ptrace(req, tid, 0usize, sig as usize) }).map(drop)
}

/// The message of the last ptrace event (a new child's id, the former id
/// of a thread that exec'd).
pub fn event_msg(tid: i32) -> io::Result<u64> {
    let mut msg: libc::c_ulong = 0;
    check(unsafe { libc::ptrace(libc::PTRACE_GETEVENTMSG, tid, 0usize, &mut msg as *mut libc::c_ulong) })?;
    Ok(msg as u64)
}

/// `AUDIT_ARCH_X86_64` (EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE):
/// the `arch` of calls made through the 64-bit entry (x32 included).
pub const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;

/// Added to the number of a call made through the i386 entry (`int 0x80`
/// in a 64-bit program), whose numbers are another table's.
pub const I386_CALL: u64 = 0x8000_0000;

/// What PTRACE_GET_SYSCALL_INFO says about a syscall or seccomp stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyscallInfo {
    /// `ip` follows the `syscall` instruction; `sp` is the user stack.
    Entry {
        nr: u64,
        args: [u64; 6],
        ip: u64,
        sp: u64,
    },
    Exit {
        ret: i64,
    },
    /// Not in a syscall stop (the thread was resumed by a signal, …).
    None,
}

pub fn syscall_info(tid: i32) -> io::Result<SyscallInfo> {
    let mut info: libc::ptrace_syscall_info = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::ptrace_syscall_info>();
    check(unsafe {
        libc::ptrace(libc::PTRACE_GET_SYSCALL_INFO, tid, size, &mut info as *mut libc::ptrace_syscall_info)
    })?;
    // SAFETY: `op` says which member of the union the kernel filled in.
    let abi = if info.arch == AUDIT_ARCH_X86_64 { 0 } else { I386_CALL };
    Ok(unsafe {
        match info.op {
            libc::PTRACE_SYSCALL_INFO_ENTRY => SyscallInfo::Entry {
                nr: info.u.entry.nr | abi,
                args: info.u.entry.args,
                ip: info.instruction_pointer,
                sp: info.stack_pointer,
            },
            libc::PTRACE_SYSCALL_INFO_SECCOMP => SyscallInfo::Entry {
                nr: info.u.seccomp.nr | abi,
                args: info.u.seccomp.args,
                ip: info.instruction_pointer,
                sp: info.stack_pointer,
            },
            libc::PTRACE_SYSCALL_INFO_EXIT => SyscallInfo::Exit { ret: info.u.exit.sval },
            _ => SyscallInfo::None,
        }
    })
}

/// All general registers of stopped thread `tid`.
pub fn regs(tid: i32) -> io::Result<libc::user_regs_struct> {
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    check(unsafe { libc::ptrace(libc::PTRACE_GETREGS, tid, 0usize, &mut regs as *mut libc::user_regs_struct) })?;
    Ok(regs)
}

/// Waits for the next report of any thread this thread traces. Only this
/// thread's tracees and children: other threads of the recorder (tests run
/// in parallel) may have children and tracees of their own.
pub fn wait_any() -> io::Result<(i32, i32)> {
    let mut status = 0;
    let tid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL | libc::__WNOTHREAD) };
    if tid >= 0 {
        return Ok((tid, status));
    }
    // EINTR included: the recorder was signalled, the caller looks why.
    Err(io::Error::last_os_error())
}

/// Nanoseconds on the monotonic clock (a vDSO call: no crossing).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The thread-group id of thread `tid`, from /proc (once per new thread).
pub fn tgid_of(tid: i32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("Tgid:")).and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_wait_statuses() {
        // Encodings as the kernel builds them (see wait(2) and ptrace(2)).
        assert_eq!(Report::decode(3 << 8), Report::Gone(3 << 8));
        assert_eq!(Report::decode(libc::SIGKILL), Report::Gone(libc::SIGKILL));
        let stopped = |sig: i32, event: i32| (event << 16) | (sig << 8) | 0x7f;
        assert_eq!(Report::decode(stopped(libc::SIGTRAP | 0x80, 0)), Report::Syscall);
        assert_eq!(Report::decode(stopped(libc::SIGTRAP, libc::PTRACE_EVENT_SECCOMP)), Report::Seccomp);
        assert_eq!(Report::decode(stopped(libc::SIGTRAP, libc::PTRACE_EVENT_CLONE)), Report::NewChild);
        assert_eq!(Report::decode(stopped(libc::SIGTRAP, libc::PTRACE_EVENT_EXEC)), Report::Exec);
        assert_eq!(Report::decode(stopped(libc::SIGTRAP, PTRACE_EVENT_STOP)), Report::Attached);
        assert_eq!(Report::decode(stopped(libc::SIGTSTP, PTRACE_EVENT_STOP)), Report::GroupStop);
        assert_eq!(Report::decode(stopped(libc::SIGSEGV, 0)), Report::Signal(libc::SIGSEGV));
    }
}
