//! The `syscluster` command: everything lives in `crates/cli`.
//!
//! `main` is the C entry point, not Rust's `fn main`: Rust's start-up
//! (`lang_start`) also installs a stack-overflow handler, whose guard-page
//! lookup for the main thread makes glibc read and parse all of
//! `/proc/self/maps` — about a third of a millisecond of every run, and
//! `syscluster run` is meant to add less than half a millisecond to a
//! program (docs/RUNTIME.md, "Start-up").  What else Rust's start-up does
//! and the CLI relies on is done here: descriptors 0–2 exist (a closed one
//! is opened on /dev/null, so that no file the CLI opens becomes its
//! stdout) and SIGPIPE is ignored (a closed pipe is an error to report;
//! the disposition the shell gave is kept for the programs the CLI starts,
//! `syscluster_model::inherited`).  Command-line arguments reach
//! `std::env::args` through glibc's `.init_array` call either way, and
//! `std::process::exit` flushes stdout.  What is lost: a stack overflow
//! ends in SIGSEGV without Rust's one-line message.
#![no_main]

#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    // SAFETY: plain C calls at start-up, on a single thread.
    unsafe {
        let mut fds = [0, 1, 2].map(|fd| libc::pollfd { fd, events: 0, revents: 0 });
        if libc::poll(fds.as_mut_ptr(), 3, 0) >= 0 {
            for p in fds {
                if p.revents & libc::POLLNVAL != 0 {
                    libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
                }
            }
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    std::process::exit(syscluster_cli::main());
}
