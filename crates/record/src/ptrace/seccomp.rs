//! The seccomp filter that makes traced calls, and only those, stop the
//! tracee (`SECCOMP_RET_TRACE` gives the tracer a seccomp stop at the call's
//! entry; an untraced call runs at full speed, as in `strace --seccomp-bpf`).
//!
//! The program is built in the recorder and installed by the child between
//! the launch gate and `exec`, where only async-signal-safe calls may be made.

use super::sys::AUDIT_ARCH_X86_64;
use std::io;
use std::mem::offset_of;

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter { code: code as u16, jt: 0, jf: 0, k }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code: code as u16, jt, jf, k }
}

/// A classic BPF program: `SECCOMP_RET_TRACE` for every call except the
/// x86_64 calls in `untraced` (which are allowed without a stop). Calls of
/// other ABIs (i386 through `int 0x80`) are always traced.
pub fn program(untraced: &[u32]) -> Vec<libc::sock_filter> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let mut untraced: Vec<u32> = untraced.to_vec();
    untraced.sort_unstable();
    untraced.dedup();
    // Jump offsets are 8 bits; beyond that, trace everything (still correct).
    untraced.truncate(250);
    let n = untraced.len();
    let trace = libc::SECCOMP_RET_TRACE;
    let mut p = Vec::with_capacity(n + 5);
    p.push(stmt(BPF_LD | BPF_W | BPF_ABS, offset_of!(libc::seccomp_data, arch) as u32));
    // Not x86_64: skip the comparisons, straight to the TRACE return.
    p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, (n + 1) as u8));
    p.push(stmt(BPF_LD | BPF_W | BPF_ABS, offset_of!(libc::seccomp_data, nr) as u32));
    for (i, &nr) in untraced.iter().enumerate() {
        // Equal: jump over the remaining comparisons and the TRACE return.
        p.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr, (n - i) as u8, 0));
    }
    p.push(stmt(BPF_RET | BPF_K, trace));
    p.push(stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ALLOW));
    p
}

/// Whether this kernel has seccomp filters with the TRACE action.
pub fn available() -> bool {
    let action: u32 = libc::SECCOMP_RET_TRACE;
    const SECCOMP_GET_ACTION_AVAIL: libc::c_long = 2;
    unsafe { libc::syscall(libc::SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action as *const u32) == 0 }
}

/// Installs `prog` on the calling thread. Async-signal-safe (two or three
/// system calls, no allocation): for the child between fork and exec.
///
/// Without CAP_SYS_ADMIN the kernel requires no_new_privs first; it is set
/// only then, so that a recorder run as root keeps set-uid programs working.
pub fn install(prog: &[libc::sock_filter]) -> io::Result<()> {
    let fprog = libc::sock_fprog { len: prog.len() as u16, filter: prog.as_ptr() as *mut libc::sock_filter };
    let set = |flags: libc::c_ulong| unsafe {
        libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, flags, &fprog as *const libc::sock_fprog)
    };
    // SPEC_ALLOW: a filter must not change how fast the program runs
    // (older kernels force the speculative-store-bypass mitigation on).
    let attempt = || {
        if set(libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW) == 0 || set(0) == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    };
    match attempt() {
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(io::Error::last_os_error());
            }
            attempt()
        }
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `prog` as the classic BPF interpreter would, for one call.
    fn run(prog: &[libc::sock_filter], arch: u32, nr: u32) -> u32 {
        let arch_off = offset_of!(libc::seccomp_data, arch) as u32;
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let i = prog[pc];
            match i.code as u32 {
                c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => acc = if i.k == arch_off { arch } else { nr },
                c if c == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => {
                    pc += if acc == i.k { i.jt } else { i.jf } as usize;
                }
                c if c == libc::BPF_RET | libc::BPF_K => return i.k,
                c => panic!("unexpected instruction {c:#x}"),
            }
            pc += 1;
        }
    }

    #[test]
    fn traces_all_but_the_untraced() {
        let p = program(&[39, 110, 39]);
        assert_eq!(run(&p, AUDIT_ARCH_X86_64, 1), libc::SECCOMP_RET_TRACE);
        assert_eq!(run(&p, AUDIT_ARCH_X86_64, 39), libc::SECCOMP_RET_ALLOW);
        assert_eq!(run(&p, AUDIT_ARCH_X86_64, 110), libc::SECCOMP_RET_ALLOW);
        assert_eq!(run(&p, AUDIT_ARCH_X86_64, 111), libc::SECCOMP_RET_TRACE);
        // i386 getppid is 64: another ABI, traced even though 39 is not.
        assert_eq!(run(&p, 0x4000_0003, 39), libc::SECCOMP_RET_TRACE);
        let all = program(&[]);
        assert_eq!(run(&all, AUDIT_ARCH_X86_64, 39), libc::SECCOMP_RET_TRACE);
    }

    #[test]
    fn the_kernel_accepts_the_filter() {
        if !available() {
            syscluster_testutil::need("seccomp", "seccomp filters with SECCOMP_RET_TRACE are not available");
            return;
        }
        // In a child: with nothing untraced and no tracer, calls would fail
        // with ENOSYS, so allow the two the child needs to report and exit.
        let prog = program(&[libc::SYS_exit_group as u32, libc::SYS_exit as u32, libc::SYS_getppid as u32]);
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let ok = install(&prog).is_ok();
            // getppid is allowed and works; getpid is traced and, untraced, fails.
            let allowed = unsafe { libc::syscall(libc::SYS_getppid) } > 0;
            let stopped = unsafe { libc::syscall(libc::SYS_getpid) } == -1
                && unsafe { *libc::__errno_location() } == libc::ENOSYS;
            unsafe { libc::_exit(if ok && allowed && stopped { 0 } else { 1 }) };
        }
        let mut status = 0;
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "status {status:#x}");
    }
}
