//! Integration tests of the `syscluster` command on real programs: one
//! binary, one module per area.

mod advise;
mod backends;
mod bad_input;
mod html;
mod kmod_gen;
mod langs;
mod noise;
mod plan;
mod real_programs;
mod report;
mod run;
mod savings;
mod servers;
mod stop;
mod strace_import;
mod util;
mod verify;
