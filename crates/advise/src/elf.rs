//! The GNU build-id of an ELF file: what a plan's consumer compares to tell
//! that a module is the one the profile was recorded from.

use object::Object;
use std::path::Path;

/// The build-id as lowercase hex; `Ok(None)` for an ELF file without one.
pub fn build_id(path: &Path) -> Result<Option<String>, String> {
    let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let file = object::File::parse(&*data)
        .map_err(|e| format!("{} is not an ELF file: {e}", path.display()))?;
    let id = file
        .build_id()
        .map_err(|e| format!("bad notes in {}: {e}", path.display()))?;
    Ok(id.map(|b| b.iter().map(|x| format!("{x:02x}")).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_build_id_of_a_real_program() {
        // Debian builds its binaries with build-ids; `file` prints the same hex.
        let exe = std::env::current_exe().unwrap();
        let id = build_id(&exe).unwrap();
        if let Some(id) = &id {
            assert!(
                id.len() >= 16 && id.chars().all(|c| c.is_ascii_hexdigit()),
                "{id}"
            );
        }
        let sh = build_id(Path::new("/bin/sh"))
            .unwrap()
            .expect("Debian's /bin/sh has a build-id");
        assert_eq!(sh.len(), 40, "a SHA-1 build-id: {sh}");
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x");
        std::fs::write(&p, b"not elf").unwrap();
        assert!(build_id(&p).unwrap_err().contains("not an ELF file"));
        assert!(build_id(&d.path().join("missing"))
            .unwrap_err()
            .contains("cannot read"));
    }
}
