//! The table of mapped files (modules) that code addresses refer to.
//!
//! Backends identify a mapped file by device and inode (what the kernel has
//! at hand) and learn its path separately: from /proc/PID/maps while the
//! process lives, or by matching the paths the program opened or executed.

use rustc_hash::FxHashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct Module {
    /// Device number as user space sees it (`st_dev`).
    pub dev: u64,
    pub ino: u64,
    pub path: Option<PathBuf>,
}

#[derive(Default)]
pub struct Modules {
    list: Vec<Module>,
    by_id: FxHashMap<(u64, u64), u32>,
}

/// Converts a kernel-internal device number (`MKDEV`: major << 20 | minor)
/// to the user-space encoding that `stat` returns.
pub fn dev_from_kernel(kdev: u32) -> u64 {
    let major = (kdev >> 20) as u64;
    let minor = (kdev & 0xfffff) as u64;
    libc::makedev(major as u32, minor as u32)
}

/// Converts a user-space device number (`st_dev`) to the kernel-internal
/// encoding (`MKDEV`), the inverse of [`dev_from_kernel`].
pub fn dev_to_kernel(dev: u64) -> u32 {
    (libc::major(dev) << 20) | (libc::minor(dev) & 0xfffff)
}

impl Modules {
    pub fn new() -> Modules {
        Modules::default()
    }

    /// The id of the file with user-space device `dev` and inode `ino`.
    pub fn intern(&mut self, dev: u64, ino: u64) -> u32 {
        if let Some(&id) = self.by_id.get(&(dev, ino)) {
            return id;
        }
        let id = self.list.len() as u32;
        self.list.push(Module { dev, ino, path: None });
        self.by_id.insert((dev, ino), id);
        id
    }

    /// The id of the file at `path` (which must exist), with its path known.
    pub fn intern_path(&mut self, path: &Path) -> std::io::Result<u32> {
        let md = std::fs::metadata(path)?;
        let id = self.intern(md.dev(), md.ino());
        let m = &mut self.list[id as usize];
        if m.path.is_none() {
            m.path = Some(path.to_path_buf());
        }
        Ok(id)
    }

    /// Sets the path of a module whose (dev, ino) matches; a path that no
    /// longer exists or names another file is ignored.
    pub fn learn_path(&mut self, path: &Path) {
        if let Ok(md) = std::fs::metadata(path) {
            if let Some(&id) = self.by_id.get(&(md.dev(), md.ino())) {
                let m = &mut self.list[id as usize];
                if m.path.is_none() {
                    m.path = Some(path.to_path_buf());
                }
            }
        }
    }

    /// Learns paths from a process's /proc/PID/maps (while it lives).
    /// (The one parser of the maps, [`super::unwind::read_maps`]: paths with
    /// spaces stay whole.)
    pub fn learn_from_maps(&mut self, pid: u32) {
        let Ok(maps) = super::unwind::read_maps(pid) else { return };
        for m in maps {
            if let Some(path) = m.path.filter(|p| p.starts_with("/")) {
                if !self.missing_paths() {
                    break;
                }
                self.learn_path(&path);
            }
        }
    }

    /// The id of the recorder's own executable, whose code issues the
    /// command's first execve (the launch).
    pub fn recorder(&mut self) -> Option<u32> {
        let md = std::fs::metadata(std::env::current_exe().ok()?).ok()?;
        Some(self.intern(md.dev(), md.ino()))
    }

    /// Names the module of the file at `path` by that path, even if another
    /// one (the target of a symbolic link, from /proc/PID/maps) was learned
    /// first: the name the user typed.
    pub fn prefer_path(&mut self, path: &Path) {
        if let Ok(md) = std::fs::metadata(path) {
            if let Some(&id) = self.by_id.get(&(md.dev(), md.ino())) {
                self.list[id as usize].path = Some(path.to_path_buf());
            }
        }
    }

    /// Whether some module has no path yet.
    pub fn missing_paths(&self) -> bool {
        self.list.iter().any(|m| m.path.is_none())
    }

    pub fn get(&self, id: u32) -> Option<&Module> {
        self.list.get(id as usize)
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_with_spaces_are_learned_whole() {
        // A mapped file whose path has spaces in it: the module learns the
        // whole path from /proc/self/maps, not the part before the space.
        let dir = std::env::temp_dir().join(format!("sc modules {}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a b.bin");
        std::fs::write(&path, vec![7u8; 4096]).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        use std::os::fd::AsRawFd;
        let m = unsafe { libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ, libc::MAP_PRIVATE, f.as_raw_fd(), 0) };
        assert_ne!(m, libc::MAP_FAILED);
        let md = std::fs::metadata(&path).unwrap();
        let mut mods = Modules::default();
        let id = mods.intern(md.dev(), md.ino());
        mods.learn_from_maps(std::process::id());
        let learned = mods.get(id).and_then(|m| m.path.clone());
        unsafe { libc::munmap(m, 4096) };
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(learned.as_deref(), Some(path.as_path()));
    }
}
