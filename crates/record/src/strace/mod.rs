//! strace import
