//! Starting the command to record: forked, held at a gate before `exec` so
//! that the recorder can attach first, then released. The child keeps the
//! recorder's stdin, stdout and stderr.

use std::ffi::{CString, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// How a recorded command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    Code(i32),
    Signal(i32),
}

impl ExitStatus {
    /// Decodes a `waitpid` status.
    pub fn from_wait(status: i32) -> Option<ExitStatus> {
        if libc::WIFEXITED(status) {
            Some(ExitStatus::Code(libc::WEXITSTATUS(status)))
        } else if libc::WIFSIGNALED(status) {
            Some(ExitStatus::Signal(libc::WTERMSIG(status)))
        } else {
            None
        }
    }

    /// The exit code a shell would report: the code, or 128 + the signal.
    pub fn shell_code(self) -> i32 {
        match self {
            ExitStatus::Code(c) => c,
            ExitStatus::Signal(s) => 128 + s,
        }
    }

    pub fn to_profile(self) -> syscluster_model::profile::ExitStatus {
        match self {
            ExitStatus::Code(c) => syscluster_model::profile::ExitStatus { code: Some(c), signal: None },
            ExitStatus::Signal(s) => syscluster_model::profile::ExitStatus { code: None, signal: Some(s) },
        }
    }
}

/// Why a command could not be started.
#[derive(Debug)]
pub enum LaunchError {
    Empty,
    BadArgument(String),
    /// `exec` failed in the child: the command does not exist, is not
    /// executable, …
    Exec(String, io::Error),
    Os(&'static str, io::Error),
    /// The recorder was interrupted (this signal) while it got ready, before
    /// the command was released: the command never ran.
    Interrupted(i32),
}

impl std::fmt::Display for LaunchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LaunchError::Empty => write!(f, "no command given (usage: syscluster record -- CMD [ARGS...])"),
            LaunchError::BadArgument(a) => write!(f, "argument {a:?} contains a NUL byte"),
            LaunchError::Exec(cmd, e) if e.kind() == io::ErrorKind::NotFound => write!(f, "command not found: {cmd}"),
            LaunchError::Exec(cmd, e) => write!(f, "cannot execute {cmd}: {e}"),
            LaunchError::Os(what, e) => write!(f, "{what}: {e}"),
            LaunchError::Interrupted(sig) => write!(
                f,
                "interrupted (signal {sig}) while getting ready to record: the command was not started, nothing was recorded"
            ),
        }
    }
}

impl std::error::Error for LaunchError {}

/// What the child runs between `fork` and `exec`, after the gate opens
/// (ptrace uses it to request tracing and install its seccomp filter).
pub type PreExec = Box<dyn FnMut() -> io::Result<()>>;

/// A forked command waiting at its gate.
pub struct Child {
    pub pid: libc::pid_t,
    gate: libc::c_int,
    errpipe: libc::c_int,
    program: String,
    reaped: Option<ExitStatus>,
    /// When the gate opened: the command's run starts here.
    released_at: Option<std::time::Instant>,
}

impl Child {
    /// Forks `argv`; the child waits until [`Child::release`].
    ///
    /// `pre_exec` runs in the child after the gate opens and before `exec`;
    /// it must only make async-signal-safe calls.
    pub fn spawn(argv: &[OsString], mut pre_exec: Option<PreExec>) -> Result<Child, LaunchError> {
        let program = argv.first().ok_or(LaunchError::Empty)?.to_string_lossy().into_owned();
        let cargs: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.as_bytes()).map_err(|_| LaunchError::BadArgument(a.to_string_lossy().into_owned())))
            .collect::<Result<_, _>>()?;
        let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        // The PATH search is done here, not by execvp in the child: its
        // failed execve calls would be recorded as the command's. Where no
        // file is found, execvp runs to give the error it would.
        let resolved = resolve_program(&argv[0]).and_then(|p| CString::new(p.into_os_string().into_vec()).ok());
        let gate = pipe_cloexec()?;
        let errpipe = pipe_cloexec()?;
        // SAFETY: the child only makes async-signal-safe calls before exec
        // (read, write, execv(p), _exit) plus the caller's pre_exec hook.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(LaunchError::Os("fork", io::Error::last_os_error()));
        }
        if pid == 0 {
            unsafe {
                libc::close(gate[1]);
                libc::close(errpipe[0]);
                let mut b = 0u8;
                // Wait for the recorder; EOF (recorder died) means: do not run.
                loop {
                    let r = libc::read(gate[0], &mut b as *mut u8 as *mut _, 1);
                    if r == 1 {
                        break;
                    }
                    if r == 0 || *libc::__errno_location() != libc::EINTR {
                        libc::_exit(127);
                    }
                }
                libc::close(gate[0]);
                syscluster_model::inherited::restore_sigpipe();
                if let Some(hook) = pre_exec.as_mut() {
                    if let Err(e) = hook() {
                        let code = e.raw_os_error().unwrap_or(libc::EINVAL);
                        libc::write(errpipe[1], &code as *const i32 as *const _, 4);
                        libc::_exit(127);
                    }
                }
                match &resolved {
                    Some(path) => libc::execv(path.as_ptr(), ptrs.as_ptr()),
                    None => libc::execvp(ptrs[0], ptrs.as_ptr()),
                };
                let code = *libc::__errno_location();
                libc::write(errpipe[1], &code as *const i32 as *const _, 4);
                libc::_exit(127);
            }
        }
        unsafe {
            libc::close(gate[0]);
            libc::close(errpipe[1]);
        }
        Ok(Child { pid, gate: gate[1], errpipe: errpipe[0], program, reaped: None, released_at: None })
    }

    /// Opens the gate. Returns an error if the child could not `exec`; the
    /// child is then reaped.
    ///
    /// Under ptrace the child stops before its exec completes, so the
    /// caller must not wait for the exec verdict: see [`Child::open_gate`]
    /// and [`Child::exec_result`].
    pub fn release(&mut self) -> Result<(), LaunchError> {
        self.open_gate()?;
        self.exec_result()
    }

    /// Opens the gate without waiting for the exec verdict.
    pub fn open_gate(&mut self) -> Result<(), LaunchError> {
        let b = 1u8;
        self.released_at = Some(std::time::Instant::now());
        let r = unsafe { libc::write(self.gate, &b as *const u8 as *const _, 1) };
        unsafe { libc::close(self.gate) };
        self.gate = -1;
        if r != 1 {
            return Err(LaunchError::Os("releasing the command", io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Nanoseconds since the gate opened (`None` before).
    pub fn ran_ns(&self) -> Option<u64> {
        self.released_at.map(|t| t.elapsed().as_nanos() as u64)
    }

    /// Waits until the child has exec'd (the error pipe closes) or failed to.
    pub fn exec_result(&mut self) -> Result<(), LaunchError> {
        let mut code = 0i32;
        let n = loop {
            let r = unsafe { libc::read(self.errpipe, &mut code as *mut i32 as *mut _, 4) };
            if r >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                break r;
            }
        };
        unsafe { libc::close(self.errpipe) };
        self.errpipe = -1;
        if n == 4 {
            let _ = self.wait();
            return Err(LaunchError::Exec(self.program.clone(), io::Error::from_raw_os_error(code)));
        }
        Ok(())
    }

    /// Waits for the child to end (for backends that do not reap it
    /// themselves).
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(s) = self.reaped {
            return Ok(s);
        }
        loop {
            let mut status = 0;
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if let Some(s) = ExitStatus::from_wait(status) {
                self.reaped = Some(s);
                return Ok(s);
            }
        }
    }

    /// Records an exit status observed by a backend that reaps the child itself.
    pub fn set_reaped(&mut self, s: ExitStatus) {
        self.reaped = Some(s);
    }

    pub fn program(&self) -> &str {
        &self.program
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        unsafe {
            if self.gate >= 0 {
                // Closing the gate unopened makes the child exit without running.
                libc::close(self.gate);
            }
            if self.errpipe >= 0 {
                libc::close(self.errpipe);
            }
        }
        if self.reaped.is_none() {
            let mut status = 0;
            unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
        }
    }
}

fn pipe_cloexec() -> Result<[libc::c_int; 2], LaunchError> {
    let mut fds = [0; 2];
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(LaunchError::Os("pipe2", io::Error::last_os_error()));
    }
    Ok(fds)
}

/// The file `execvp` runs for `cmd`: `cmd` itself if it names a path, else
/// the first executable of that name on `PATH`.
pub fn resolve_program(cmd: &std::ffi::OsStr) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let is_exe =
        |p: &std::path::Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if cmd.as_bytes().contains(&b'/') {
        let p = std::path::PathBuf::from(cmd);
        return is_exe(&p).then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path).map(|d| d.join(cmd)).find(|p| is_exe(p))
}

/// How a recording ended: the command's status, how many of its threads
/// were still running (detached, not followed) when it stopped, and how
/// long it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ended {
    pub exit: ExitStatus,
    pub left_running: u64,
    /// From the command's release to the end of the recording, ns: the
    /// recorder's own setup (loading BPF programs) is not in it.
    pub ran_ns: Option<u64>,
    /// CPU time (user + system) of the command and the children it
    /// waited for, ns, where the backend reaped it with wait4.
    pub cpu_ns: Option<u64>,
}

/// SIGINT, SIGTERM, SIGHUP and SIGQUIT the recorder received since
/// [`forward_signals_to`].
static INTERRUPTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
/// Where they are passed on; 0: nowhere.
static FORWARD_TO: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
/// The last of them.
static LAST_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Catches SIGINT, SIGTERM, SIGHUP and SIGQUIT while the recorder gets
/// ready (loading BPF programs takes seconds on a busy machine): one of
/// them then ends the recording before its command starts
/// ([`forward_signals_to`] says so) instead of killing the recorder
/// silently.
pub fn catch_signals() {
    FORWARD_TO.store(0, std::sync::atomic::Ordering::Relaxed);
    install_handlers();
    INTERRUPTS.store(0, std::sync::atomic::Ordering::Relaxed);
}

/// The command has ended (and was reaped): signals to the recorder are no
/// longer passed on (its pid may be reused), only counted.
pub fn stop_forwarding() {
    FORWARD_TO.store(0, std::sync::atomic::Ordering::Relaxed);
}

/// How many times the recorder was interrupted (SIGINT, SIGTERM, SIGHUP,
/// SIGQUIT) since [`forward_signals_to`].
pub fn interrupts() -> u32 {
    INTERRUPTS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Passes signals meant for the recorder on to the recorded command, so that
/// the command stops and the recorder still writes its profile: SIGTERM and
/// SIGHUP always, SIGINT and SIGQUIT when another process sent them (a
/// terminal's Ctrl-C already reaches the whole foreground process group, and
/// the command must not get it twice). The command decides what to do with
/// them: the recording goes on until it ends. Each signal is counted
/// ([`interrupts`]); the handler interrupts the recorder's waits (no
/// SA_RESTART) so that it can look at the count. Fails if the recorder was
/// interrupted since [`catch_signals`]: the command, still at its gate,
/// must not start.
pub fn forward_signals_to(pid: libc::pid_t) -> Result<(), LaunchError> {
    use std::sync::atomic::Ordering;
    // From here a signal is passed on (to the command at its gate); one
    // that came before stops the recording.
    FORWARD_TO.store(pid, Ordering::Relaxed);
    install_handlers();
    if INTERRUPTS.swap(0, Ordering::Relaxed) > 0 && pid > 0 {
        FORWARD_TO.store(0, Ordering::Relaxed);
        return Err(LaunchError::Interrupted(LAST_SIGNAL.load(Ordering::Relaxed)));
    }
    Ok(())
}

/// The handler of [`forward_signals_to`] for the four signals.
fn install_handlers() {
    use std::sync::atomic::Ordering;
    extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
        LAST_SIGNAL.store(sig, Ordering::Relaxed);
        INTERRUPTS.fetch_add(1, Ordering::Relaxed);
        let pid = FORWARD_TO.load(Ordering::Relaxed);
        let from_terminal = unsafe { (*info).si_code } == libc::SI_KERNEL;
        let tty_signal = sig == libc::SIGINT || sig == libc::SIGQUIT;
        if pid > 0 && !(tty_signal && from_terminal) {
            unsafe { libc::kill(pid, sig) };
        }
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = forward as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize;
            sa.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}
