//! Function names as a user reads them.
//!
//! Profiles and plans keep a function's name as the symbol table and the
//! debug info give it — mangled for Rust and C++ — because the plugin
//! matches a plan's `function` against the name the compiler uses.  What
//! is shown to a user (report, advice) goes through [`demangle`].

use std::borrow::Cow;

/// `name` demangled: Rust's legacy (`_ZN…17h<hash>E`) and v0 (`_R…`)
/// manglings without the hash, C++'s Itanium mangling (`_Z…`); any other
/// name (C's, or one that does not parse) unchanged.
pub fn demangle(name: &str) -> Cow<'_, str> {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        // `{:#}` leaves out the hash of a legacy name and the crate
        // disambiguators of a v0 name.
        return Cow::Owned(format!("{d:#}"));
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(d) = sym.demangle_with_options(&cpp_demangle::DemangleOptions::new().no_return_type()) {
                return Cow::Owned(d);
            }
        }
    }
    Cow::Borrowed(name)
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn rust_legacy_and_v0_names_lose_their_mangling_and_hash() {
        // tests/corpus/rswrite's main as its symbol table names it.
        assert_eq!(demangle("_ZN4main4main17h8da7fa642d137fc6E"), "main::main");
        // The recorder's own launch, as issue 10 saw it in every profile.
        assert_eq!(
            demangle("_ZN17syscluster_record6launch5Child5spawn17h0123456789abcdefE"),
            "syscluster_record::launch::Child::spawn"
        );
        // A v0 name from rswrite's std (`nm tests/corpus/bin/rswrite`).
        let v0 = "_RINvMNtCsgEmfK2I1SDS_4core3stre18trim_start_matchesReECsgY6Mt91CT9J_14rustc_demangle";
        assert_eq!(demangle(v0), "<str>::trim_start_matches::<&str>");
        // LLVM's suffixes after a local symbol's name do not stop it.
        assert_eq!(demangle("_ZN4main4main17h8da7fa642d137fc6E.llvm.123"), "main::main");
    }

    #[test]
    fn cpp_names_are_demangled_and_c_names_kept() {
        // libstdc++'s std::ostream::write (`nm -D libstdc++.so.6`).
        assert_eq!(demangle("_ZNSo5writeEPKcl"), "std::ostream::write(char const*, long)");
        assert_eq!(
            demangle("_ZNKSt7codecvtIDiDu11__mbstate_tE11do_encodingEv"),
            "std::codecvt<char32_t, char8_t, __mbstate_t>::do_encoding() const"
        );
        for c in ["main", "bfd_seek", "_IO_new_file_xsputn", "_Zebra", ""] {
            assert_eq!(demangle(c), c);
        }
    }
}
