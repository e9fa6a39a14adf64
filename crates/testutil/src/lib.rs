//! What the Rust tests of every crate share (a dev-dependency only; it
//! depends on no crate of the workspace, so dependencies run one way).
//!
//! - The fail-closed rule of docs/TESTING.md: a test that lacks a
//!   capability skips, saying so, unless the capability is required --
//!   named in `SYSCLUSTER_REQUIRE` (comma-separated) or `CI=true`, where
//!   every capability is -- and then it fails.  The same rule as
//!   tests/lib/require.h (C) and tests/lib/require.sh (shell).
//! - Building a small C program the test controls ([`cc`]), so that a
//!   test states the fact it needs of a program (stripped, exported
//!   symbols, frame pointers) instead of assuming it of the host's.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether `cap` is required, given the values of `SYSCLUSTER_REQUIRE` and
/// `CI` (None: unset).  Names in the list are compared whole, as
/// tests/lib/require.h and require.sh compare them.
pub fn required_by(cap: &str, require: Option<&str>, ci: Option<&str>) -> bool {
    ci == Some("true") || require.is_some_and(|l| l.split(',').any(|c| c == cap))
}

/// Whether `cap` is required in this test run's environment.
pub fn required(cap: &str) -> bool {
    let list = std::env::var("SYSCLUSTER_REQUIRE").ok();
    let ci = std::env::var("CI").ok();
    required_by(cap, list.as_deref(), ci.as_deref())
}

/// A capability the test needs is missing: fails the test (`CAP required:
/// WHY`) where it is required, else says `SKIP CAP: WHY` on stderr and
/// returns, and the caller skips what needs it.
pub fn need(cap: &str, why: &str) {
    let list = std::env::var("SYSCLUSTER_REQUIRE").ok();
    let ci = std::env::var("CI").ok();
    need_by(cap, why, list.as_deref(), ci.as_deref());
}

/// [`need`] with the environment's values given.
fn need_by(cap: &str, why: &str, require: Option<&str>, ci: Option<&str>) {
    assert!(!required_by(cap, require, ci), "{cap} required: {why}");
    eprintln!("SKIP {cap}: {why}");
}

/// `present`, after [`need`] where it is false: `if have("bpf", is_root(),
/// "BPF needs root") { … }` runs the part that needs BPF where it can, and
/// fails where BPF is required and missing.
pub fn have(cap: &str, present: bool, why: &str) -> bool {
    if !present {
        need(cap, why);
    }
    present
}

/// Whether the tests run as root (CI does: what needs root must run there).
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail and touches no memory of ours.
    unsafe { geteuid() == 0 }
}

extern "C" {
    fn geteuid() -> u32;
}

/// A program on `PATH` (or in /usr/bin, /usr/sbin, which a user's PATH may
/// lack), found at run time.
pub fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A program the test may do without ([`on_path`]), or None after
/// [`need`]`(name, …)`: `package` names the Debian package that provides it.
pub fn program(name: &str, package: &str) -> Option<PathBuf> {
    let found = on_path(name);
    if found.is_none() {
        need(name, &format!("{name} is missing (Debian package {package}; scripts/install-deps.sh installs it)"));
    }
    found
}

/// Builds the C source `src` into `out` with `$CC` (default `cc`) and
/// `flags`; panics, with the compiler's messages, where it fails.  A test
/// that reaps children with waitpid(-1) holds its own lock around it.
pub fn cc(src: &Path, out: &Path, flags: &[&str]) -> PathBuf {
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let o = Command::new(&compiler)
        .args(flags)
        .arg("-o")
        .arg(out)
        .arg(src)
        .env_remove("MAKEFLAGS")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(o.status.success(), "{compiler} {flags:?} {}: {}", src.display(), String::from_utf8_lossy(&o.stderr));
    out.to_path_buf()
}

/// Writes `text` to `dir/NAME.c` and builds it into `dir/NAME` ([`cc`]).
pub fn cc_text(dir: &Path, name: &str, text: &str, flags: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, text).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    cc(&src, &dir.join(name), flags)
}

/// Runs `tool args… path` (`strip`, `objcopy`) on a program; panics where
/// it fails.
pub fn transform(tool: &str, args: &[&str], path: &Path) {
    let o = Command::new(tool).args(args).arg(path).output().unwrap_or_else(|e| panic!("cannot run {tool}: {e}"));
    assert!(o.status.success(), "{tool} {args:?} {}: {}", path.display(), String::from_utf8_lossy(&o.stderr));
}

#[cfg(test)]
mod tests {
    use super::{need_by, required_by};

    #[test]
    fn a_capability_is_required_where_listed_or_under_ci() {
        assert!(!required_by("bpf", None, None));
        assert!(required_by("bpf", Some("bpf"), None));
        assert!(required_by("bpf", Some("tmpfs,bpf,uring"), None));
        assert!(!required_by("bpf", Some("tmpfs,uring"), None));
        assert!(!required_by("bpf", Some("bpfx,xbpf,bp"), None), "names compare whole");
        assert!(!required_by("bpf", Some(""), None));
        assert!(required_by("bpf", None, Some("true")));
        assert!(required_by("bpf", Some("tmpfs"), Some("true")), "CI requires every capability");
        assert!(!required_by("bpf", None, Some("false")));
        assert!(!required_by("bpf", None, Some("1")), "CI=true, as GitHub and GitLab set it");
    }

    #[test]
    fn a_missing_capability_fails_where_required_and_skips_elsewhere() {
        need_by("tmpfs", "mounting needs root", Some("bpf"), None);
        need_by("tmpfs", "mounting needs root", None, None);
        for (list, ci) in [(Some("bpf,tmpfs"), None), (None, Some("true"))] {
            let failed = std::panic::catch_unwind(|| need_by("tmpfs", "mounting needs root", list, ci));
            let msg = failed.expect_err("a required capability must fail the test");
            let msg = msg.downcast_ref::<String>().expect("assert! with a message");
            assert_eq!(msg, "tmpfs required: mounting needs root");
        }
    }
}
