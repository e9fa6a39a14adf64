//! Unwind tables of libc and the dynamic loader, and the user-space unwinder.
//!
//! PLACEHOLDER: filled in by the code-location work.
