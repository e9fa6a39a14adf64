//! Facts about this machine: what a profile's `meta` and a calibration's
//! identity record.
//!
//! The identity a calibration is tied to, `kernel` and `cpu`, is the one
//! libmulticall computes (`__mc_machine_identity` in
//! libmulticall/src/calib.c; `mc-calibrate --machine` prints it): the kernel
//! as `uname -srv` prints it, and the CPU's brand string.  Both sides read
//! the same sources the same way, so that a calibration either is this
//! machine's for both or for neither; a test compares them.

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// Kernel name, release and version, as `uname -srv` prints them
/// ("Linux 6.1.0-13-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.55-1").
pub fn kernel() -> String {
    let name = read_trim("/proc/sys/kernel/ostype").unwrap_or_else(|| "Linux".into());
    let release = read_trim("/proc/sys/kernel/osrelease").unwrap_or_default();
    let version = read_trim("/proc/sys/kernel/version").unwrap_or_default();
    format!("{name} {release} {version}").trim().to_string()
}

/// The CPU's brand string: CPUID's on x86 (leading and trailing blanks
/// dropped), elsewhere the first `model name` or `CPU part` of
/// /proc/cpuinfo, else "unknown".
pub fn cpu_model() -> String {
    if let Some(brand) = cpuid_brand() {
        return brand;
    }
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    info.lines()
        .filter(|l| l.starts_with("model name") || l.starts_with("CPU part"))
        .find_map(|l| l.split_once(':'))
        .map(|(_, m)| m.trim_start_matches([' ', '\t']).to_string())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(target_arch = "x86_64")]
fn cpuid_brand() -> Option<String> {
    use std::arch::x86_64::__cpuid;
    // SAFETY: CPUID exists on every x86_64 CPU and only reads registers.
    #[allow(unused_unsafe)]
    let max = unsafe { __cpuid(0x8000_0000) }.eax;
    if max < 0x8000_0004 {
        return None;
    }
    let mut bytes = Vec::with_capacity(48);
    for leaf in 0x8000_0002u32..=0x8000_0004 {
        #[allow(unused_unsafe)]
        let r = unsafe { __cpuid(leaf) };
        for word in [r.eax, r.ebx, r.ecx, r.edx] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
    }
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let brand = String::from_utf8_lossy(&bytes[..end]);
    Some(brand.trim_start_matches(' ').trim_end_matches(' ').to_string())
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_brand() -> Option<String> {
    None
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
