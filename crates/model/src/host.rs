//! The description of a host: what the advisor needs to know about the
//! machine a program is to run on besides its costs -- which machine it is,
//! and which of libmulticall's backends and the vDSO a program may use
//! there. `syscluster_calibrate::host` reads it off this machine; `advise
//! --host FILE` reads a stored one, so that advice is reproducible from
//! files (profile, calibration, host). docs/ADVICE.md describes the fields.
//!
//! It is kept apart from the calibration: the calibration is measured once
//! per machine and cached, while these facts change without the machine
//! changing (a module loaded, a sysctl set, another user's groups) and cost
//! nothing to read, so they are read afresh for every advice.

use crate::calibration::Machine;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The version this build writes and reads.
pub const HOST_VERSION: u32 = 1;

/// The device of libmulticall's kernel-module backend.
pub const KMOD_DEVICE: &str = "/dev/multicall";

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Host {
    pub host_version: u32,
    /// The identity a calibration must have to be used for this host.
    pub machine: Machine,
    /// Whether a process (of the user who described the host) may use
    /// io_uring: the kernel's `io_uring_disabled` and `io_uring_group`
    /// sysctls and CAP_SYS_ADMIN, read as the kernel reads them.
    pub uring: bool,
    /// libmulticall's kernel module.
    pub kmod: Kmod,
    /// Whether the kernel maps a vDSO into processes (glibc's clocks then
    /// make no system call).
    pub vdso: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Kmod {
    /// Its device.
    pub device: String,
    /// Whether that device is the module: a character device answering the
    /// module's version ioctl with the ABI version libmulticall speaks.
    pub usable: bool,
}

impl Host {
    /// Reads a host description; one line saying what is wrong otherwise.
    pub fn load(path: &Path) -> Result<Host, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read host description {}: {e}", path.display()))?;
        let bad = |why: String| format!("bad host description {}: {why}", path.display());
        let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| bad(format!("invalid JSON: {e}")))?;
        match v.get("host_version").and_then(|x| x.as_u64()) {
            None => return Err(bad("no host_version".into())),
            Some(n) if n != HOST_VERSION as u64 => {
                return Err(bad(format!("host_version {n}, this syscluster reads {HOST_VERSION}")))
            }
            Some(_) => {}
        }
        serde_json::from_value(v).map_err(|e| bad(e.to_string()))
    }

    /// The description as JSON, one field a line, with a final newline.
    pub fn to_json(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).expect("a host description serializes");
        v.push(b'\n');
        v
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        crate::profile::write_atomically(path, &self.to_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        Host {
            host_version: HOST_VERSION,
            machine: Machine { arch: "x86_64".into(), kernel: "6.1.0 #1".into(), cpu: "cpu".into(), cpus: 2 },
            uring: true,
            kmod: Kmod { device: KMOD_DEVICE.into(), usable: false },
            vdso: true,
        }
    }

    #[test]
    fn round_trip_and_bad_files() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("host.json");
        host().save(&p).unwrap();
        assert_eq!(Host::load(&p).unwrap(), host());
        let e = Host::load(&d.path().join("missing.json")).unwrap_err();
        assert!(e.starts_with("cannot read host description"), "{e}");
        std::fs::write(&p, "{").unwrap();
        assert!(Host::load(&p).unwrap_err().contains("invalid JSON"));
        std::fs::write(&p, r#"{"host_version": 7}"#).unwrap();
        assert!(Host::load(&p).unwrap_err().contains("host_version 7"));
        let mut v: serde_json::Value = serde_json::from_slice(&host().to_json()).unwrap();
        v["kmod"]["usable"] = "yes".into();
        std::fs::write(&p, v.to_string()).unwrap();
        let e = Host::load(&p).unwrap_err();
        assert!(e.starts_with("bad host description") && !e.contains('\n'), "{e}");
    }
}
