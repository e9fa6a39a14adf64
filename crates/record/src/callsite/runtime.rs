//! Language runtimes inside the program's own file: Go's runtime and
//! standard library, Rust's `std`, `core` and `alloc`. A Go program makes
//! its system calls itself (`internal/runtime/syscall/linux.Syscall6`), a
//! Rust program through `std` into libc: the first frame outside libc is
//! then the language's, never the user's. The location a user needs is
//! the first frame of their code, so the functions of these libraries are
//! stepped over like libc's, with the program's own call frame information,
//! and the rest of the file is the program's ([`CfaRule::Own`]).
//!
//! Which functions belong to the runtime is read from the symbol table;
//! a stripped program has none, and its locations stay the first frame
//! outside libc.

use super::unwind::{load_segments, CfaRule, SkipModule, UnwindTable};
use object::{Object, ObjectSymbol, SymbolKind};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The language a program's file was written in, as far as its runtime
/// matters here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    Go,
    Rust,
}

/// Rust's standard library crates (and the ones it is built from, which
/// only it links under these names).
const RUST_STD: &[&str] = &["std", "core", "alloc", "std_detect", "panic_unwind", "panic_abort"];

/// Whether the function named `name` (a symbol, or a DWARF name) belongs
/// to `lang`'s runtime or standard library.
pub fn is_runtime_function(lang: Language, name: &str) -> bool {
    match lang {
        Language::Go => go_std(name),
        Language::Rust => rust_crate(name).is_some_and(|c| RUST_STD.contains(&c)),
    }
}

/// A Go symbol (`os.(*File).Write`, `internal/poll.(*FD).Write`,
/// `main.main`, `github.com/x/y.F`) is the standard library's when its
/// package path's first element has no dot (module paths of other code
/// start with a domain name) and the package is not `main`. Compiler
/// generated symbols (`type:.eq.…`, `go:buildid`) are the runtime's.
fn go_std(name: &str) -> bool {
    if name.starts_with("type:") || name.starts_with("go:") || name.starts_with("go.") {
        return true;
    }
    // The package path ends at the first '.' after its last '/'.
    let slash = name.find(['(', '[']).map_or(name, |i| &name[..i]).rfind('/').map_or(0, |i| i + 1);
    let Some(dot) = name[slash..].find('.').map(|i| slash + i) else { return false };
    let pkg = &name[..dot];
    let first = pkg.split('/').next().unwrap_or(pkg);
    pkg != "main" && !first.contains('.') && !first.is_empty()
}

/// The crate of a Rust function: from a legacy mangled symbol
/// (`_ZN3std2io5Write9write_all17h…E`, or for a trait implementation
/// `_ZN…_$LT$std..fs..File$u20$as$u20$std..io..Write$GT$5write…`, whose
/// crate is the implementing type's) or a v0 one (`_RNv…C…3std…`).
fn rust_crate(name: &str) -> Option<&str> {
    if let Some(rest) = name.strip_prefix("_ZN") {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let len: usize = rest[..digits].parse().ok()?;
        let mut first = rest.get(digits..digits + len)?;
        // `<&mut T as …>`, `<*const T as …>`: the type's crate.
        first = first.trim_start_matches('_');
        for p in ["$LT$", "$RF$", "$BP$", "mut$u20$", "const$u20$", "dyn$u20$"] {
            while let Some(r) = first.strip_prefix(p) {
                first = r;
            }
        }
        let end = first.find("..").unwrap_or(first.len());
        return Some(&first[..end]);
    }
    if let Some(rest) = name.strip_prefix("_R") {
        // The first crate root: `C`, an optional disambiguator `s…_`,
        // then the length-prefixed name.
        let b = rest.as_bytes();
        let i = b.iter().position(|&c| c == b'C')?;
        let mut j = i + 1;
        if b.get(j) == Some(&b's') {
            j += b[j..].iter().position(|&c| c == b'_')? + 1;
        }
        let digits = b[j..].iter().take_while(|c| c.is_ascii_digit()).count();
        let len: usize = rest[j..j + digits].parse().ok()?;
        return rest.get(j + digits..j + digits + len);
    }
    // A DWARF name: a path (`std::io::Write::write_all`, `<std::fs::File
    // as std::io::Write>::write`).
    let path = name.trim_start_matches(['<', '&', '*']);
    let path = path.strip_prefix("mut ").unwrap_or(path);
    path.find("::").map(|i| &path[..i])
}

/// The language of an ELF file, from what its toolchain leaves in it: Go's
/// build information section, or a symbol of Rust's standard library.
pub fn language_of(obj: &object::File<'_>) -> Option<Language> {
    if obj.section_by_name(".go.buildinfo").is_some() || obj.section_by_name(".gopclntab").is_some() {
        return Some(Language::Go);
    }
    let rust = obj
        .symbols()
        .any(|s| s.name().is_ok_and(|n| (n.starts_with("_ZN") || n.starts_with("_R")) && rust_crate(n) == Some("std")));
    rust.then_some(Language::Rust)
}

/// The runtime functions of `obj`: sorted, merged file offset ranges.
fn runtime_ranges(obj: &object::File<'_>, lang: Language) -> Vec<(u64, u64)> {
    let loads = load_segments(obj);
    let offset = |va: u64| loads.iter().find(|&&(v, _, _, fs)| va >= v && va - v < fs).map(|&(v, o, _, _)| va - v + o);
    let mut ranges: Vec<(u64, u64)> = obj
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.is_definition() && s.size() > 0)
        .filter(|s| s.name().is_ok_and(|n| is_runtime_function(lang, n)))
        .filter_map(|s| Some((offset(s.address())?, offset(s.address())? + s.size())))
        .collect();
    ranges.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (s, e) in ranges {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

/// The program at `path` as a skip module over its language runtime, or
/// `None` when it has none this recognizes (C programs; stripped files).
pub fn runtime_module(path: &Path) -> Result<Option<(Language, SkipModule)>, String> {
    let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let Ok(obj) = object::File::parse(&*data) else { return Ok(None) };
    if obj.architecture() != object::Architecture::X86_64 {
        return Ok(None);
    }
    let Some(lang) = language_of(&obj) else { return Ok(None) };
    let ranges = runtime_ranges(&obj, lang);
    if ranges.is_empty() {
        return Ok(None);
    }
    let table = UnwindTable::from_elf_data(&data).map_err(|e| format!("{}: {e}", path.display()))?;
    let table = table.restricted_to(&ranges);
    if !table.rows.iter().any(|r| !matches!(r.cfa, CfaRule::Own | CfaRule::Unknown)) {
        return Ok(None);
    }
    let md = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Some((lang, SkipModule { path: path.to_path_buf(), runtime: true, dev: md.dev(), ino: md.ino(), table })))
}

/// libc, the loader and the vDSO, and the language runtime of `program`
/// (the recorded command's file) when it has one.
pub fn skip_modules_for(program: Option<&Path>) -> Result<Vec<SkipModule>, String> {
    let mut out = super::unwind::skip_modules()?.to_vec();
    if let Some(p) = program {
        if let Some((_, m)) = runtime_module(p)? {
            out.push(m);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_standard_library_against_user_packages() {
        for std in [
            "internal/runtime/syscall/linux.Syscall6",
            "runtime/internal/syscall.Syscall6",
            "syscall.write",
            "os.(*File).Write",
            "internal/poll.(*FD).Write",
            "bufio.(*Writer).Flush",
            "fmt.Fprintf",
            "vendor/golang.org/x/net/dns/dnsmessage.(*Parser).Start",
            "type:.eq.[2]interface {}",
            "runtime.goexit.abi0",
        ] {
            assert!(go_std(std), "{std}");
        }
        for own in [
            "main.main",
            "main.(*rec).write",
            "main.main.func1",
            "github.com/a/b.F",
            "example.com/m/pkg.(*T).M",
            "golang.org/x/sys/unix.Write",
        ] {
            assert!(!go_std(own), "{own}");
        }
    }

    #[test]
    fn rust_crates_of_mangled_and_dwarf_names() {
        assert_eq!(rust_crate("_ZN3std2io5Write9write_all17h0123456789abcdefE"), Some("std"));
        assert_eq!(
            rust_crate("_ZN60_$LT$std..fs..File$u20$as$u20$std..io..Write$GT$5write17h0123456789abcdefE"),
            Some("std")
        );
        assert_eq!(
            rust_crate("_ZN64_$LT$$RF$mut$u20$main..Rec$u20$as$u20$core..fmt..Write$GT$9write_str17hE"),
            Some("main")
        );
        assert_eq!(rust_crate("_ZN4main4main17h0123456789abcdefE"), Some("main"));
        assert_eq!(rust_crate("_RNvNtNtCs1234_3std2io5stdio6_print"), Some("std"));
        assert_eq!(rust_crate("_RNvCs5678_7mycrate4main"), Some("mycrate"));
        assert_eq!(rust_crate("<std::fs::File as std::io::Write>::write"), Some("std"));
        assert_eq!(rust_crate("core::ptr::drop_in_place<main::Rec>"), Some("core"));
        assert!(is_runtime_function(Language::Rust, "_ZN4core3fmt5write17hE"));
        assert!(!is_runtime_function(Language::Rust, "_ZN4main4main17hE"));
        assert!(!is_runtime_function(Language::Rust, "main"));
        assert!(!is_runtime_function(Language::Rust, "write"));
    }

    #[test]
    fn restricted_table_is_own_code_outside_the_runtime() {
        use crate::callsite::unwind::UnwindRow;
        let row = |pc, cfa| UnwindRow { pc, cfa, rbp_offset: None };
        let full = UnwindTable {
            rows: vec![
                row(0x100, CfaRule::Rsp(8)),
                row(0x104, CfaRule::Rsp(16)),
                row(0x180, CfaRule::Rsp(8)),
                row(0x200, CfaRule::Unknown),
            ],
        };
        let t = full.restricted_to(&[(0x102, 0x190)]);
        assert_eq!(t.lookup(0x50).unwrap().cfa, CfaRule::Own);
        assert_eq!(t.lookup(0x101).unwrap().cfa, CfaRule::Own);
        assert_eq!(t.lookup(0x102).unwrap().cfa, CfaRule::Rsp(8));
        assert_eq!(t.lookup(0x150).unwrap().cfa, CfaRule::Rsp(16));
        assert_eq!(t.lookup(0x185).unwrap().cfa, CfaRule::Rsp(8));
        assert_eq!(t.lookup(0x190).unwrap().cfa, CfaRule::Own);
        assert_eq!(t.lookup(0x1000).unwrap().cfa, CfaRule::Own);
    }

    #[test]
    fn a_rust_program_has_its_std_as_runtime_module() {
        let exe = std::env::current_exe().unwrap();
        let (lang, m) = runtime_module(&exe).unwrap().expect("this test binary links Rust's std");
        assert_eq!(lang, Language::Rust);
        assert!(m.runtime);
        assert!(m.table.rows.iter().any(|r| matches!(r.cfa, CfaRule::Rsp(_))));
        assert!(m.table.rows.iter().any(|r| r.cfa == CfaRule::Own));
    }

    #[test]
    fn c_programs_have_no_runtime_module() {
        // The recorder's libc: C, no language runtime.
        let libc = super::super::unwind::skip_modules().unwrap()[0].path.clone();
        assert!(runtime_module(&libc).unwrap().is_none());
    }
}
