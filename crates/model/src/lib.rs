//! The data of syscluster: the system call table, the events recorders
//! produce, and the versioned formats that pass between its stages
//! (profile, plan, calibration, host description).

pub mod calibration;
pub mod elf;
pub mod errno;
pub mod event;
pub mod fmt;
/// Generated from `data/formats.tsv` by `scripts/gen-formats.py`.
#[rustfmt::skip]
pub mod formats;
pub mod host;
pub mod inherited;
pub mod machine;
pub mod plan;
pub mod profile;
pub mod symbol;
/// Generated from `data/syscall_properties.tsv` by `scripts/gen-syscall-lists.py`.
#[rustfmt::skip]
pub mod syscall_lists;
pub mod syscalls;

pub use event::{CodeAddr, LossCause, SyscallEvent};
pub use profile::{Profile, ProfileError, FORMAT_VERSION};
