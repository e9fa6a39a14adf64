//! Waiting for the program, and for the guardians of programs that died.

use std::sync::atomic::{AtomicI32, Ordering};

/// The name the runtime's guardian tasks give themselves (PR_SET_NAME).
const GUARDIAN_COMM: &str = "syscluster-grd";

/// Orphans in our tree come to us rather than to init: among them the
/// guardian of a program that died abruptly, which we wait for.
pub fn become_subreaper() {
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
}

/// Whether any child (a guardian handed to us, or any other orphan of the
/// program's) exists, without reaping it.
fn has_children() -> bool {
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT | libc::__WALL;
    unsafe { libc::waitid(libc::P_ALL, 0, &mut info, flags) == 0 }
}

/// Our children that are guardians: they belong to programs that are dead
/// (a guardian is reparented only when its whole program is gone) and are
/// completing their pending writes.
fn guardian_children() -> Vec<libc::pid_t> {
    let mut pids = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return pids;
    };
    for t in tasks.flatten() {
        let Ok(children) = std::fs::read_to_string(t.path().join("children")) else {
            continue;
        };
        for pid in children.split_whitespace().filter_map(|p| p.parse::<libc::pid_t>().ok()) {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if comm.trim_end() == GUARDIAN_COMM {
                pids.push(pid);
            }
        }
    }
    pids
}

/// Waits until every guardian handed to us has finished, so that the
/// program's acknowledged writes are all in place when `run` returns.
pub fn wait_for_guardians() {
    for _ in 0..64 {
        // No child at all (the usual case): nothing to look up in /proc.
        if !has_children() {
            return;
        }
        let pids = guardian_children();
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            let mut status = 0;
            unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
        }
    }
}

static TARGET: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let pid = TARGET.load(Ordering::Relaxed);
    let from_terminal = unsafe { (*info).si_code } == libc::SI_KERNEL;
    let tty_signal = sig == libc::SIGINT || sig == libc::SIGQUIT;
    // A terminal's Ctrl-C already reaches the program's process group.
    if pid > 0 && !(tty_signal && from_terminal) {
        unsafe { libc::kill(pid, sig) };
    }
}

const FORWARDED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Passes SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to us on to `pid`, so
/// that the program ends its own way (and the runtime flushes); 0 stops.
pub fn forward_signals_to(pid: libc::pid_t) {
    TARGET.store(pid, Ordering::Relaxed);
    for sig in FORWARDED {
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            if pid > 0 {
                sa.sa_sigaction =
                    forward as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize;
                sa.sa_flags = libc::SA_RESTART | libc::SA_SIGINFO;
            } else {
                sa.sa_sigaction = libc::SIG_DFL;
            }
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}
