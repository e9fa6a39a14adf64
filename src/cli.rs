//! `syscluster-cli`: the full command line (everything lives in
//! `crates/cli`).  The `syscluster` command users type is the small binary
//! of src/main.rs, which runs `syscluster run` itself and `exec`s this one,
//! installed next to it, for every other command line.
//!
//! `main` is the C entry point, not Rust's `fn main`: see src/main.rs.
#![no_main]

#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    syscluster_cli::start();
    std::process::exit(syscluster_cli::main());
}
