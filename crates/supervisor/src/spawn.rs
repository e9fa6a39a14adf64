//! Starting the program: `clone(CLONE_VM | CLONE_VFORK)` and `execve`, as
//! `posix_spawnp` does, without copying the supervisor (start-up cost), with
//! the signal dispositions the user's shell gave — and without
//! `posix_spawn`'s child loop over all 64 signals (a `sigaction` to read
//! each and another to reset most: ~130 system calls, a quarter of a
//! millisecond on this machine, docs/RUNTIME.md "Start-up").  std's
//! `Command` cannot do it either: its `posix_spawn` child, in glibc 2.36,
//! sets glibc's internal signals 32 and 33 to `SIG_IGN`, which `exec`
//! keeps (every program would start with them ignored), and a `pre_exec`
//! hook that could fix it makes std fork the whole supervisor.
//!
//! The child shares our memory until its `execve`, so it makes raw system
//! calls only.  It gives SIGPIPE back the disposition the shell gave
//! (Rust's start-up, and `syscluster_cli::start`, ignore it in the
//! supervisor), sets 32 and 33 to `SIG_DFL`, starts with an empty signal
//! mask (as with `Command`), and searches PATH as `execvp` does.  A handler
//! of the supervisor's own cannot run in it: every signal is blocked from
//! before the `clone` until the child's last step, and `execve` resets
//! every caught signal to its default; what the shell ignored stays
//! ignored, as with `posix_spawn`.

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::Command;

fn cstring(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in an argument"))
}

/// What the child needs, prepared by the parent (the child allocates
/// nothing).
struct Child {
    /// The files to try, in order: the program itself if its name has a
    /// slash, else the name in each directory of PATH.
    paths: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    /// Signals the child sets to `SIG_DFL`.
    dfl: Vec<libc::c_int>,
    /// The `execve` error, if every try failed.
    errno: libc::c_int,
}

/// As glibc's `execvp`: the directories of PATH (an empty entry is the
/// current directory), or `/bin:/usr/bin` without PATH.
fn candidates(program: &OsStr) -> io::Result<Vec<CString>> {
    if program.as_bytes().contains(&b'/') {
        return Ok(vec![cstring(program)?]);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/bin:/usr/bin"));
    let mut out = Vec::new();
    for dir in path.as_bytes().split(|&b| b == b':') {
        let mut p = if dir.is_empty() { Vec::new() } else { dir.to_vec() };
        if !p.is_empty() {
            p.push(b'/');
        }
        p.extend_from_slice(program.as_bytes());
        out.push(cstring(OsStr::from_bytes(&p))?);
    }
    Ok(out)
}

extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `Child`, alive and untouched until
    // this task has exec'd or exited (CLONE_VFORK); raw system calls only.
    unsafe {
        let c = &mut *(arg as *mut Child);
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        for &sig in &c.dfl {
            libc::syscall(libc::SYS_rt_sigaction, sig, &dfl as *const libc::sigaction, 0usize, 8usize);
        }
        let none: u64 = 0;
        libc::syscall(libc::SYS_rt_sigprocmask, libc::SIG_SETMASK, &none as *const u64, 0usize, 8usize);
        // As glibc's execvp: go on past a file that is missing or not
        // executable, stop at any other error; EACCES if one was seen.
        let mut err = libc::ENOENT;
        let mut eacces = false;
        for p in &c.paths {
            // errno is the parent's (shared memory and TLS): it is waiting.
            libc::syscall(libc::SYS_execve, p.as_ptr(), c.argv.as_ptr(), c.envp.as_ptr());
            err = *libc::__errno_location();
            match err {
                libc::EACCES => eacces = true,
                libc::ENOENT | libc::ESTALE | libc::ENOTDIR | libc::ENODEV | libc::ETIMEDOUT => {}
                _ => {
                    eacces = false;
                    break;
                }
            }
        }
        c.errno = if eacces { libc::EACCES } else { err };
        libc::syscall(libc::SYS_exit, 127);
        127
    }
}

/// Starts `cmd` (its program, searched on PATH as `execvp` does, its
/// arguments and its environment changes over ours) and returns its pid.
pub fn spawn(cmd: &Command) -> io::Result<libc::pid_t> {
    let program = cstring(cmd.get_program())?;
    let mut args = vec![program];
    for a in cmd.get_args() {
        args.push(cstring(a)?);
    }
    let mut env: BTreeMap<OsString, Option<OsString>> = std::env::vars_os().map(|(k, v)| (k, Some(v))).collect();
    for (k, v) in cmd.get_envs() {
        env.insert(k.to_owned(), v.map(OsStr::to_owned));
    }
    let mut envs = Vec::new();
    for (k, v) in env {
        if let Some(v) = v {
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend(v.into_vec());
            envs.push(cstring(OsStr::from_bytes(&kv))?);
        }
    }
    let ptrs = |v: &[CString]| -> Vec<*const libc::c_char> {
        v.iter().map(|c| c.as_ptr()).chain(std::iter::once(std::ptr::null())).collect()
    };
    let mut dfl = vec![32, 33];
    if !syscluster_model::inherited::sigpipe_ignored() {
        dfl.push(libc::SIGPIPE);
    }
    let mut c = Child { paths: candidates(cmd.get_program())?, argv: ptrs(&args), envp: ptrs(&envs), dfl, errno: 0 };
    let mut stack = vec![0u8; 64 * 1024];
    // SAFETY: the child runs on `stack` and reads `c` until it exec's or
    // exits; CLONE_VFORK suspends us until then, so both outlive it.
    unsafe {
        let all: u64 = !0;
        let mut old: u64 = 0;
        libc::syscall(libc::SYS_rt_sigprocmask, libc::SIG_SETMASK, &all as *const u64, &mut old as *mut u64, 8usize);
        let top = (stack.as_mut_ptr().add(stack.len()) as usize & !15) as *mut libc::c_void;
        let pid = libc::clone(
            child,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            &mut c as *mut Child as *mut libc::c_void,
        );
        let clone_err = io::Error::last_os_error();
        libc::syscall(libc::SYS_rt_sigprocmask, libc::SIG_SETMASK, &old as *const u64, 0usize, 8usize);
        if pid < 0 {
            return Err(clone_err);
        }
        if c.errno != 0 {
            // The child exited without running anything: reap it.
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            return Err(io::Error::from_raw_os_error(c.errno));
        }
        Ok(pid)
    }
}
