//! The ptrace backend. PLACEHOLDER: filled in by the ptrace work.

use crate::{ExitStatus, RecordError, RecordOptions, Sink};
use std::ffi::OsString;

pub fn record(_argv: &[OsString], _opts: &RecordOptions, _sink: &mut Sink) -> Result<ExitStatus, RecordError> {
    Err(RecordError::Backend("the ptrace backend is not built yet".into()))
}
