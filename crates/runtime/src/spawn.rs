//! Starting the program: with `posix_spawnp`, which does not copy the
//! supervisor (start-up cost), and with the signal dispositions the user's
//! shell gave.  std's `Command` cannot do both: its `posix_spawn` child, in
//! glibc 2.36, sets glibc's internal signals 32 and 33 to `SIG_IGN`, which
//! `exec` keeps (every program would start with them ignored), and a
//! `pre_exec` hook that could fix it makes std fork the whole supervisor.
//! Here the spawn attributes name SIGPIPE (unless the shell ignored it:
//! Rust's runtime ignores it in the supervisor), 32 and 33 as signals to
//! reset to `SIG_DFL`, and the child starts with an empty signal mask, as
//! with `Command`.

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::Command;

fn cstring(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in an argument"))
}

/// Starts `cmd` (its program, searched on PATH as `execvp` does, its
/// arguments and its environment changes over ours) and returns its pid.
pub fn spawn(cmd: &Command) -> io::Result<libc::pid_t> {
    let program = cstring(cmd.get_program())?;
    let mut args = vec![program.clone()];
    for a in cmd.get_args() {
        args.push(cstring(a)?);
    }
    let mut env: BTreeMap<OsString, Option<OsString>> =
        std::env::vars_os().map(|(k, v)| (k, Some(v))).collect();
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
    let ptrs = |v: &[CString]| -> Vec<*mut libc::c_char> {
        v.iter()
            .map(|c| c.as_ptr() as *mut libc::c_char)
            .chain(std::iter::once(std::ptr::null_mut()))
            .collect()
    };
    let (argv, envp) = (ptrs(&args), ptrs(&envs));
    // SAFETY: plain C calls on local, initialised structures; the strings
    // outlive the call.
    unsafe {
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        let mut r = libc::posix_spawnattr_init(&mut attr);
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        let mut dfl: libc::sigset_t = std::mem::zeroed();
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut dfl);
        libc::sigemptyset(&mut mask);
        if !syscluster_model::inherited::sigpipe_ignored() {
            libc::sigaddset(&mut dfl, libc::SIGPIPE);
        }
        // sigaddset refuses glibc's own signals: their bits (signal N is
        // bit N - 1 of the first word) are set directly.
        *(&mut dfl as *mut libc::sigset_t as *mut u64) |= 0b11 << 31;
        let flags = (libc::POSIX_SPAWN_SETSIGDEF | libc::POSIX_SPAWN_SETSIGMASK) as libc::c_short;
        r = libc::posix_spawnattr_setsigdefault(&mut attr, &dfl);
        if r == 0 {
            r = libc::posix_spawnattr_setsigmask(&mut attr, &mask);
        }
        if r == 0 {
            r = libc::posix_spawnattr_setflags(&mut attr, flags);
        }
        let mut pid: libc::pid_t = 0;
        if r == 0 {
            r = libc::posix_spawnp(
                &mut pid,
                program.as_ptr(),
                std::ptr::null(),
                &attr,
                argv.as_ptr(),
                envp.as_ptr(),
            );
        }
        libc::posix_spawnattr_destroy(&mut attr);
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        Ok(pid)
    }
}
