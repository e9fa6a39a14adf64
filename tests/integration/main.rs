//! Integration tests of the `syscluster` command on real programs: one
//! binary, one module per area.

mod advise;
mod backends;
mod bad_input;
mod html;
mod noise;
mod plan;
mod real_programs;
mod savings;
mod stop;
mod report;
mod servers;
mod strace_import;
mod util;
mod run;
mod verify;
