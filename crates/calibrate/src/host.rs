//! The description of this host (`syscluster_model::host::Host`): which
//! machine it is, and which of libmulticall's backends and the vDSO a
//! program may use here, decided as the kernel and the library decide: io_uring by the `io_uring_disabled`
//! sysctl read as the kernel's `io_uring_allowed()` reads it, the kernel
//! module by the device answering the module's version ioctl (what
//! `mc_ctx_init(MC_BACKEND_KMOD)` asks).

use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;
use syscluster_model::calibration::Machine;
use syscluster_model::host::{Host, Kmod, HOST_VERSION};

/// This host, with libmulticall's kernel module looked for at `kmod_device`.
pub fn describe(kmod_device: &Path) -> Host {
    Host {
        host_version: HOST_VERSION,
        machine: Machine::here(),
        uring: uring_usable(),
        kmod: Kmod { device: kmod_device.display().to_string(), usable: kmod_usable(kmod_device) },
        vdso: vdso_present(),
    }
}

/// Whether the kernel maps a vDSO into this process.
pub fn vdso_present() -> bool {
    // SAFETY: getauxval has no preconditions.
    unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) != 0 }
}

/// `MC_ABI_VERSION` of `libmulticall/include/multicall.h`.
pub const MC_ABI_VERSION: i32 = 1;
/// `MC_IOC_VERSION` of `libmulticall/include/multicall.h`: `_IO('M', 0)`.
pub const MC_IOC_VERSION: u64 = (b'M' as u64) << 8;

/// Whether the kernel lets a process use io_uring, by the rule of its
/// `io_uring_allowed()`: `io_uring_disabled` 0 lets everyone, 2 no one, 1
/// only a process with CAP_SYS_ADMIN or in the group `io_uring_group` (-1:
/// no group). A kernel without the sysctl lets everyone.
pub fn uring_allowed(
    disabled: Option<&str>,
    group: Option<&str>,
    cap_sys_admin: bool,
    in_group: impl Fn(u32) -> bool,
) -> bool {
    match disabled.map(str::trim) {
        None | Some("0") => true,
        Some("1") => {
            cap_sys_admin
                || group
                    .and_then(|g| g.trim().parse::<i64>().ok())
                    .and_then(|g| u32::try_from(g).ok())
                    .is_some_and(in_group)
        }
        _ => false,
    }
}

/// Whether this process may use io_uring.
pub fn uring_usable() -> bool {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let disabled = read("/proc/sys/kernel/io_uring_disabled");
    let group = read("/proc/sys/kernel/io_uring_group");
    uring_allowed(disabled.as_deref(), group.as_deref(), cap_sys_admin(), in_group)
}

/// CAP_SYS_ADMIN (bit 21) in this process's effective capabilities.
fn cap_sys_admin() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("CapEff:")).and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .is_some_and(|caps| caps & (1 << 21) != 0)
}

/// Whether gid is this process's effective group or a supplementary one.
fn in_group(gid: u32) -> bool {
    // SAFETY: getegid has no preconditions; getgroups writes at most `n`
    // entries into a buffer of `n`.
    unsafe {
        if libc::getegid() == gid {
            return true;
        }
        let n = libc::getgroups(0, std::ptr::null_mut());
        if n <= 0 {
            return false;
        }
        let mut groups = vec![0 as libc::gid_t; n as usize];
        let n = libc::getgroups(n, groups.as_mut_ptr());
        n > 0 && groups[..n as usize].contains(&gid)
    }
}

/// Whether `path` is the multicall kernel module: a character device that
/// answers `MC_IOC_VERSION` with the ABI version libmulticall speaks. A
/// bare node of that name is not (the library refuses it too).
pub fn kmod_usable(path: &Path) -> bool {
    let Ok(f) = std::fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_CLOEXEC).open(path) else {
        return false;
    };
    if !f.metadata().is_ok_and(|m| m.file_type().is_char_device()) {
        return false;
    }
    // SAFETY: MC_IOC_VERSION takes no argument; the descriptor is open.
    unsafe { libc::ioctl(f.as_raw_fd(), MC_IOC_VERSION as _) == MC_ABI_VERSION }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_uring_disabled_1_lets_the_group_and_cap_sys_admin_in() {
        let member = |g: u32| g == 1234;
        let nobody = |_: u32| false;
        assert!(uring_allowed(Some("0\n"), Some("-1\n"), false, nobody));
        assert!(uring_allowed(None, None, false, nobody), "a kernel without the sysctl");
        // Issue 11: 1 was read as "unavailable" for everyone.
        assert!(uring_allowed(Some("1\n"), Some("1234\n"), false, member));
        assert!(uring_allowed(Some("1\n"), Some("-1\n"), true, nobody), "CAP_SYS_ADMIN");
        assert!(!uring_allowed(Some("1\n"), Some("1234\n"), false, nobody));
        assert!(!uring_allowed(Some("1\n"), Some("-1\n"), false, |_| true), "no group");
        assert!(!uring_allowed(Some("1\n"), None, false, |_| true));
        assert!(!uring_allowed(Some("2\n"), Some("1234\n"), true, member));
    }

    #[test]
    fn this_process_in_its_own_group() {
        // SAFETY: no preconditions.
        assert!(in_group(unsafe { libc::getegid() }));
    }

    #[test]
    fn a_bare_device_is_not_the_module() {
        // Issue 11: the advisor took any /dev/multicall for the module.
        assert!(!kmod_usable(Path::new("/dev/null")), "a character device that does not answer");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("multicall");
        std::fs::write(&file, b"").unwrap();
        assert!(!kmod_usable(&file), "a regular file");
        assert!(!kmod_usable(&dir.path().join("missing")));
        let h = describe(&file);
        assert!(!h.kmod.usable && h.kmod.device == file.display().to_string(), "the description: {h:?}");
    }

    #[test]
    fn this_host() {
        let h = describe(Path::new(syscluster_model::host::KMOD_DEVICE));
        assert_eq!(h.machine, Machine::here());
        assert!(h.vdso, "x86-64 Linux always maps a vDSO");
        assert_eq!(h.uring, uring_usable());
    }

    #[test]
    fn constants_are_the_headers() {
        let h = include_str!("../../../libmulticall/include/multicall.h");
        assert!(h.contains(&format!("#define MC_ABI_VERSION {MC_ABI_VERSION}\n")));
        assert!(h.contains("#define MC_IOC_VERSION _IO('M', 0)\n"));
    }
}
