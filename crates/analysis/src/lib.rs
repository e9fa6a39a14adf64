//! Pure functions over syscall events and graphs: building a profile from
//! events, TNV value profiles, I/O patterns, hot sequences, merging.

pub mod builder;
pub mod descriptors;
pub mod io;
pub mod merge;
pub mod sequences;
pub mod tnv;

pub use builder::{BuilderOptions, ProfileBuilder, RawKey};
