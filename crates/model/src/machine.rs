//! Facts about this machine: what a profile's `meta` and a calibration's
//! identity record.

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// Kernel release and version, as `uname -rv` prints them.
pub fn kernel() -> String {
    let release = read_trim("/proc/sys/kernel/osrelease").unwrap_or_default();
    let version = read_trim("/proc/sys/kernel/version").unwrap_or_default();
    format!("{release} {version}").trim().to_string()
}

/// The CPU model name.
pub fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_string())
        .unwrap_or_else(|| "unknown CPU".into())
}

/// CPUs this process may run on.
pub fn cpu_count() -> u32 {
    std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1)
}

/// CPU model and count: "AMD EPYC (2 CPUs)".
pub fn cpu() -> String {
    format!("{} ({} CPUs)", cpu_model(), cpu_count())
}

pub fn hostname() -> String {
    read_trim("/proc/sys/kernel/hostname").unwrap_or_default()
}

/// Seconds since the Unix epoch.
pub fn now_epoch() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}
