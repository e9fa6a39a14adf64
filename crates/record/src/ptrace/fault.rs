//! Fault injection: the K-th call of one kind, as the program issues it,
//! fails with an errno or does less than it was asked.
//!
//! Spelled `CALL:ERRNO@K` (`write:ENOSPC@3`: the third `write` fails with
//! ENOSPC), `CALL:short@K` (the third `write` is asked for half its bytes,
//! at least one) or `CALL:short=N@K` (for at most N bytes). Calls are
//! counted across every thread and process of the command, from its
//! `execve`, in the order the tracer sees their entries: for one thread
//! that is the program's own order.
//!
//! An errno fault skips the call (the kernel never runs it: the number is
//! set to -1 at the entry stop) and the result register is set to -ERRNO
//! at the exit stop, so the program sees exactly what a failing kernel
//! returns. A short fault lowers the call's size argument (the first
//! argument of kind `size` in `data/syscalls_x86_64.tsv`) before the
//! kernel runs it: the short result is the kernel's own.

use super::sys;
use std::fmt;
use std::io;
use syscluster_model::{errno, syscalls};

/// What an injected fault does to its call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// The call fails with this errno without running.
    Errno(i32),
    /// The call runs with its size argument halved (`None`) or lowered to
    /// at most N.
    Short(Option<u64>),
}

/// One fault: call number `nr`, its `nth` occurrence (from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub nr: u32,
    pub nth: u64,
    pub effect: Effect,
}

impl Fault {
    /// Parses `CALL:ERRNO@K`, `CALL:short@K` or `CALL:short=N@K`; the error
    /// says what is wrong.
    pub fn parse(spec: &str) -> Result<Fault, String> {
        let bad =
            |why: &str| format!("bad fault {spec:?}: {why} (expected CALL:ERRNO@K, CALL:short@K or CALL:short=N@K)");
        let (what, nth) = spec.rsplit_once('@').ok_or_else(|| bad("no @K"))?;
        let nth: u64 = nth.parse().ok().filter(|&k| k > 0).ok_or_else(|| bad("K must be a number from 1"))?;
        let (call, effect) = what.split_once(':').ok_or_else(|| bad("no :ERRNO"))?;
        let info = syscalls::by_name(call).ok_or_else(|| bad(&format!("no system call {call:?}")))?;
        let effect = if effect == "short" {
            Effect::Short(None)
        } else if let Some(n) = effect.strip_prefix("short=") {
            Effect::Short(Some(n.parse().map_err(|_| bad("short=N needs a number of bytes"))?))
        } else if let Some(e) = errno::by_name(&effect.to_ascii_uppercase()) {
            Effect::Errno(e)
        } else {
            match effect.parse::<i32>() {
                Ok(e) if (1..4096).contains(&e) => Effect::Errno(e),
                _ => return Err(bad(&format!("unknown errno {effect:?}"))),
            }
        };
        // ERESTARTSYS and its kin (512 and up) are the kernel's own: a
        // program never sees them, and the entry code would restart the call.
        if let Effect::Errno(e @ 512..) = effect {
            return Err(bad(&format!("errno {e} is internal to the kernel")));
        }
        if matches!(effect, Effect::Short(_)) && size_arg(info.nr).is_none() {
            return Err(bad(&format!("{call} has no size argument to shorten")));
        }
        if syscalls::never_returns(info.nr)
            || info.nr == libc::SYS_execve as u32
            || info.nr == libc::SYS_execveat as u32
        {
            return Err(bad(&format!("{call} cannot be made to fail here")));
        }
        Ok(Fault { nr: info.nr, nth, effect })
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let call = syscalls::name_of(self.nr);
        match self.effect {
            Effect::Errno(e) => match errno::name(e) {
                Some(n) => write!(f, "{call}:{n}@{}", self.nth),
                None => write!(f, "{call}:{e}@{}", self.nth),
            },
            Effect::Short(None) => write!(f, "{call}:short@{}", self.nth),
            Effect::Short(Some(n)) => write!(f, "{call}:short={n}@{}", self.nth),
        }
    }
}

/// The index of the size argument of call `nr`, if it has one.
pub fn size_arg(nr: u32) -> Option<usize> {
    syscalls::by_nr(nr)?.args.iter().position(|a| a.kind == syscalls::ArgKind::Size)
}

/// The faults of one recording and how many calls of each kind were seen.
pub struct Injector {
    faults: Vec<Fault>,
    seen: Vec<u64>,
}

impl Injector {
    pub fn new(faults: &[Fault]) -> Injector {
        Injector { faults: faults.to_vec(), seen: vec![0; faults.len()] }
    }

    /// Call `nr` with `args` enters in stopped thread `tid`: injects the
    /// fault it is the occurrence of, if any. Returns the result to force
    /// at its exit (an errno fault).
    pub fn entry(&mut self, tid: i32, nr: u32, args: &[u64; 6]) -> Option<i64> {
        let mut force = None;
        for (f, seen) in self.faults.iter().zip(self.seen.iter_mut()) {
            if f.nr != nr {
                continue;
            }
            *seen += 1;
            if *seen != f.nth || force.is_some() {
                continue;
            }
            // ESRCH (killed in the stop) leaves nothing to inject into.
            match f.effect {
                Effect::Errno(e) => {
                    if set_regs(tid, |r| {
                        r.orig_rax = u64::MAX;
                        r.rax = (-(e as i64)) as u64;
                    })
                    .is_ok()
                    {
                        force = Some(-(e as i64));
                    }
                }
                Effect::Short(limit) => {
                    let i = size_arg(nr).expect("checked when parsed");
                    let asked = args[i];
                    let to = limit.map_or((asked / 2).max(asked.min(1)), |n| n.min(asked));
                    let _ = set_regs(tid, |r| *arg_reg(r, i) = to);
                }
            }
        }
        force
    }

    /// Calls of each fault's kind seen, in the order the faults were given:
    /// the fault was injected where this is at least its K.
    pub fn seen(&self) -> Vec<u64> {
        self.seen.clone()
    }
}

/// The register holding argument `i` of a call (x86_64 syscall ABI).
fn arg_reg(r: &mut libc::user_regs_struct, i: usize) -> &mut u64 {
    match i {
        0 => &mut r.rdi,
        1 => &mut r.rsi,
        2 => &mut r.rdx,
        3 => &mut r.r10,
        4 => &mut r.r8,
        _ => &mut r.r9,
    }
}

/// Changes the registers of stopped thread `tid`.
pub fn set_regs(tid: i32, change: impl FnOnce(&mut libc::user_regs_struct)) -> io::Result<()> {
    let mut r = sys::regs(tid)?;
    change(&mut r);
    if unsafe { libc::ptrace(libc::PTRACE_SETREGS, tid, 0usize, &r as *const libc::user_regs_struct) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_faults() {
        let f = Fault::parse("write:ENOSPC@3").unwrap();
        assert_eq!(f, Fault { nr: libc::SYS_write as u32, nth: 3, effect: Effect::Errno(libc::ENOSPC) });
        assert_eq!(f.to_string(), "write:ENOSPC@3");
        assert_eq!(Fault::parse("openat:enoent@1").unwrap().effect, Effect::Errno(libc::ENOENT));
        assert_eq!(Fault::parse("read:5@2").unwrap().effect, Effect::Errno(5));
        assert_eq!(Fault::parse("write:short@1").unwrap().to_string(), "write:short@1");
        assert_eq!(Fault::parse("pwrite64:short=3@7").unwrap().effect, Effect::Short(Some(3)));
        for bad in [
            "write:ENOSPC",
            "write:ENOSPC@0",
            "write:ENOSPC@x",
            "wirte:ENOSPC@1",
            "write:EBOGUS@1",
            "close:short@1",
            "exit_group:EIO@1",
            "read:ERESTARTSYS@1",
            "write@1",
        ] {
            assert!(Fault::parse(bad).is_err(), "{bad} accepted");
        }
    }
}
