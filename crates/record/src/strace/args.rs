//! Argument values of a strace line: numbers, the symbols strace prints for
//! common flags, and path strings.
//!
//! strace shows what a value means rather than the value: a write's buffer
//! appears as its contents, a struct as `{...}`. Those arguments are
//! *unknown* (no value); the builder leaves them out of value profiles.

/// Splits an argument list at its top-level commas.
pub fn split(args: &[u8], mut each: impl FnMut(usize, &[u8])) {
    let mut depth = 0u32;
    let mut start = 0;
    let mut n = 0;
    let mut i = 0;
    while i < args.len() {
        match args[i] {
            b'"' => {
                i += 1;
                while i < args.len() && args[i] != b'"' {
                    i += if args[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                each(n, trim(&args[start..i]));
                n += 1;
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let last = trim(&args[start.min(args.len())..]);
    if !last.is_empty() || n > 0 {
        each(n, last);
    }
}

fn trim(s: &[u8]) -> &[u8] {
    let a = s.iter().take_while(|c| c.is_ascii_whitespace()).count();
    let b = s.iter().rev().take_while(|c| c.is_ascii_whitespace()).count();
    if a >= s.len() {
        return &[];
    }
    &s[a..s.len() - b]
}

/// Symbols strace prints for integer arguments, with their x86_64 values.
static SYMBOLS: &[(&str, i64)] = &[
    ("AT_FDCWD", -100),
    ("NULL", 0),
    ("O_RDONLY", 0),
    ("O_WRONLY", 1),
    ("O_RDWR", 2),
    ("O_CREAT", 0o100),
    ("O_EXCL", 0o200),
    ("O_NOCTTY", 0o400),
    ("O_TRUNC", 0o1000),
    ("O_APPEND", 0o2000),
    ("O_NONBLOCK", 0o4000),
    ("O_DSYNC", 0o10000),
    ("O_DIRECT", 0o40000),
    ("O_LARGEFILE", 0o100000),
    ("O_DIRECTORY", 0o200000),
    ("O_NOFOLLOW", 0o400000),
    ("O_NOATIME", 0o1000000),
    ("O_CLOEXEC", 0o2000000),
    ("O_SYNC", 0o4010000),
    ("O_PATH", 0o10000000),
    ("O_TMPFILE", 0o20200000),
    ("SEEK_SET", 0),
    ("SEEK_CUR", 1),
    ("SEEK_END", 2),
    ("SEEK_DATA", 3),
    ("SEEK_HOLE", 4),
    ("PROT_NONE", 0),
    ("PROT_READ", 1),
    ("PROT_WRITE", 2),
    ("PROT_EXEC", 4),
    ("MAP_SHARED", 1),
    ("MAP_PRIVATE", 2),
    ("MAP_FIXED", 0x10),
    ("MAP_ANONYMOUS", 0x20),
    ("MAP_DENYWRITE", 0x800),
    ("MAP_NORESERVE", 0x4000),
    ("MAP_POPULATE", 0x8000),
    ("MAP_STACK", 0x20000),
    ("F_DUPFD", 0),
    ("F_GETFD", 1),
    ("F_SETFD", 2),
    ("F_GETFL", 3),
    ("F_SETFL", 4),
    ("F_DUPFD_CLOEXEC", 1030),
    ("FD_CLOEXEC", 1),
    ("EPOLL_CLOEXEC", 0o2000000),
    ("EFD_CLOEXEC", 0o2000000),
    ("EFD_NONBLOCK", 0o4000),
    ("EFD_SEMAPHORE", 1),
    ("TFD_CLOEXEC", 0o2000000),
    ("TFD_NONBLOCK", 0o4000),
    ("SFD_CLOEXEC", 0o2000000),
    ("SFD_NONBLOCK", 0o4000),
    ("MFD_CLOEXEC", 1),
    ("AF_UNIX", 1),
    ("AF_INET", 2),
    ("AF_INET6", 10),
    ("SOCK_STREAM", 1),
    ("SOCK_DGRAM", 2),
    ("SOCK_NONBLOCK", 0o4000),
    ("SOCK_CLOEXEC", 0o2000000),
    ("CLONE_VM", 0x100),
    ("CLONE_FS", 0x200),
    ("CLONE_FILES", 0x400),
    ("CLONE_SIGHAND", 0x800),
    ("CLONE_PIDFD", 0x1000),
    ("CLONE_PTRACE", 0x2000),
    ("CLONE_VFORK", 0x4000),
    ("CLONE_PARENT", 0x8000),
    ("CLONE_THREAD", 0x10000),
    ("CLONE_NEWNS", 0x20000),
    ("CLONE_SYSVSEM", 0x40000),
    ("CLONE_SETTLS", 0x80000),
    ("CLONE_PARENT_SETTID", 0x100000),
    ("CLONE_CHILD_CLEARTID", 0x200000),
    ("CLONE_DETACHED", 0x400000),
    ("CLONE_UNTRACED", 0x800000),
    ("CLONE_CHILD_SETTID", 0x1000000),
    ("SIGCHLD", 17),
    ("AT_SYMLINK_NOFOLLOW", 0x100),
    ("AT_REMOVEDIR", 0x200),
    ("AT_SYMLINK_FOLLOW", 0x400),
    ("AT_EMPTY_PATH", 0x1000),
    ("CLOCK_REALTIME", 0),
    ("CLOCK_MONOTONIC", 1),
    ("CLOCK_PROCESS_CPUTIME_ID", 2),
    ("CLOCK_THREAD_CPUTIME_ID", 3),
    ("CLOCK_MONOTONIC_RAW", 4),
    ("CLOCK_REALTIME_COARSE", 5),
    ("CLOCK_MONOTONIC_COARSE", 6),
    ("CLOCK_BOOTTIME", 7),
    ("CLOCK_REALTIME_ALARM", 8),
    ("CLOCK_BOOTTIME_ALARM", 9),
    ("CLOCK_TAI", 11),
];

fn symbol(s: &[u8]) -> Option<i64> {
    SYMBOLS.iter().find(|(name, _)| name.as_bytes() == s).map(|(_, v)| *v)
}

/// Parses a number as strace prints it: decimal, `0x` hex, `0`-prefixed
/// octal (modes), possibly negative; trailing decoration (`3</path>` under
/// `-y`, `1024 /* … */`) is ignored.
pub fn number(s: &[u8]) -> Option<i64> {
    let (neg, s) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if s.starts_with(b"0x") {
        (16, &s[2..])
    } else if s.len() > 1 && s[0] == b'0' && s[1].is_ascii_digit() {
        (8, &s[1..])
    } else {
        (10, s)
    };
    let n = digits.iter().take_while(|c| (**c as char).is_digit(radix)).count();
    if n == 0 || n > 20 {
        return None;
    }
    let text = std::str::from_utf8(&digits[..n]).ok()?;
    let v = u64::from_str_radix(text, radix).ok()? as i64;
    Some(if neg { v.wrapping_neg() } else { v })
}

/// The value of one argument, if strace printed one.
pub fn value(s: &[u8]) -> Option<i64> {
    let first = *s.first()?;
    if first == b'-' || first.is_ascii_digit() {
        return number(s);
    }
    if first == b'"' || first == b'[' || first == b'{' || first == b'~' || first == b'&' {
        return None;
    }
    // `name=value` (clone's arguments).
    let s = match s.iter().position(|&c| c == b'=') {
        Some(eq) => {
            return value(&s[eq + 1..]);
        }
        None => s,
    };
    let mut total = 0i64;
    for part in s.split(|&c| c == b'|') {
        total |= if part.first().is_some_and(|c| c.is_ascii_digit()) { number(part)? } else { symbol(part)? };
    }
    Some(total)
}

/// Decodes a quoted strace string into `out` (escapes `\n`, `\t`, `\"`,
/// `\\`, `\xHH`, octal `\NNN`). A string strace cut short (`"…"...`)
/// decodes to its shown part. Returns false if `s` is not a string.
pub fn string(s: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    if s.first() != Some(&b'"') {
        return false;
    }
    let mut i = 1;
    while i < s.len() {
        let c = s[i];
        if c == b'"' {
            return true;
        }
        if c != b'\\' || i + 1 >= s.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let e = s[i + 1];
        i += 2;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'x' => {
                let h = s
                    .get(i..i + 2)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match h {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'x'),
                }
            }
            b'0'..=b'7' => {
                let mut v = (e - b'0') as u32;
                let mut k = 0;
                while k < 2 && i < s.len() && (b'0'..=b'7').contains(&s[i]) {
                    v = v * 8 + (s[i] - b'0') as u32;
                    i += 1;
                    k += 1;
                }
                out.push(v as u8);
            }
            other => out.push(other),
        }
    }
    true
}

/// The bytes of the `struct sockaddr` strace shows as `{sa_family=AF_INET,
/// sin_port=htons(8080), sin_addr=inet_addr("127.0.0.1")}` (also
/// `AF_INET6` with `inet_pton(AF_INET6, "::1", &sin6_addr)`, and `AF_UNIX`
/// with `sun_path="/path"` or `sun_path=@"abstract"`).
pub fn sockaddr(s: &[u8]) -> Option<Vec<u8>> {
    let s = std::str::from_utf8(s).ok()?;
    let field = |name: &str| {
        let at = s.find(name)? + name.len();
        Some(&s[at..])
    };
    let quoted = |t: &str| {
        let t = t.strip_prefix('"')?;
        Some(t[..t.find('"')?].to_string())
    };
    let port = |t: &str| t.strip_prefix("htons(")?.split(')').next()?.parse::<u16>().ok();
    let family = field("sa_family=")?;
    if family.starts_with("AF_INET6") {
        let p = port(field("sin6_port=")?)?;
        let a = field("inet_pton(AF_INET6, ")?;
        syscluster_analysis::descriptors::encode_sockaddr(10, &quoted(a)?, p)
    } else if family.starts_with("AF_INET") {
        let p = port(field("sin_port=")?)?;
        let a = field("sin_addr=inet_addr(")?;
        syscluster_analysis::descriptors::encode_sockaddr(2, &quoted(a)?, p)
    } else if family.starts_with("AF_UNIX") {
        let p = field("sun_path=")?;
        let path = match p.strip_prefix('@') {
            Some(rest) => format!("@{}", quoted(rest)?),
            None => quoted(p)?,
        };
        syscluster_analysis::descriptors::encode_sockaddr(1, &path, 0)
    } else {
        None
    }
}

/// The `int[2]` strace shows as `[3, 4]`, as bytes.
pub fn fd_pair(s: &[u8]) -> Option<Vec<u8>> {
    let s = std::str::from_utf8(s).ok()?.strip_prefix('[')?.strip_suffix(']')?;
    let mut it = s.split(',').map(|x| x.trim().parse::<i32>().ok());
    let (a, b) = (it.next()??, it.next()??);
    Some([a.to_ne_bytes(), b.to_ne_bytes()].concat())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_addresses_and_descriptor_pairs() {
        use syscluster_analysis::descriptors::format_sockaddr;
        let show = |t: &str| sockaddr(t.as_bytes()).and_then(|b| format_sockaddr(&b));
        assert_eq!(
            show(r#"{sa_family=AF_INET, sin_port=htons(8080), sin_addr=inet_addr("127.0.0.1")}"#).as_deref(),
            Some("127.0.0.1:8080")
        );
        assert_eq!(
            show(r#"{sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}"#).as_deref(),
            Some("[::1]:443")
        );
        assert_eq!(show(r#"{sa_family=AF_UNIX, sun_path="/run/x.sock"}"#).as_deref(), Some("/run/x.sock"));
        assert_eq!(show(r#"{sa_family=AF_UNIX, sun_path=@"bus"}"#).as_deref(), Some("@bus"));
        assert_eq!(show("0x7ffd1234"), None, "an address strace did not decode");
        assert_eq!(show(r#"{sa_family=AF_INET, sin_port=htons(80"#), None, "cut short");
        assert_eq!(fd_pair(b"[3, 4]"), Some([3i32.to_ne_bytes(), 4i32.to_ne_bytes()].concat()));
        assert_eq!(fd_pair(b"0x7ffc"), None);
        assert_eq!(fd_pair(b"[3]"), None);
    }

    fn args(s: &str) -> Vec<String> {
        let mut v = Vec::new();
        split(s.as_bytes(), |_, a| v.push(String::from_utf8_lossy(a).into_owned()));
        v
    }

    #[test]
    fn splits_at_top_level_commas() {
        assert_eq!(args(r#"1, "a, \"b\"", 3"#), vec!["1", r#""a, \"b\"""#, "3"]);
        assert_eq!(
            args("3, [{iov_base=\"ab\", iov_len=2}, {iov_base=\"c\", iov_len=1}], 2"),
            vec!["3", "[{iov_base=\"ab\", iov_len=2}, {iov_base=\"c\", iov_len=1}]", "2"]
        );
        assert!(args("").is_empty());
        assert_eq!(args("0"), vec!["0"]);
    }

    #[test]
    fn values() {
        assert_eq!(value(b"AT_FDCWD"), Some(-100));
        assert_eq!(value(b"O_WRONLY|O_CREAT|O_TRUNC"), Some(0o1101));
        assert_eq!(value(b"0644"), Some(0o644));
        assert_eq!(value(b"0x7ffd1000"), Some(0x7ffd1000));
        assert_eq!(value(b"-1"), Some(-1));
        assert_eq!(value(b"3</tmp/x>"), Some(3));
        assert_eq!(value(b"flags=CLONE_VM|CLONE_THREAD|SIGCHLD"), Some(0x10111));
        assert_eq!(value(b"\"hello\""), None);
        assert_eq!(value(b"{st_mode=S_IFREG}"), None);
        assert_eq!(value(b"O_RDONLY|O_WEIRD"), None);
        assert_eq!(value(b"0"), Some(0));
    }

    #[test]
    fn strings() {
        let mut out = Vec::new();
        assert!(string(br#""/tmp/a\tb\n\"q\"\x41\101""#, &mut out));
        assert_eq!(out, b"/tmp/a\tb\n\"q\"AA");
        assert!(string(br#""trunc"..."#, &mut out));
        assert_eq!(out, b"trunc");
        assert!(!string(b"3", &mut out));
    }
}
