//! Facts about this machine for a profile's `meta`.

use syscluster_model::profile::Meta;

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// Kernel release and version, as `uname -rv` prints them.
pub fn kernel() -> String {
    let release = read_trim("/proc/sys/kernel/osrelease").unwrap_or_default();
    let version = read_trim("/proc/sys/kernel/version").unwrap_or_default();
    format!("{release} {version}").trim().to_string()
}

/// CPU model and the number of CPUs online.
pub fn cpu() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    format!("{model} ({n} CPUs)")
}

pub fn hostname() -> String {
    read_trim("/proc/sys/kernel/hostname").unwrap_or_default()
}

/// Seconds since the Unix epoch.
pub fn now_epoch() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

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
