//! The GNU build-id of an ELF file: what a plan's consumer compares to tell
//! that a module is the one the profile was recorded from.

use object::Object;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The largest module (executable or library) read whole: far above any
/// real program, far below what a path to `/dev/zero` would make of it.
pub const MODULE_LIMIT: u64 = 1 << 30;

/// Opens `path` for reading only if it is a regular file of at most
/// `limit` bytes.  A plan names files, and a file named by a plan may be
/// anything: the open does not block (a FIFO without a writer would), and
/// the type is checked on the open file before a byte is read (a device
/// such as `/dev/zero` never ends).  `what` starts the messages ("plan ",
/// or "" for a module).
pub fn open_regular(what: &str, path: &Path, limit: u64) -> Result<File, String> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot read {what}{}: {e}", path.display()))?;
    let meta = f.metadata().map_err(|e| format!("cannot read {what}{}: {e}", path.display()))?;
    let t = meta.file_type();
    let kind = if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    };
    if let Some(kind) = kind {
        return Err(format!("{what}{} is {kind}, not a regular file", path.display()));
    }
    if meta.len() > limit {
        return Err(format!("{what}{} is larger than {limit} bytes ({} bytes)", path.display(), meta.len()));
    }
    Ok(f)
}

/// The contents of `path`, a regular file of at most `limit` bytes (see
/// [`open_regular`]); a file that grew past the limit while it was read is
/// refused too.
pub fn read_regular(what: &str, path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    let mut f = open_regular(what, path, limit)?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    // A buffer of the file's size and one byte more: one read for the
    // contents, one that finds the end (or the file grown past its size).
    let mut data = vec![0u8; size as usize + 1];
    let mut n = 0;
    loop {
        match f.read(&mut data[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("cannot read {what}{}: {e}", path.display())),
        }
        if n == data.len() {
            if n as u64 > limit {
                break;
            }
            data.resize(n + (n / 2).max(4096).min((limit + 1) as usize - n), 0);
        }
    }
    data.truncate(n);
    if data.len() as u64 > limit {
        return Err(format!("{what}{} grew past {limit} bytes while it was read", path.display()));
    }
    Ok(data)
}

/// The build-id as lowercase hex; `Ok(None)` for an ELF file without one.
pub fn build_id(path: &Path) -> Result<Option<String>, String> {
    let data = read_regular("", path, MODULE_LIMIT)?;
    let file = object::File::parse(&*data).map_err(|e| format!("{} is not an ELF file: {e}", path.display()))?;
    let id = file.build_id().map_err(|e| format!("bad notes in {}: {e}", path.display()))?;
    Ok(id.map(|b| b.iter().map(|x| format!("{x:02x}")).collect()))
}

/// Is the instruction that ends at `offset` of the file at `path` a
/// `syscall` (0f 05)? A call made there is a raw system call, which no
/// wrapper of a preload library ever sees (Go's runtime makes all of its
/// system calls so).
pub fn raw_syscall_at(path: &Path, offset: u64) -> bool {
    use std::os::unix::fs::FileExt;
    let mut b = [0u8; 2];
    offset >= 2
        && open_regular("", path, MODULE_LIMIT).is_ok_and(|f| f.read_exact_at(&mut b, offset - 2).is_ok())
        && b == [0x0f, 0x05]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program linked here with the build-id given to the linker
    /// (`none`: without one), so that no check depends on how the host's
    /// own programs were built.
    fn linked_with_build_id(dir: &Path, name: &str, id: &str) -> std::path::PathBuf {
        let out = dir.join(name);
        let src = dir.join("main.c");
        std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
        let st = std::process::Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .arg(format!("-Wl,--build-id={id}"))
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .status()
            .expect("a C compiler (cc) builds the test's programs");
        assert!(st.success(), "cc -Wl,--build-id={id} failed");
        out
    }

    #[test]
    fn reads_the_build_id_of_a_real_program() {
        let d = tempfile::tempdir().unwrap();
        let want = "0123456789abcdef0123456789abcdef01234567";
        let with = linked_with_build_id(d.path(), "with", &format!("0x{want}"));
        assert_eq!(build_id(&with).unwrap().as_deref(), Some(want), "the build-id the linker was given");
        let sha1 = linked_with_build_id(d.path(), "sha1", "sha1");
        let id = build_id(&sha1).unwrap().expect("linked with a SHA-1 build-id");
        assert!(id.len() == 40 && id.chars().all(|c| c.is_ascii_hexdigit()), "a SHA-1 build-id: {id}");
        let without = linked_with_build_id(d.path(), "without", "none");
        assert_eq!(build_id(&without).unwrap(), None, "linked without a build-id");
        let p = d.path().join("x");
        std::fs::write(&p, b"not elf").unwrap();
        assert!(build_id(&p).unwrap_err().contains("not an ELF file"));
        // What a plan may name instead of a module: refused before a byte is read.
        let e = build_id(Path::new("/dev/zero")).unwrap_err();
        assert!(e.contains("/dev/zero is a character device, not a regular file"), "{e}");
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = build_id(&fifo).unwrap_err(); // without O_NONBLOCK this would hang
        assert!(e.contains("is a FIFO, not a regular file"), "{e}");
        assert!(build_id(d.path()).unwrap_err().contains("is a directory"));
        std::fs::write(&p, vec![0u8; 100]).unwrap();
        assert!(read_regular("", &p, 99).unwrap_err().contains("larger than 99 bytes"));
        assert_eq!(read_regular("", &p, 100).unwrap().len(), 100);
        assert!(build_id(&d.path().join("missing")).unwrap_err().contains("cannot read"));
    }
}
