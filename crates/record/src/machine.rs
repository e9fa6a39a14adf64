//! A profile's `meta` for a recording on this machine.

use syscluster_model::machine::{cpu, hostname, kernel, now_epoch};
use syscluster_model::profile::Meta;

/// A `meta` filled with what is known before recording starts.
pub fn meta(command: &[String], backend: &str, mode: &str) -> Meta {
    Meta {
        tool: format!("syscluster {}", env!("CARGO_PKG_VERSION")),
        command: command.to_vec(),
        arch: std::env::consts::ARCH.to_string(),
        kernel: kernel(),
        cpu: cpu(),
        hostname: hostname(),
        backend: backend.to_string(),
        mode: mode.to_string(),
        started_at: now_epoch(),
        runs: 1,
        ..Default::default()
    }
}
