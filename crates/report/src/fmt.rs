//! Number and text formatting shared by the renderings.

/// 1234567 → "1,234,567".
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Nanoseconds as a short duration: "850 ns", "12.3 µs", "4.56 ms", "1.23 s".
pub fn duration(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", f / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", f / 1e6)
    } else {
        format!("{:.2} s", f / 1e9)
    }
}

/// Bytes as "512 B", "4.0 KiB", "64.0 MiB".
pub fn bytes(n: u64) -> String {
    let f = n as f64;
    if n < 1024 {
        format!("{n} B")
    } else if n < 1 << 20 {
        format!("{:.1} KiB", f / 1024.0)
    } else if n < 1 << 30 {
        format!("{:.1} MiB", f / 1048576.0)
    } else {
        format!("{:.1} GiB", f / 1073741824.0)
    }
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
        assert_eq!(duration(850), "850 ns");
        assert_eq!(duration(1_500_000), "1.50 ms");
        assert_eq!(bytes(4096), "4.0 KiB");
        assert_eq!(fit_end("/a/very/long/path", 8), "…ng/path");
        assert_eq!(fit("abcdef", 4), "abc…");
    }
}
