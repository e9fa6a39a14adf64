//! Fuzzing the strace importer (proptest): whatever the bytes, the parser
//! and the importer return a value or an error, never panic; and lines that
//! are strace-shaped but mangled are handled the same way. Failures proptest
//! finds are kept in proptest-regressions/ and replayed on every run.

use proptest::prelude::*;
use syscluster_analysis::BuilderOptions;
use syscluster_model::{LossCause, Profile};
use syscluster_record::strace::{import_reader, line, ImportOptions};
use syscluster_record::Sink;

/// Lines in the shapes strace writes, with fields drawn at random.
fn strace_like() -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec![
        "read",
        "write",
        "openat",
        "clone3",
        "execve",
        "exit_group",
        "bogus_call",
        "syscall_0x1c9",
        "mmap",
        "lseek",
    ]);
    let arg = prop::sample::select(vec![
        "3",
        "-1",
        "AT_FDCWD",
        "\"/tmp/x\"",
        "\"a\\\"b)\"",
        "O_RDONLY|O_CLOEXEC",
        "[1, 2]",
        "{st_mode=S_IFREG}",
        "0x7ffd",
        "NULL",
        "flags=CLONE_VM|CLONE_THREAD",
        "0644",
        "\"\\x41\\101\"...",
    ]);
    let result = prop::sample::select(vec![
        "= 0",
        "= 3",
        "= -1 ENOENT (No such file or directory)",
        "= ?",
        "= 0x7f00",
        "= -1 EBOGUS (x)",
        "=",
        "= zz",
        "",
    ]);
    let tail = prop::sample::select(vec!["", " <0.000010>", " <unfinished ...>", " <0.1"]);
    (
        1u32..70000,
        prop::option::of(1_600_000_000u64..1_800_000_000),
        name,
        prop::collection::vec(arg, 0..7),
        result,
        tail,
        any::<bool>(),
    )
        .prop_map(|(pid, ts, name, args, result, tail, resumed)| {
            let ts = ts.map(|t| format!(" {t}.{:06}", pid % 1_000_000)).unwrap_or_default();
            if resumed {
                format!("{pid}{ts} <... {name} resumed>{}) {result}{tail}", args.join(", "))
            } else {
                format!("{pid}{ts} {name}({}) {result}{tail}", args.join(", "))
            }
        })
}

fn import(bytes: &[u8], lenient: bool) -> (Result<(), String>, Profile) {
    let mut sink = Sink::new(BuilderOptions::default());
    let opts = ImportOptions { lenient, progress: false };
    let r = import_reader(bytes, "fuzz", &opts, &mut sink, None).map(drop).map_err(|e| e.to_string());
    let meta = syscluster_record::machine::meta(&[], "strace", "trace");
    let p = sink.finish(meta);
    p.validate().expect("whatever was imported is a valid profile");
    (r, p)
}

fn unparsable(p: &Profile) -> u64 {
    p.lost_events.by_cause.get(LossCause::Unparsable.as_str()).copied().unwrap_or(0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn parse_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = line::parse(&bytes);
    }

    #[test]
    fn parse_never_panics_on_strace_like_lines(l in strace_like()) {
        let _ = line::parse(l.as_bytes());
    }

    #[test]
    fn import_never_panics(lines in prop::collection::vec(strace_like(), 0..40), lenient in any::<bool>(), cut in any::<prop::sample::Index>()) {
        let text = lines.join("\n");
        let _ = import(text.as_bytes(), lenient);
        // And truncated anywhere.
        let at = cut.index(text.len() + 1);
        let _ = import(&text.as_bytes()[..at], lenient);
    }

    /// A log whose last line is cut anywhere (no newline at its end) is
    /// refused; --lenient drops that line and counts it as one loss more
    /// than the log without it.
    #[test]
    fn cut_last_line_is_refused_or_counted(lines in prop::collection::vec(strace_like(), 1..20), cut in any::<prop::sample::Index>()) {
        let text = lines.join("\n") + "\n";
        let last = text[..text.len() - 1].rfind('\n').map_or(0, |i| i + 1);
        // At least the newline goes; at least one byte of the line stays.
        let at = last + 1 + cut.index(text.len() - 1 - last);
        let cut_log = &text.as_bytes()[..at];
        prop_assert!(import(cut_log, false).0.is_err());
        let (before, p_before) = import(&text.as_bytes()[..last], true);
        let (after, p_after) = import(cut_log, true);
        if before.is_ok() {
            prop_assert!(after.is_ok());
            prop_assert_eq!(unparsable(&p_after), unparsable(&p_before) + 1);
            prop_assert_eq!(p_after.meta.total_calls, p_before.meta.total_calls);
        }
    }

    #[test]
    fn import_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = import(&bytes, true);
        let _ = import(&bytes, false);
    }
}

/// Cases found while fuzzing, kept as regressions.
#[test]
fn regressions() {
    for case in [
        &b"1 1.0 read(3,  <unfinished ...>\n1 2.0 +++ exited with 0 +++\n"[..],
        b"1 1.0 <... read resumed>) = 0\n",
        b"1 1.0 clone3({flags=CLONE_VM|CLONE_THREAD} <unfinished ...>\n2 1.1 write(1, \"x\", 1) = 1\n",
        b"1 1.0 syscall_0xffffffffffff() = 0\n",
        b"\n\n\n",
    ] {
        let _ = import(case, true);
        let _ = import(case, false);
    }
}

/// Issue 10 item 9: a last line cut inside its result (`= 3` of `= 32768`)
/// or its duration is refused, not imported with a wrong value; a line with
/// an unclosed duration is not strace output anywhere in the log.
#[test]
fn cut_results_are_refused() {
    let first = "1 1.0 openat(AT_FDCWD, \"/x\", O_RDONLY) = 4 <0.000010>\n";
    for cut in ["1 1.1 read(4, \"abc\"..., 32768) = 3", "1 1.1 read(4, \"abc\"..., 32768) = 32768 <0.0"] {
        let log = format!("{first}{cut}");
        let (r, _) = import(log.as_bytes(), false);
        let err = r.expect_err(cut);
        assert!(err.contains(":2:") && err.contains("middle of a line"), "{err}");
        assert!(!err.contains('\n'), "one line: {err}");
        // --lenient: dropped and counted, the read is not in the profile.
        let (r, p) = import(log.as_bytes(), true);
        r.expect("lenient import");
        assert_eq!(unparsable(&p), 1);
        assert!(!p.nodes.iter().any(|n| n.syscall == "read"), "the cut read is not recorded");
    }
    let log = format!("{first}1 1.1 read(4, \"abc\"..., 32768) = 32768 <0.0\n1 1.2 close(4) = 0 <0.000001>\n");
    let (r, _) = import(log.as_bytes(), false);
    let err = r.expect_err("unclosed duration");
    assert!(err.contains(":2:") && err.contains("cut after its result"), "{err}");
}
