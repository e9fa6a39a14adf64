//! Where the preload library is.

use crate::RunError;
use std::path::{Path, PathBuf};

/// The file name of the preload library.
pub const LIBRARY_NAME: &str = "libsyscluster-preload.so";

/// Finds the preload library, in this order:
///
/// 1. `explicit` (an override: it must exist, nothing else is tried);
/// 2. `$SYSCLUSTER_PRELOAD`;
/// 3. installed next to the running executable: `BIN/../lib/syscluster/`
///    then `BIN/` itself;
/// 4. the one this crate's build script built: `preload/build/` of the
///    source tree it was built from.
///
/// Each candidate must exist; the first that does is returned.
pub fn find_library(explicit: Option<&Path>) -> Result<PathBuf, RunError> {
    if let Some(p) = explicit {
        // Asked for by name: that one or an error, never another.
        return match p.is_file() {
            true => Ok(p.canonicalize().unwrap_or_else(|_| p.to_path_buf())),
            false => Err(RunError::Library(format!("the runtime library {} does not exist", p.display()))),
        };
    }
    let mut tried = Vec::new();
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("SYSCLUSTER_PRELOAD").filter(|p| !p.is_empty()) {
        candidates.push(PathBuf::from(p));
    }
    if let Some(dir) = std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)) {
        candidates.push(dir.join("../lib/syscluster").join(LIBRARY_NAME));
        candidates.push(dir.join(LIBRARY_NAME));
    }
    candidates.push(PathBuf::from(env!("SYSCLUSTER_PRELOAD_BUILT")));
    for c in candidates {
        if c.is_file() {
            // LD_PRELOAD takes absolute paths best (the program may chdir).
            return Ok(c.canonicalize().unwrap_or(c));
        }
        tried.push(c.display().to_string());
    }
    Err(RunError::Library(format!(
        "cannot find the runtime library {LIBRARY_NAME} (tried {}); build it with `make -C preload` or set SYSCLUSTER_PRELOAD",
        tried.join(", ")
    )))
}
