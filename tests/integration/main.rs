//! Integration tests of the `syscluster` command on real programs: one
//! binary, one module per area.

mod bad_input;
mod report;
mod strace_import;
mod util;
mod run;
