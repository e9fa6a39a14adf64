//! `syscluster`, the command users type: a small binary that runs
//! `syscluster run` itself and hands every other command line to the full
//! CLI, `syscluster-cli` (src/cli.rs), installed next to it, by `exec`
//! (same process, same arguments, same environment).
//!
//! Why two binaries: `syscluster run` is meant to add less than half a
//! millisecond to a program's start (docs/RUNTIME.md, "Start-up"), and
//! merely starting the full CLI — a large binary linked against libelf and
//! libz (the BPF recorder), with every subcommand's flags — costs more
//! than that.  This one links only what `run` needs, and takes only the
//! plainest `run` command lines ([`syscluster_cli::fast::run_args`]): the
//! rest (`--plan`, `--help`, errors) goes to the full CLI, which answers
//! as it always did.
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

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;

/// The file name of the full CLI, beside this binary or in ../lib/syscluster.
const FULL_CLI: &str = "syscluster-cli";

#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    let args: Vec<OsString> = std::env::args_os().collect();
    if let Some(run) = syscluster_cli::fast::run_args(&args) {
        syscluster_cli::start();
        std::process::exit(syscluster_cli::run_command(run));
    }
    // Beside this binary (the build tree), else where `make install` puts
    // it: PREFIX/lib/syscluster beside PREFIX/bin.
    let full = std::env::current_exe().ok().and_then(|e| e.parent().map(|d| d.to_path_buf())).map(|d| {
        let here = d.join(FULL_CLI);
        let installed = d.join("../lib/syscluster").join(FULL_CLI);
        if !here.exists() && installed.exists() {
            installed
        } else {
            here
        }
    });
    let Some(full) = full else {
        eprintln!("syscluster: cannot tell where this program is (/proc/self/exe), so not where {FULL_CLI} is");
        return 127;
    };
    // The same arguments, argv[0] included (args_os has no NUL in them).
    let argv: Vec<CString> = args.iter().filter_map(|a| CString::new(a.as_bytes()).ok()).collect();
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    if let Ok(path) = CString::new(full.as_os_str().as_bytes()) {
        // SAFETY: NUL-terminated strings and vector, alive across the call.
        unsafe { libc::execv(path.as_ptr(), ptrs.as_ptr()) };
    }
    eprintln!(
        "syscluster: cannot start {}: {} (it is installed beside syscluster or in ../lib/syscluster)",
        full.display(),
        std::io::Error::last_os_error()
    );
    127
}
