//! Number and text formatting shared by every printed output (reports,
//! advice, the command line).

/// 1234567 → "1,234,567".
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Nanoseconds as a short duration: "850 ns", "12.3 µs", "4.56 ms", "1.23 s".
pub fn duration(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// Bytes as "512 B", "4 KiB", "48.8 KiB", "64 MiB": exact multiples of the
/// unit without decimals.
pub fn bytes(n: u64) -> String {
    let (unit, name) = match n {
        0..1024 => return format!("{n} B"),
        1024..1048576 => (1024u64, "KiB"),
        1048576..1073741824 => (1 << 20, "MiB"),
        _ => (1 << 30, "GiB"),
    };
    if n.is_multiple_of(unit) {
        format!("{} {name}", n / unit)
    } else {
        format!("{:.1} {name}", n as f64 / unit as f64)
    }
}

/// A run's tasks: "1 process, 4 threads", "1,024 processes, 1,024 threads".
pub fn tasks(processes: u64, threads: u64) -> String {
    format!(
        "{} process{}, {} thread{}",
        count(processes),
        if processes == 1 { "" } else { "es" },
        count(threads),
        if threads == 1 { "" } else { "s" }
    )
}

/// A share as "47.5%".
pub fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// Cuts `s` to `width` characters, keeping its end (paths) and marking the cut.
pub fn fit_end(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    let keep: String = s.chars().skip(n - (width - 1)).collect();
    format!("…{keep}")
}

/// Cuts `s` to `width` characters, keeping its start.
pub fn fit(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    let keep: String = s.chars().take(width - 1).collect();
    format!("{keep}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(count(0), "0");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(count(100), "100");
        assert_eq!(duration(850.0), "850 ns");
        assert_eq!(duration(1_500_000.0), "1.50 ms");
        assert_eq!(bytes(4096), "4 KiB");
        assert_eq!(bytes(50000), "48.8 KiB");
        assert_eq!(bytes(64 << 20), "64 MiB");
        assert_eq!(fit_end("/a/very/long/path", 8), "…ng/path");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(tasks(1, 4), "1 process, 4 threads");
        assert_eq!(tasks(1024, 1), "1,024 processes, 1 thread");
    }
}
