//! The BPF backend. PLACEHOLDER: filled in by the BPF work.

use crate::{ExitStatus, RecordError, RecordOptions, Sink};
use std::ffi::OsString;

pub fn record(_argv: &[OsString], _opts: &RecordOptions, _sink: &mut Sink) -> Result<ExitStatus, RecordError> {
    Err(RecordError::BpfUnavailable("the BPF backend is not built yet".into()))
}
