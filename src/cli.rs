//! `syscluster-cli`: the full command line (everything lives in
//! `crates/cli`).  The `syscluster` command users type is a small static
//! C program (preload/launcher/launcher.c), which runs the plainest
//! `syscluster run` command lines itself and `exec`s this one, installed
//! next to it, for every other command line.
//!
//! `main` is the C entry point, not Rust's `fn main`: Rust's start-up
//! (`lang_start`) installs a stack-overflow handler whose guard-page
//! lookup for the main thread makes glibc read and parse all of
//! `/proc/self/maps`, a third of a millisecond here.  What else it does
//! that the CLI relies on is [`syscluster_cli::start`].  Arguments reach
//! `std::env::args` through glibc's `.init_array` call either way, and
//! `std::process::exit` flushes stdout.  What is lost: a stack overflow
//! ends in SIGSEGV without Rust's one-line message.
#![no_main]

#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    syscluster_cli::start();
    std::process::exit(syscluster_cli::main());
}
