//! Code locations: which code in the traced program issued each call.
//!
//! A location is the first frame outside libc and the dynamic loader,
//! found by unwinding their frames with their `.eh_frame` call frame
//! information (so it works without frame pointers; Debian's libc has
//! none), and resolved to function and `file:line` where debug info exists,
//! to module+offset otherwise.
//!
//! - [`modules`]: the mapped files that code addresses refer to;
//! - [`unwind`]: unwind tables of the skipped modules and the user-space
//!   unwinder (the BPF backend runs the same steps in the kernel);
//! - [`symbolize`]: addresses to functions, files and lines.

pub mod modules;
pub mod symbolize;
pub mod unwind;

pub use modules::Modules;
pub use symbolize::Symbolizer;
