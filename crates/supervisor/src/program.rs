//! Whether the dynamic loader will load the runtime into a program at all.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The verdict of [`check_program`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interposable {
    Yes,
    /// Why not; the program then runs unchanged.
    No(String),
}

/// Finds `cmd` as `execvp` would: a name with a slash as is, else the
/// first executable file of that name on PATH.
pub fn resolve_program(cmd: &OsStr) -> Option<PathBuf> {
    if cmd.as_bytes().contains(&b'/') {
        let p = PathBuf::from(cmd);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    std::env::split_paths(&path)
        .map(|d| if d.as_os_str().is_empty() { PathBuf::from(".").join(cmd) } else { d.join(cmd) })
        .find(|p| p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false))
}

/// How many `#!` scripts can lead to a program: the kernel follows five (a
/// sixth gives ELOOP).  The preload library's exec wrappers follow as many
/// (`preload/src/interposable.c`, `SC_MAX_SCRIPT_DEPTH`), so both reach the same
/// verdict about the same program: the number is kept once, in data/formats.tsv.
pub const MAX_SCRIPT_DEPTH: usize = syscluster_model::formats::MAX_SCRIPT_DEPTH;

/// Static executables ignore LD_PRELOAD; set-user-ID, set-group-ID and
/// file-capability programs run in secure-execution mode, where the loader
/// ignores it too.  A script is judged by its interpreter, through up to
/// [`MAX_SCRIPT_DEPTH`] scripts.
pub fn check_program(path: &Path) -> Interposable {
    let mut path = path.to_path_buf();
    for _ in 0..=MAX_SCRIPT_DEPTH {
        let Ok(meta) = path.metadata() else {
            return Interposable::Yes;
        };
        if meta.mode() & (libc::S_ISUID | libc::S_ISGID) != 0 {
            return Interposable::No(format!(
                "{} is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD",
                path.display()
            ));
        }
        if has_capabilities(&path) {
            return Interposable::No(format!(
                "{} has file capabilities: the loader ignores LD_PRELOAD",
                path.display()
            ));
        }
        match script_interpreter(&path) {
            Some(Some(i)) => {
                path = i;
                continue;
            }
            Some(None) => return Interposable::Yes,
            None => {}
        }
        return match elf_has_interp(&path) {
            Some(false) => Interposable::No(format!(
                "{} is statically linked: its system calls cannot be interposed",
                path.display()
            )),
            _ => Interposable::Yes,
        };
    }
    Interposable::Yes
}

/// For a script (`#!`), `Some(its interpreter)`, `Some(None)` when the
/// line names none; `None` for anything else.
pub fn script_interpreter(path: &Path) -> Option<Option<PathBuf>> {
    let mut head = vec![0u8; 4096];
    let n = File::open(path).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    head.truncate(n);
    if !head.starts_with(b"#!") {
        return None;
    }
    let line = head[2..].split(|&b| b == b'\n').next().unwrap_or(&[]);
    Some(line.split(|&b| b == b' ' || b == b'\t').find(|w| !w.is_empty()).map(|i| PathBuf::from(OsStr::from_bytes(i))))
}

fn has_capabilities(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    let r = unsafe { libc::getxattr(c.as_ptr(), c"security.capability".as_ptr(), std::ptr::null_mut(), 0) };
    r > 0
}

/// Some(true) if a 64-bit little-endian ELF file has a PT_INTERP program
/// header, Some(false) if it has none, None if it is not such a file.
/// Reads the ELF header and the program headers only, not the file.
fn elf_has_interp(path: &Path) -> Option<bool> {
    use std::os::unix::fs::FileExt;
    let f = File::open(path).ok()?;
    let mut ehdr = [0u8; 64];
    f.read_exact_at(&mut ehdr, 0).ok()?;
    if &ehdr[..4] != b"\x7fELF" || ehdr[4] != 2 || ehdr[5] != 1 {
        return None;
    }
    let u16at = |o: usize| u16::from_le_bytes([ehdr[o], ehdr[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(ehdr[32..40].try_into().ok()?);
    let (phentsize, phnum) = (u16at(54), u16at(56));
    if phentsize < 4 {
        return None;
    }
    let mut phdrs = vec![0u8; phentsize.checked_mul(phnum)?];
    f.read_exact_at(&mut phdrs, phoff).ok()?;
    Some(phdrs.chunks_exact(phentsize).any(|p| u32::from_le_bytes([p[0], p[1], p[2], p[3]]) == 3))
    // PT_INTERP
}
