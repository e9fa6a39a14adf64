//! What the user's shell gave this process, kept for the programs it
//! starts.  Rust's runtime sets SIGPIPE to `SIG_IGN` before `main`, and an
//! ignored signal stays ignored across `exec`: a program started with it
//! (`yes | head -1` under `record` or `stat`) would print "Broken pipe"
//! and exit 1 instead of dying of SIGPIPE.  A constructor in
//! `.init_array`, which runs before Rust's runtime starts, notes the
//! disposition the process was given; [`restore_sigpipe`] puts it back in a
//! child before `exec` (or a `posix_spawn` leaves it, [`sigpipe_ignored`]).

use std::sync::atomic::{AtomicBool, Ordering};

static SIGPIPE_IGNORED: AtomicBool = AtomicBool::new(false);

extern "C" fn note_sigpipe() {
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    if unsafe { libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) } == 0 {
        SIGPIPE_IGNORED.store(old.sa_sigaction == libc::SIG_IGN, Ordering::Relaxed);
    }
}

#[used]
#[link_section = ".init_array"]
static NOTE_SIGPIPE: extern "C" fn() = note_sigpipe;

/// Whether this process started with SIGPIPE ignored (by its parent).
pub fn sigpipe_ignored() -> bool {
    SIGPIPE_IGNORED.load(Ordering::Relaxed)
}

/// Gives SIGPIPE the disposition this process started with (`SIG_DFL`
/// unless its parent ignored it).  Async-signal-safe: for a child between
/// `fork` and `exec`.
pub fn restore_sigpipe() {
    let handler = if sigpipe_ignored() { libc::SIG_IGN } else { libc::SIG_DFL };
    unsafe { libc::signal(libc::SIGPIPE, handler) };
}
