//! Code locations of traced calls: at each call's entry stop, the unwinder
//! steps from the registers out of libc, the loader and the vDSO to the
//! program's frame (see [`crate::callsite::unwind`]).
//!
//! Each process's /proc/PID/maps is read once and kept: read again after an
//! exec, after the process maps, unmaps or re-protects code, and when an
//! address falls outside the kept maps (code mapped by a call the recorder
//! has not seen the end of).

use super::sys;
use crate::callsite::runtime::skip_modules_for;
use crate::callsite::unwind::{read_maps, walk, Callsite, Mapping, ProcessMemory, Regs, SkipModule, Unwound};
use crate::callsite::Modules;
use rustc_hash::FxHashMap;
use syscluster_analysis::ProfileBuilder;
use syscluster_model::{CodeAddr, LossCause};

struct Process {
    maps: Vec<Mapping>,
    /// The module id of each mapping, interned on first use.
    modules: Vec<Option<u32>>,
    /// The maps may no longer be true (code was mapped or unmapped).
    stale: bool,
    mem: ProcessMemory,
}

pub struct Callsites {
    skip: Vec<SkipModule>,
    procs: FxHashMap<u32, Process>,
}

impl Callsites {
    /// Fails (saying why) if the unwind tables of libc and the loader
    /// cannot be built; `program`'s language runtime, if it has one, is
    /// stepped over too.
    pub fn new(program: Option<&std::path::Path>) -> Result<Callsites, String> {
        Ok(Callsites { skip: skip_modules_for(program)?, procs: FxHashMap::default() })
    }

    /// The code location of the call thread `tid` of process `pid` is
    /// stopped at, with instruction and stack pointers `ip` and `sp`.
    /// Unwinds that fail are counted as losses; calls that libc or the
    /// loader made on their own (the stack ends there) have none.
    ///
    /// `rbp` matters only in frames whose CFA is rbp-based, rare in libc:
    /// the first walk runs without it (as 0, so that any use reads the
    /// unmapped page 0 and fails) and only then are all registers fetched.
    pub fn find(
        &mut self,
        pid: u32,
        tid: i32,
        ip: u64,
        sp: u64,
        modules: &mut Modules,
        builder: &mut ProfileBuilder,
    ) -> Option<CodeAddr> {
        let p = self.procs.entry(pid).or_insert_with(|| Process {
            maps: Vec::new(),
            modules: Vec::new(),
            stale: true,
            mem: ProcessMemory::new(pid),
        });
        // The tracee ran since the last unwind: nothing read then holds.
        p.mem.invalidate();
        let mut regs = Regs { ip, sp, bp: 0 };
        let (mut fresh, mut full_regs) = (false, false);
        loop {
            if p.stale {
                p.maps = read_maps(pid).unwrap_or_default();
                p.modules = vec![None; p.maps.len()];
                p.stale = false;
                fresh = true;
            }
            // The first frame in the program's language runtime: the
            // location when the walk cannot get past the runtime.
            let mut fallback = None;
            let found = walk(regs, &mut p.mem, &p.maps, &self.skip, &mut fallback);
            let retry = matches!(found, Err(Unwound::NoMapping { .. }) if !fresh)
                || matches!(found, Err(Unwound::Unreadable { .. }) if !full_regs);
            let found = match found {
                Err(e) if retry => Err(e),
                r => Callsite::of(r, fallback, &p.maps),
            };
            match found {
                Ok(Callsite { map: idx, offset, site }) => {
                    let module = *p.modules[idx].get_or_insert_with(|| {
                        let m = &p.maps[idx];
                        let known = modules.len();
                        let id = modules.intern(m.dev, m.ino);
                        if modules.len() > known {
                            if let Some(path) = &m.path {
                                modules.learn_path(path);
                            }
                        }
                        id
                    });
                    return Some(CodeAddr { module, offset, site });
                }
                Err(Unwound::NoMapping { .. }) if !fresh => p.stale = true,
                Err(Unwound::Unreadable { .. }) if !full_regs => match sys::regs(tid) {
                    Ok(r) => {
                        regs.bp = r.rbp;
                        full_regs = true;
                    }
                    Err(_) => break,
                },
                Err(Unwound::Outermost { .. }) => return None,
                Err(_) => break,
            }
        }
        builder.lost(LossCause::CallsiteUnknown, 1);
        None
    }

    /// Call `nr` with `args` of process `pid` returned `ret`: note whether
    /// it changed the code mappings.
    pub fn after_call(&mut self, pid: u32, nr: u32, args: &[u64; 6], ret: i64) {
        if ret < 0 {
            return;
        }
        let Some(p) = self.procs.get_mut(&pid) else { return };
        let exec = |prot: u64| prot & libc::PROT_EXEC as u64 != 0;
        let overlaps_code = |addr: u64, len: u64| {
            p.maps.iter().any(|m| m.executable && m.start < addr.saturating_add(len) && addr < m.end)
        };
        let changed = match nr as i64 {
            libc::SYS_mmap | libc::SYS_mprotect | libc::SYS_pkey_mprotect => {
                exec(args[2]) || overlaps_code(args[0], args[1])
            }
            libc::SYS_munmap | libc::SYS_mremap | libc::SYS_remap_file_pages => overlaps_code(args[0], args[1]),
            _ => false,
        };
        p.stale |= changed;
    }

    /// Process `pid` exec'd: a new image, new maps.
    pub fn exec(&mut self, pid: u32) {
        self.procs.remove(&pid);
    }

    pub fn process_exit(&mut self, pid: u32) {
        self.procs.remove(&pid);
    }
}
