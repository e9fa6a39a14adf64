//! Code locations: which code in the traced program issued each call.
//!
//! A location is the first frame outside libc, the dynamic loader and the
//! program's language runtime, found by unwinding their frames with their
//! `.eh_frame` call frame information (so it works without frame pointers; Debian's libc has
//! none), and resolved to function and `file:line` where debug info exists,
//! to module+offset otherwise.
//!
//! - [`modules`]: the mapped files that code addresses refer to;
//! - [`unwind`]: unwind tables of the skipped modules and the user-space
//!   unwinder (the BPF backend runs the same steps in the kernel);
//! - [`symbolize`]: addresses to functions, files and lines;
//! - [`runtime`]: the language runtime (Go's, Rust's std) inside the
//!   program's file, stepped over too: the location is the first frame of
//!   the user's code.

pub mod modules;
pub mod runtime;
pub mod symbolize;
pub mod unwind;

pub use modules::Modules;
pub use symbolize::Symbolizer;
