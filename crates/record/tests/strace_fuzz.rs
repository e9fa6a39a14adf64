//! Fuzzing the strace importer (proptest): whatever the bytes, the parser
//! and the importer return a value or an error, never panic; and lines that
//! are strace-shaped but mangled are handled the same way. Failures proptest
//! finds are kept in proptest-regressions/ and replayed on every run.

use proptest::prelude::*;
use syscluster_analysis::BuilderOptions;
use syscluster_record::strace::{import_reader, line, ImportOptions};
use syscluster_record::Sink;

/// Lines in the shapes strace writes, with fields drawn at random.
fn strace_like() -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec!["read", "write", "openat", "clone3", "execve", "exit_group", "bogus_call", "syscall_0x1c9", "mmap", "lseek"]);
    let arg = prop::sample::select(vec!["3", "-1", "AT_FDCWD", "\"/tmp/x\"", "\"a\\\"b)\"", "O_RDONLY|O_CLOEXEC", "[1, 2]", "{st_mode=S_IFREG}", "0x7ffd", "NULL", "flags=CLONE_VM|CLONE_THREAD", "0644", "\"\\x41\\101\"..."]);
    let result = prop::sample::select(vec!["= 0", "= 3", "= -1 ENOENT (No such file or directory)", "= ?", "= 0x7f00", "= -1 EBOGUS (x)", "=", "= zz", ""]);
    let tail = prop::sample::select(vec!["", " <0.000010>", " <unfinished ...>", " <0.1"]);
    (1u32..70000, prop::option::of(1_600_000_000u64..1_800_000_000), name, prop::collection::vec(arg, 0..7), result, tail, any::<bool>()).prop_map(
        |(pid, ts, name, args, result, tail, resumed)| {
            let ts = ts.map(|t| format!(" {t}.{:06}", pid % 1_000_000)).unwrap_or_default();
            if resumed {
                format!("{pid}{ts} <... {name} resumed>{}) {result}{tail}", args.join(", "))
            } else {
                format!("{pid}{ts} {name}({}) {result}{tail}", args.join(", "))
            }
        },
    )
}

fn import(bytes: &[u8], lenient: bool) {
    let mut sink = Sink::new(BuilderOptions::default());
    let opts = ImportOptions { lenient, progress: false };
    let _ = import_reader(bytes, "fuzz", &opts, &mut sink, None);
    let meta = syscluster_record::machine::meta(&[], "strace", "trace");
    let p = sink.finish(meta);
    p.validate().expect("whatever was imported is a valid profile");
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
        import(text.as_bytes(), lenient);
        // And truncated anywhere.
        let at = cut.index(text.len() + 1);
        import(&text.as_bytes()[..at], lenient);
    }

    #[test]
    fn import_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        import(&bytes, true);
        import(&bytes, false);
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
        import(case, true);
        import(case, false);
    }
}
