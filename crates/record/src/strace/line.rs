//! One line of a strace log, split into its parts without copying.
//!
//! The forms (`strace -f -ttt -T -o LOG`; the pid and the timestamp are
//! optional, `[pid N]` is accepted too):
//!
//! ```text
//! 1234 1700000000.123456 write(1, "hi\n", 3) = 3 <0.000012>
//! 1234 1700000000.123456 read(0,  <unfinished ...>
//! 1234 1700000000.123789 <... read resumed>"x", 1) = 1 <0.000300>
//! 1234 1700000000.123999 openat(AT_FDCWD, "/x", O_RDONLY) = -1 ENOENT (No such file or directory) <0.000009>
//! 1234 1700000000.124000 exit_group(0)          = ?
//! 1234 1700000000.124001 --- SIGCHLD {si_signo=SIGCHLD, ...} ---
//! 1234 1700000000.124002 +++ exited with 0 +++
//! ```

/// What a line says.
#[derive(Debug, PartialEq)]
pub enum Body<'a> {
    /// A complete call: `name(args) = result <duration>`.
    Call { name: &'a [u8], args: &'a [u8], result: Result_<'a>, duration: Option<f64> },
    /// The first half of a call another thread's line interrupted.
    Unfinished { name: &'a [u8], args: &'a [u8] },
    /// The second half: the remaining arguments, then the result.
    Resumed { name: &'a [u8], args: &'a [u8], result: Result_<'a>, duration: Option<f64> },
    /// `--- SIGNAL ... ---`: a signal was delivered.
    Signal,
    /// `+++ exited with N +++` / `+++ killed by SIG +++`: the thread ended.
    Exit,
    /// Lines strace writes about itself (`strace: Process 12 attached`, …).
    Note,
}

/// The text after ` = `.
#[derive(Debug, PartialEq, Clone, Copy)]
pub enum Result_<'a> {
    /// `?`: the call did not return (exit_group, a killed thread).
    None,
    /// A value, possibly with an errno name: `-1 ENOENT (…)`, `3`, `0x7f…`.
    Value { value: i64, errno: Option<&'a [u8]> },
}

/// A parsed line.
#[derive(Debug, PartialEq)]
pub struct Line<'a> {
    pub pid: Option<u32>,
    /// Seconds (since the epoch with -ttt, since midnight with -tt/-t).
    pub time: Option<f64>,
    pub body: Body<'a>,
}

/// Why a line is not strace output.
pub type Error = &'static str;

fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && (s[i] == b' ' || s[i] == b'\t') {
        i += 1;
    }
    i
}

fn digits(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && s[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// Parses an unsigned decimal integer made only of digits.
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (c - b'0') as u64;
    }
    Some(v)
}

/// Parses `123.456789` as seconds.
fn parse_seconds(s: &[u8]) -> Option<f64> {
    let dot = s.iter().position(|&c| c == b'.')?;
    let whole = parse_u64(&s[..dot])?;
    let frac = &s[dot + 1..];
    let f = parse_u64(frac)?;
    Some(whole as f64 + f as f64 / 10f64.powi(frac.len() as i32))
}

/// Parses `HH:MM:SS[.frac]` as seconds since midnight.
fn parse_clock(s: &[u8]) -> Option<f64> {
    if s.len() < 8 || s[2] != b':' || s[5] != b':' {
        return None;
    }
    let h = parse_u64(&s[0..2])?;
    let m = parse_u64(&s[3..5])?;
    let rest = &s[6..];
    let sec = if rest.contains(&b'.') { parse_seconds(rest)? } else { parse_u64(rest)? as f64 };
    Some((h * 3600 + m * 60) as f64 + sec)
}

fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Index just past the `)` that closes the argument list starting at `i`
/// (after the `(`), skipping strings and nested brackets; `None` if the
/// list does not close on this line.
pub fn close_paren(s: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0u32;
    while i < s.len() {
        match s[i] {
            b'"' => {
                i += 1;
                while i < s.len() && s[i] != b'"' {
                    i += if s[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.saturating_sub(1),
            b')' => {
                if depth == 0 {
                    return Some(i + 1);
                }
                depth -= 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Parses what follows the argument list: ` = RESULT [ERRNO (text)] [<DURATION>]`.
fn parse_tail(s: &[u8]) -> Result<(Result_<'_>, Option<f64>), Error> {
    let mut i = skip_ws(s, 0);
    if i >= s.len() || s[i] != b'=' {
        return Err("expected ' = ' and a result after the arguments");
    }
    i = skip_ws(s, i + 1);
    let duration = match s.iter().rposition(|&c| c == b'<') {
        Some(lt) if s.last() == Some(&b'>') && lt > i => parse_seconds(&s[lt + 1..s.len() - 1]),
        // `<0.0` or `</tmp/x`: the duration or the -y path is cut.
        Some(lt) if lt > i => return Err("the line is cut after its result (a '<' is not closed)"),
        _ => None,
    };
    if s.get(i) == Some(&b'?') {
        return Ok((Result_::None, duration));
    }
    let neg = s.get(i) == Some(&b'-');
    let start = if neg { i + 1 } else { i };
    let (value, end) = if s[start..].starts_with(b"0x") {
        let mut j = start + 2;
        let mut v: u64 = 0;
        while j < s.len() && s[j].is_ascii_hexdigit() {
            v = v.wrapping_mul(16).wrapping_add((s[j] as char).to_digit(16).unwrap() as u64);
            j += 1;
        }
        if j == start + 2 {
            return Err("result is not a number");
        }
        (v as i64, j)
    } else {
        let j = digits(s, start);
        let v = parse_u64(&s[start..j]).ok_or("result is not a number")?;
        (v as i64, j)
    };
    let value = if neg { -value } else { value };
    let k = skip_ws(s, end);
    let errno = if k < s.len() && s[k] == b'E' {
        let e = k + s[k..].iter().take_while(|&&c| is_name_byte(c)).count();
        Some(&s[k..e])
    } else {
        None
    };
    Ok((Result_::Value { value, errno }, duration))
}

/// Parses one line (without its newline).
pub fn parse(s: &[u8]) -> Result<Line<'_>, Error> {
    let s = match s.last() {
        Some(b'\r') => &s[..s.len() - 1],
        _ => s,
    };
    let mut i = skip_ws(s, 0);
    if s[i..].starts_with(b"strace: ") || i == s.len() {
        return Ok(Line { pid: None, time: None, body: Body::Note });
    }
    let mut pid = None;
    if s[i..].starts_with(b"[pid ") {
        let a = skip_ws(s, i + 5);
        let b = digits(s, a);
        if b == a || s.get(b) != Some(&b']') {
            return Err("malformed [pid N] prefix");
        }
        pid = Some(parse_u64(&s[a..b]).ok_or("pid out of range")? as u32);
        i = skip_ws(s, b + 1);
    }
    let mut time = None;
    // Up to two leading numeric tokens: a pid, then a timestamp.
    for _ in 0..2 {
        if i >= s.len() || !s[i].is_ascii_digit() {
            break;
        }
        let end = i + s[i..].iter().take_while(|&&c| c != b' ' && c != b'\t').count();
        let tok = &s[i..end];
        if tok.contains(&b':') {
            time = Some(parse_clock(tok).ok_or("malformed clock timestamp")?);
        } else if tok.contains(&b'.') {
            time = Some(parse_seconds(tok).ok_or("malformed timestamp")?);
        } else if pid.is_none() && time.is_none() {
            pid = Some(parse_u64(tok).filter(|&p| p <= u32::MAX as u64).ok_or("pid out of range")? as u32);
        } else {
            break;
        }
        i = skip_ws(s, end);
    }
    let rest = &s[i..];
    if rest.starts_with(b"--- ") {
        return Ok(Line { pid, time, body: Body::Signal });
    }
    if rest.starts_with(b"+++ ") {
        return Ok(Line { pid, time, body: Body::Exit });
    }
    if rest.starts_with(b"<... ") {
        let n0 = 5;
        let n1 = n0 + rest[n0..].iter().take_while(|&&c| is_name_byte(c)).count();
        if n1 == n0 || !rest[n1..].starts_with(b" resumed>") {
            return Err("malformed '<... NAME resumed>'");
        }
        let a = n1 + b" resumed>".len();
        let close = close_paren(rest, a).ok_or("resumed call has no closing parenthesis")?;
        let (result, duration) = parse_tail(&rest[close..])?;
        return Ok(Line {
            pid,
            time,
            body: Body::Resumed { name: &rest[n0..n1], args: &rest[a..close - 1], result, duration },
        });
    }
    let n1 = rest.iter().take_while(|&&c| is_name_byte(c)).count();
    if n1 == 0 || rest.get(n1) != Some(&b'(') {
        return Err("expected a system call 'NAME(' or a '---'/'+++' line");
    }
    let name = &rest[..n1];
    let a = n1 + 1;
    if rest.ends_with(b"<unfinished ...>") {
        let end = rest.len() - b"<unfinished ...>".len();
        return Ok(Line { pid, time, body: Body::Unfinished { name, args: trim_end(&rest[a..end]) } });
    }
    let close = close_paren(rest, a).ok_or("the argument list does not close (truncated line?)")?;
    let (result, duration) = parse_tail(&rest[close..])?;
    Ok(Line { pid, time, body: Body::Call { name, args: &rest[a..close - 1], result, duration } })
}

fn trim_end(s: &[u8]) -> &[u8] {
    let n = s.iter().rev().take_while(|&&c| c == b' ').count();
    &s[..s.len() - n]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_call() {
        let l = parse(b"1234  1700000000.123456 write(1, \"hi)(\\\"\\n\", 3) = 3 <0.000012>").unwrap();
        assert_eq!(l.pid, Some(1234));
        assert!((l.time.unwrap() - 1700000000.123456).abs() < 1e-6);
        match l.body {
            Body::Call { name, args, result, duration } => {
                assert_eq!(name, b"write");
                assert_eq!(args, b"1, \"hi)(\\\"\\n\", 3");
                assert_eq!(result, Result_::Value { value: 3, errno: None });
                assert!((duration.unwrap() - 0.000012).abs() < 1e-9);
            }
            b => panic!("{b:?}"),
        }
    }

    #[test]
    fn error_result_and_no_return() {
        let l =
            parse(b"9 openat(AT_FDCWD, \"/x\", O_RDONLY) = -1 ENOENT (No such file or directory) <0.000009>").unwrap();
        assert!(matches!(l.body, Body::Call { result: Result_::Value { value: -1, errno: Some(b"ENOENT") }, .. }));
        let l = parse(b"9 1.5 exit_group(0)                     = ?").unwrap();
        assert!(matches!(l.body, Body::Call { result: Result_::None, .. }));
        let l = parse(b"mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f3a1c2d4000")
            .unwrap();
        assert_eq!(l.pid, None);
        assert!(matches!(l.body, Body::Call { result: Result_::Value { value: 0x7f3a1c2d4000, .. }, .. }));
    }

    #[test]
    fn unfinished_and_resumed() {
        let l = parse(b"[pid  77] 1.000001 read(0,  <unfinished ...>").unwrap();
        assert_eq!(l.pid, Some(77));
        assert_eq!(l.body, Body::Unfinished { name: b"read", args: b"0," });
        let l = parse(b"77 1.2 <... read resumed>\"x\", 1) = 1 <0.2>").unwrap();
        assert!(matches!(l.body, Body::Resumed { name: b"read", args: b"\"x\", 1", .. }));
    }

    #[test]
    fn signals_exits_and_clock_times() {
        assert_eq!(parse(b"5 1.0 --- SIGCHLD {si_signo=SIGCHLD} ---").unwrap().body, Body::Signal);
        assert_eq!(parse(b"5 1.0 +++ killed by SIGKILL +++").unwrap().body, Body::Exit);
        let l = parse(b"5 12:00:01.500000 getpid() = 5").unwrap();
        assert_eq!(l.time, Some(43201.5));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bad in [
            &b"hello world"[..],
            b"12 1.0 write(1, \"abc",
            b"12 1.0 write(1) = zz",
            b"[pid x] read()",
            b"\xff\xfe",
            b"1.2.3 read() = 0",
            b"12 1.0 <... read",
        ] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
