//! Unwind tables of libc, the dynamic loader and the vDSO, and the
//! user-space unwinder.
//!
//! A system call is issued from inside libc (ld.so during startup, the vDSO
//! for some clocks); the code location we want is the first frame outside
//! those "skip modules". Debian's libc has no frame pointers, so their
//! frames are stepped over with their call frame information (`.eh_frame`),
//! reduced to a table simple enough for a BPF program to walk: rows sorted
//! by *file offset* (what `bpf_find_vma` gives), each saying how to find the
//! CFA (`rsp + n` or `rbp + n`) and where the caller's `rbp` was saved. On
//! x86_64 the return address always sits at CFA-8; rows where the CFI says
//! otherwise, or that need DWARF expressions, are [`CfaRule::Unknown`].
//!
//! The same algorithm runs in two places: [`find_callsite`] here (the
//! ptrace backend, against a stopped tracee) and the BPF backend's program
//! (in the kernel at `sys_enter`, with these tables in a map). Both look a
//! frame's rule up at `ip - 1`: at a call's entry `ip` follows the
//! `syscall` instruction, in outer frames it is a return address, and
//! either may be the first byte after the code the row describes.

use gimli::{BaseAddresses, CieOrFde, DebugFrame, EhFrame, LittleEndian, UnwindContext, UnwindSection, X86_64};
use object::{Object, ObjectSection, ObjectSegment};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// How many frames the unwinders step through at most before giving up
/// (libc's deepest paths to a system call, such as stdio's, take about six).
pub const MAX_FRAMES: usize = 16;

/// How to compute the canonical frame address (the caller's `rsp` at the
/// call, so the return address is at CFA-8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CfaRule {
    /// CFA = rsp + n.
    Rsp(i32),
    /// CFA = rbp + n.
    Rbp(i32),
    /// The CFI needs more than this table can say (a DWARF expression,
    /// another base register, a return address not at CFA-8), or no FDE
    /// covers the address: stop.
    Unknown,
    /// The stack ends here: the CFI marks the outermost frame (return
    /// address undefined, as at a thread's start), or this is the module's
    /// entry point, or the signal return trampoline. A call from here was
    /// made by the skipped module on its own.
    Outermost,
    /// The program's own code, in the program's file outside its language
    /// runtime and standard library (see [`super::runtime`]): the frame
    /// here is the call site.
    Own,
}

/// One row of an unwind table: from `pc` up to the next row's `pc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnwindRow {
    /// File offset of the first instruction the row covers.
    pub pc: u32,
    pub cfa: CfaRule,
    /// The caller's `rbp` is saved at CFA + n; `None`: `rbp` is unchanged.
    pub rbp_offset: Option<i32>,
}

impl UnwindRow {
    fn same_rule(&self, other: &UnwindRow) -> bool {
        self.cfa == other.cfa && self.rbp_offset == other.rbp_offset
    }
}

/// A module's unwind rows, sorted by `pc`, adjacent rows with equal rules
/// merged. Addresses before the first row or covered by an `Unknown` row
/// (gaps between FDEs included) have no rule.
#[derive(Clone, Debug, Default)]
pub struct UnwindTable {
    pub rows: Vec<UnwindRow>,
}

/// One FDE's rows, in file offsets.
struct FdeRows {
    start: u64,
    end: u64,
    rows: Vec<(u64, CfaRule, Option<i32>)>,
}

/// The PT_LOAD segments: (vaddr, file offset, memory size, file size).
pub(crate) fn load_segments(obj: &object::File<'_>) -> Vec<(u64, u64, u64, u64)> {
    obj.segments()
        .map(|s| {
            let (off, filesz) = s.file_range();
            (s.address(), off, s.size(), filesz)
        })
        .collect()
}

/// The file offset of virtual address `vaddr`, from the PT_LOAD segments.
fn vaddr_to_offset(loads: &[(u64, u64, u64, u64)], vaddr: u64) -> Option<u64> {
    loads
        .iter()
        .find(|&&(va, _, _, filesz)| vaddr >= va && vaddr - va < filesz)
        .map(|&(va, off, _, _)| vaddr - va + off)
}

/// Converts one gimli row to this table's rule; `ra` is the CIE's return
/// address column; `ra_popped`: the return address was just popped into a
/// register and still sits at CFA-8 (see [`collect_fdes`]).
fn convert_row<T: gimli::ReaderOffset>(
    row: &gimli::UnwindTableRow<T>,
    ra: gimli::Register,
    ra_popped: bool,
) -> (CfaRule, Option<i32>) {
    match row.register(ra) {
        Some(gimli::RegisterRule::Offset(-8)) => {}
        Some(gimli::RegisterRule::Register(_)) if ra_popped => {}
        Some(gimli::RegisterRule::Undefined) => return (CfaRule::Outermost, None),
        _ => return (CfaRule::Unknown, None),
    }
    let cfa = match *row.cfa() {
        gimli::CfaRule::RegisterAndOffset { register, offset } => match i32::try_from(offset) {
            Ok(off) if register == X86_64::RSP => CfaRule::Rsp(off),
            Ok(off) if register == X86_64::RBP => CfaRule::Rbp(off),
            _ => CfaRule::Unknown,
        },
        gimli::CfaRule::Expression(_) => CfaRule::Unknown,
    };
    let rbp = match row.register(X86_64::RBP) {
        None | Some(gimli::RegisterRule::SameValue) | Some(gimli::RegisterRule::Undefined) => None,
        Some(gimli::RegisterRule::Offset(off)) => match i32::try_from(off) {
            Ok(off) => Some(off),
            Err(_) => return (CfaRule::Unknown, None),
        },
        // Saved in another register or by expression: the caller's rbp is
        // lost, and a caller whose CFA is rbp-based would go wrong.
        Some(_) => return (CfaRule::Unknown, None),
    };
    (cfa, rbp)
}

/// Whether `code` is one `pop` of a 64-bit register.
fn is_pop(code: &[u8]) -> bool {
    match code {
        [b] => (0x58..=0x5f).contains(b),
        [0x41, b] => (0x58..=0x5f).contains(b),
        _ => false,
    }
}

/// Reads every FDE of `section` into `out`, rows converted to file offsets;
/// `file` is the whole file, for two system-call paths of libc's assembly
/// that the CFI alone would leave without a rule:
/// - `clone` and `clone3` end their FDE just before the `syscall`, whose
///   parent side returns normally: the FDE's last rule is extended over
///   the `syscall` instruction, which changes no stack state;
/// - `vfork` pops its return address into a register before the `syscall`
///   (CFI: "return address in rdi"), but the word stays in its slot at
///   CFA-8 until pushed back after the call (signal frames skip the red
///   zone), so at the call's entry the usual rule holds.
///
/// A malformed entry ends the section (its FDEs' ranges stay uncovered).
fn collect_fdes<'a, S: UnwindSection<gimli::EndianSlice<'a, LittleEndian>>>(
    section: &S,
    bases: &BaseAddresses,
    loads: &[(u64, u64, u64, u64)],
    file: &[u8],
    out: &mut Vec<FdeRows>,
) {
    let mut ctx = UnwindContext::new();
    let mut entries = section.entries(bases);
    while let Ok(Some(entry)) = entries.next() {
        let CieOrFde::Fde(partial) = entry else { continue };
        let Ok(fde) = partial.parse(|s, b, o| s.cie_from_offset(b, o)) else { continue };
        if fde.len() == 0 {
            continue;
        }
        let (Some(start), Some(mut end)) = (
            vaddr_to_offset(loads, fde.initial_address()),
            vaddr_to_offset(loads, fde.end_address() - 1).map(|o| o + 1),
        ) else {
            continue;
        };
        let ra = fde.cie().return_address_register();
        let mut rows = Vec::new();
        if fde.is_signal_trampoline() {
            // The signal return trampoline's one call, rt_sigreturn, has no
            // caller: the kernel entered the handler that returned here.
            rows.push((start, CfaRule::Outermost, None));
            out.push(FdeRows { start, end, rows });
            continue;
        }
        let Ok(mut table) = fde.rows(section, bases, &mut ctx) else { continue };
        let ok = loop {
            match table.next_row() {
                Ok(Some(row)) => {
                    let pc = row.start_address() - fde.initial_address() + start;
                    let popped = match (rows.last(), row.register(ra), row.cfa()) {
                        (
                            Some(&(prev_pc, CfaRule::Rsp(before), _)),
                            Some(gimli::RegisterRule::Register(_)),
                            &gimli::CfaRule::RegisterAndOffset { register: X86_64::RSP, offset },
                        ) => before as i64 == offset + 8 && file.get(prev_pc as usize..pc as usize).is_some_and(is_pop),
                        _ => false,
                    };
                    let (cfa, rbp) = convert_row(row, ra, popped);
                    rows.push((pc, cfa, rbp));
                }
                Ok(None) => break true,
                Err(_) => break false,
            }
        };
        if file.get(end as usize..end as usize + 2) == Some(&[0x0f, 0x05]) {
            end += 2;
        }
        if ok {
            out.push(FdeRows { start, end, rows });
        }
    }
}

impl UnwindTable {
    /// Builds the table of an x86_64 ELF file from its `.eh_frame`, and its
    /// `.debug_frame` where that covers what `.eh_frame` does not.
    pub fn from_elf(path: &Path) -> Result<UnwindTable, String> {
        let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        UnwindTable::from_elf_data(&data).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// [`UnwindTable::from_elf`] on the bytes of the file.
    pub fn from_elf_data(data: &[u8]) -> Result<UnwindTable, String> {
        let obj = object::File::parse(data).map_err(|e| format!("not an ELF file: {e}"))?;
        if obj.architecture() != object::Architecture::X86_64 {
            return Err(format!("unwind tables are for x86_64, this file is {:?}", obj.architecture()));
        }
        let loads = load_segments(&obj);
        let section_addr = |name: &str| obj.section_by_name(name).map(|s| s.address()).unwrap_or(0);
        let mut fdes = Vec::new();
        let eh_frame = obj.section_by_name(".eh_frame");
        let debug_frame = obj.section_by_name(".debug_frame");
        if eh_frame.is_none() && debug_frame.is_none() {
            return Err("no .eh_frame or .debug_frame".into());
        }
        if let Some(sec) = eh_frame {
            let bytes = sec.data().map_err(|e| format!(".eh_frame: {e}"))?;
            let mut eh = EhFrame::new(bytes, LittleEndian);
            eh.set_address_size(8);
            let bases = BaseAddresses::default()
                .set_eh_frame(sec.address())
                .set_eh_frame_hdr(section_addr(".eh_frame_hdr"))
                .set_text(section_addr(".text"))
                .set_got(section_addr(".got"));
            collect_fdes(&eh, &bases, &loads, data, &mut fdes);
        }
        if let Some(sec) = debug_frame {
            let bytes = sec.uncompressed_data().map_err(|e| format!(".debug_frame: {e}"))?;
            let mut df = DebugFrame::new(&bytes, LittleEndian);
            df.set_address_size(8);
            let mut extra = Vec::new();
            collect_fdes(&df, &BaseAddresses::default(), &loads, data, &mut extra);
            // Only where .eh_frame says nothing: drop FDEs overlapping one
            // of .eh_frame's (ends_upto[k]: the furthest end among the first k).
            let mut covered: Vec<(u64, u64)> = fdes.iter().map(|f| (f.start, f.end)).collect();
            covered.sort_unstable();
            let ends_upto: Vec<u64> = covered
                .iter()
                .scan(0, |m, &(_, e)| {
                    *m = e.max(*m);
                    Some(*m)
                })
                .collect();
            extra.retain(|f| {
                let k = covered.partition_point(|&(s, _)| s < f.end);
                k == 0 || ends_upto[k - 1] <= f.start
            });
            fdes.extend(extra);
        }
        let entry = vaddr_to_offset(&loads, obj.entry());
        Ok(UnwindTable::from_fdes(fdes, entry))
    }

    /// Merges FDE rows into one sorted table: gaps between FDEs get an
    /// `Unknown` row (or `Outermost` for the gap holding the entry point).
    fn from_fdes(mut fdes: Vec<FdeRows>, entry: Option<u64>) -> UnwindTable {
        fdes.sort_by_key(|f| (f.start, std::cmp::Reverse(f.end)));
        let mut rows: Vec<UnwindRow> = Vec::new();
        let push = |rows: &mut Vec<UnwindRow>, pc: u64, cfa: CfaRule, rbp: Option<i32>| {
            let Ok(pc) = u32::try_from(pc) else { return };
            let row = UnwindRow { pc, cfa, rbp_offset: rbp };
            if rows.last().is_some_and(|last| last.pc == pc) {
                rows.pop();
            }
            if !rows.last().is_some_and(|last| last.same_rule(&row)) {
                rows.push(row);
            }
        };
        let mut covered_to = 0u64;
        for (i, f) in fdes.iter().enumerate() {
            // An FDE overlapping the previous one loses its overlapped part.
            let start = f.start.max(covered_to);
            let next_start = fdes[i + 1..].iter().map(|g| g.start).find(|&s| s >= start).unwrap_or(u64::MAX);
            let end = f.end.min(next_start);
            if start >= end {
                continue;
            }
            let first = f.rows.iter().rposition(|r| r.0 <= start).unwrap_or(0);
            for (k, &(pc, cfa, rbp)) in f.rows.iter().enumerate().skip(first) {
                if pc >= end {
                    break;
                }
                push(&mut rows, if k == first { start } else { pc }, cfa, rbp);
            }
            if end < next_start {
                push(&mut rows, end, CfaRule::Unknown, None);
                // The kernel starts a module at its entry point with nothing
                // to return to: from there to the next FDE, the stack ends.
                if let Some(e) = entry.filter(|&e| e >= end && e < next_start) {
                    push(&mut rows, e, CfaRule::Outermost, None);
                }
            }
            covered_to = end;
        }
        UnwindTable { rows }
    }

    /// The row covering `file_offset`; `None` before the first row.
    pub fn lookup(&self, file_offset: u64) -> Option<&UnwindRow> {
        let i = self.rows.partition_point(|r| (r.pc as u64) <= file_offset);
        if i == 0 {
            None
        } else {
            Some(&self.rows[i - 1])
        }
    }

    /// This table over `ranges` (file offsets, sorted, not overlapping)
    /// only; everywhere else the code is the program's own
    /// ([`CfaRule::Own`]).
    pub fn restricted_to(&self, ranges: &[(u64, u64)]) -> UnwindTable {
        let mut rows: Vec<UnwindRow> = Vec::new();
        let push = |rows: &mut Vec<UnwindRow>, row: UnwindRow| {
            if rows.last().is_some_and(|l| l.pc == row.pc) {
                rows.pop();
            }
            if !rows.last().is_some_and(|l| l.same_rule(&row)) {
                rows.push(row);
            }
        };
        push(&mut rows, UnwindRow { pc: 0, cfa: CfaRule::Own, rbp_offset: None });
        for &(start, end) in ranges {
            let (Ok(s), Ok(e)) = (u32::try_from(start), u32::try_from(end)) else { continue };
            if s >= e {
                continue;
            }
            let first =
                self.lookup(start).copied().unwrap_or(UnwindRow { pc: s, cfa: CfaRule::Unknown, rbp_offset: None });
            push(&mut rows, UnwindRow { pc: s, ..first });
            let from = self.rows.partition_point(|r| r.pc <= s);
            for r in self.rows[from..].iter().take_while(|r| r.pc < e) {
                push(&mut rows, *r);
            }
            push(&mut rows, UnwindRow { pc: e, cfa: CfaRule::Own, rbp_offset: None });
        }
        UnwindTable { rows }
    }

    /// Size of the rows in memory, in bytes.
    pub fn size_bytes(&self) -> usize {
        self.rows.len() * std::mem::size_of::<UnwindRow>()
    }
}

/// A module whose frames are stepped over: libc, the dynamic loader, the
/// vDSO, and the language runtime inside the recorded program's file.
#[derive(Clone, Debug)]
pub struct SkipModule {
    pub path: PathBuf,
    /// The program itself, with only its language runtime's functions
    /// stepped over: where its frames cannot be, the first frame in it is
    /// the call site.
    pub runtime: bool,
    /// Device as user space sees it (`st_dev`; see `modules::dev_to_kernel`).
    pub dev: u64,
    pub ino: u64,
    pub table: UnwindTable,
}

impl SkipModule {
    /// The module at `path`, its table built.
    pub fn from_path(path: &Path) -> Result<SkipModule, String> {
        let md = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let table = UnwindTable::from_elf(path)?;
        Ok(SkipModule { path: path.to_path_buf(), runtime: false, dev: md.dev(), ino: md.ino(), table })
    }
}

/// libc, the dynamic loader and the vDSO of this system, whose frames are
/// skipped. Found in this process's own mappings (the recorder links the
/// same libc as the programs it traces); built once and cached. The vDSO
/// comes last, with device and inode 0 and the path `[vdso]`.
pub fn skip_modules() -> Result<&'static [SkipModule], String> {
    static SKIP: OnceLock<Result<Vec<SkipModule>, String>> = OnceLock::new();
    SKIP.get_or_init(find_skip_modules).as_ref().map(|v| v.as_slice()).map_err(|e| e.clone())
}

fn find_skip_modules() -> Result<Vec<SkipModule>, String> {
    let maps = read_maps(std::process::id()).map_err(|e| format!("/proc/self/maps: {e}"))?;
    let path_of = |addr: u64, what: &str| -> Result<PathBuf, String> {
        maps.iter()
            .find(|m| m.start <= addr && addr < m.end)
            .and_then(|m| m.path.clone())
            .ok_or_else(|| format!("cannot find the file of {what} in /proc/self/maps"))
    };
    // libc: the file holding write(); the loader: the file at AT_BASE.
    let libc_path = path_of(libc::write as *const () as usize as u64, "libc")?;
    let base = unsafe { libc::getauxval(libc::AT_BASE) };
    let mut out = vec![SkipModule::from_path(&libc_path)?];
    if base != 0 {
        let ld_path = path_of(base, "the dynamic loader")?;
        if ld_path != libc_path {
            out.push(SkipModule::from_path(&ld_path)?);
        }
    }
    // The vDSO: its clock functions make the system call themselves for
    // clocks they cannot read (CPU-time clocks, or an unstable TSC). Every
    // x86_64 process gets the same image from the kernel, so ours serves.
    let vdso = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) };
    if let Some(m) = maps.iter().find(|m| m.start == vdso && vdso != 0) {
        // SAFETY: the kernel maps the vDSO readable for the process's life.
        let image = unsafe { std::slice::from_raw_parts(m.start as usize as *const u8, (m.end - m.start) as usize) };
        let table = UnwindTable::from_elf_data(image).map_err(|e| format!("[vdso]: {e}"))?;
        out.push(SkipModule { path: PathBuf::from(VDSO), runtime: false, dev: 0, ino: 0, table });
    }
    Ok(out)
}

/// The name /proc/PID/maps gives the vDSO, a skip module without a file.
pub const VDSO: &str = "[vdso]";

impl SkipModule {
    /// Whether mapping `m` maps this module: the same file (device and
    /// inode), or for the vDSO, which has none, the same name.
    pub fn maps(&self, m: &Mapping) -> bool {
        m.path.is_some()
            && self.dev == m.dev
            && self.ino == m.ino
            && (self.ino != 0 || m.path.as_deref() == Some(self.path.as_path()))
    }
}

/// Registers at a system call's entry: `ip` is the user address after the
/// `syscall` instruction, as pt_regs and PTRACE_GETREGS give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regs {
    pub ip: u64,
    pub sp: u64,
    pub bp: u64,
}

/// The traced process's memory.
pub trait Memory {
    fn read_u64(&mut self, addr: u64) -> Option<u64>;
}

/// One line of /proc/PID/maps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub file_offset: u64,
    /// Device as user space sees it (`st_dev`).
    pub dev: u64,
    pub ino: u64,
    /// The file's path, or a pseudo name such as `[vdso]`; `None` for
    /// anonymous memory.
    pub path: Option<PathBuf>,
    pub executable: bool,
}

/// Parses /proc/PID/maps (sorted by address, as the kernel prints it).
/// Reading it costs about 40 µs: keep the result, and read it again after
/// the process maps or unmaps code (mmap, munmap, mremap, execve) or when
/// [`find_callsite`] answers [`Unwound::NoMapping`].
pub fn read_maps(pid: u32) -> std::io::Result<Vec<Mapping>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
    Ok(parse_maps(&text))
}

/// Parses the text of a /proc/PID/maps file; malformed lines are skipped.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines().filter_map(parse_maps_line).collect()
}

fn parse_maps_line(line: &str) -> Option<Mapping> {
    let mut f = line.splitn(6, ' ');
    let (range, perms, off, dev, ino) = (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
    let path = f.next().map(str::trim_start).filter(|p| !p.is_empty());
    let (start, end) = range.split_once('-')?;
    let (major, minor) = dev.split_once(':')?;
    Some(Mapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        file_offset: u64::from_str_radix(off, 16).ok()?,
        dev: libc::makedev(u32::from_str_radix(major, 16).ok()?, u32::from_str_radix(minor, 16).ok()?),
        ino: ino.parse().ok()?,
        path: path.map(PathBuf::from),
        executable: perms.as_bytes().get(2) == Some(&b'x'),
    })
}

/// Why no code location was found for a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unwound {
    /// No mapping holds this code address (the maps are stale, or the
    /// stack is corrupt).
    NoMapping { ip: u64 },
    /// The skipped module has no usable CFI row for this code address.
    NoRow { ip: u64 },
    /// The stack ends inside the skipped modules: libc or the loader made
    /// the call on its own (program startup, thread exit).
    Outermost { ip: u64 },
    /// The stack could not be read at this address.
    Unreadable { addr: u64 },
    /// More than [`MAX_FRAMES`] frames inside the skipped modules.
    TooManyFrames,
}

impl std::fmt::Display for Unwound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unwound::NoMapping { ip } => write!(f, "no mapping holds code address {ip:#x}"),
            Unwound::NoRow { ip } => write!(f, "no unwind rule for code address {ip:#x}"),
            Unwound::Outermost { ip } => write!(f, "the stack ends in libc, the loader or the vDSO at {ip:#x}"),
            Unwound::Unreadable { addr } => write!(f, "cannot read the stack at {addr:#x}"),
            Unwound::TooManyFrames => write!(f, "more than {MAX_FRAMES} frames in libc, the loader and the vDSO"),
        }
    }
}

/// Steps out of the skip modules. Returns the index in `maps` and the file
/// offset of the first return address outside them (or of `regs.ip` itself
/// if that is outside them). Every frame's rule is looked up at `ip - 1`:
/// inside the call (or `syscall`) instruction, which matters when it is the
/// last of its function.
///
/// In the program's language runtime (a [`SkipModule::runtime`] module) a
/// walk that cannot go on ends at the first frame it reached in the
/// program's file: a location in the runtime is better than none.
pub fn find_callsite(
    regs: Regs,
    mem: &mut dyn Memory,
    maps: &[Mapping],
    skip: &[SkipModule],
) -> Result<Callsite, Unwound> {
    let mut fallback = None;
    let found = walk(regs, mem, maps, skip, &mut fallback);
    Callsite::of(found, fallback, maps)
}

/// A call's location found by a walk: the frame of the user's code (the
/// mapping's index in the maps and the file offset), and the site of the
/// call into libc when that is another frame of the same file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Callsite {
    pub map: usize,
    pub offset: u64,
    /// The file offset of the first frame the walk met in the program's
    /// language runtime — the return address of the call into libc (Rust's
    /// `std` calling `write`), or the `syscall` instruction the runtime
    /// makes itself (Go) — when the location was found past it.
    pub site: Option<u64>,
}

impl Callsite {
    /// The location of a [`walk`] and its `fallback`: the walk's frame with
    /// the fallback as its site; the fallback alone when the walk failed,
    /// or went on past the runtime out of the program's file (a library
    /// that calls the runtime is not the program's code).
    pub fn of(
        found: Result<(usize, u64), Unwound>,
        fallback: Option<(usize, u64)>,
        maps: &[Mapping],
    ) -> Result<Callsite, Unwound> {
        let same_file = |a: usize, b: usize| maps[a].dev == maps[b].dev && maps[a].ino == maps[b].ino;
        match (found, fallback) {
            (Ok((map, offset)), Some((fm, fo))) if same_file(map, fm) => {
                Ok(Callsite { map, offset, site: (fo != offset).then_some(fo) })
            }
            (_, Some((map, offset))) => Ok(Callsite { map, offset, site: None }),
            (r, None) => r.map(|(map, offset)| Callsite { map, offset, site: None }),
        }
    }
}

/// [`find_callsite`] without its fallback: the walk's own result, and the
/// first frame in the program's language runtime if it reached one (for
/// callers that may retry the walk with more registers first; then
/// [`Callsite::of`]).
pub fn walk(
    regs: Regs,
    mem: &mut dyn Memory,
    maps: &[Mapping],
    skip: &[SkipModule],
    fallback: &mut Option<(usize, u64)>,
) -> Result<(usize, u64), Unwound> {
    let mut r = regs;
    for _ in 0..MAX_FRAMES {
        let probe = r.ip.wrapping_sub(1);
        let i = maps.partition_point(|m| m.start <= probe);
        let Some(idx) = i.checked_sub(1).filter(|&k| probe < maps[k].end) else {
            return Err(Unwound::NoMapping { ip: r.ip });
        };
        let m = &maps[idx];
        let offset = r.ip - m.start + m.file_offset;
        let Some(sm) = skip.iter().find(|s| s.maps(m)) else {
            return Ok((idx, offset));
        };
        if sm.runtime && fallback.is_none() {
            *fallback = Some((idx, offset));
        }
        let row = sm.table.lookup(offset - 1).ok_or(Unwound::NoRow { ip: r.ip })?;
        let cfa = match row.cfa {
            CfaRule::Own => return Ok((idx, offset)),
            CfaRule::Rsp(n) => r.sp.wrapping_add(n as i64 as u64),
            CfaRule::Rbp(n) => r.bp.wrapping_add(n as i64 as u64),
            CfaRule::Unknown => return Err(Unwound::NoRow { ip: r.ip }),
            CfaRule::Outermost => return Err(Unwound::Outermost { ip: r.ip }),
        };
        let ra_addr = cfa.wrapping_sub(8);
        let ip = mem.read_u64(ra_addr).ok_or(Unwound::Unreadable { addr: ra_addr })?;
        let bp = match row.rbp_offset {
            Some(n) => {
                let at = cfa.wrapping_add(n as i64 as u64);
                mem.read_u64(at).ok_or(Unwound::Unreadable { addr: at })?
            }
            None => r.bp,
        };
        r = Regs { ip, sp: cfa, bp };
    }
    Err(Unwound::TooManyFrames)
}

/// The memory of a stopped process, read with `process_vm_readv`. A walk
/// reads a few words going up the stack from `sp`, so each miss reads a
/// window of [`ProcessMemory::WINDOW`] bytes from just below the word asked
/// for (less where the mapping ends); the last two windows are kept. Keep one
/// per tracee and [`ProcessMemory::invalidate`] it whenever the tracee ran.
pub struct ProcessMemory {
    pid: u32,
    /// (address, bytes held) of each window; 0 bytes: empty.
    windows: [(u64, usize); 2],
    bufs: Vec<u8>,
    next: usize,
}

impl ProcessMemory {
    /// Bytes read per miss: libc's frames on the way to a call rarely span
    /// more, and one read of this size costs about what one word does.
    pub const WINDOW: usize = 1024;

    pub fn new(pid: u32) -> ProcessMemory {
        ProcessMemory { pid, windows: [(0, 0); 2], bufs: Vec::new(), next: 0 }
    }

    /// Forgets what was read (the process ran since).
    pub fn invalidate(&mut self) {
        self.windows = [(0, 0); 2];
    }

    /// Reads up to `buf.len()` bytes at `addr`; how many were read (fewer
    /// where the mapping ends: the one reader of another process's memory,
    /// [`crate::ptrace::memory::read_upto`], splits the read at pages), or
    /// `None`.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Option<usize> {
        let n = crate::ptrace::memory::read_upto(self.pid as i32, addr, buf).ok()?;
        (n > 0).then_some(n)
    }
}

impl Memory for ProcessMemory {
    fn read_u64(&mut self, addr: u64) -> Option<u64> {
        let hit = (0..2).find(|&k| {
            let (start, len) = self.windows[k];
            addr >= start && addr.checked_add(8).is_some_and(|e| e <= start + len as u64)
        });
        let k = match hit {
            Some(k) => k,
            None => {
                if self.bufs.is_empty() {
                    self.bufs = vec![0; 2 * Self::WINDOW];
                }
                let k = self.next;
                self.next ^= 1;
                self.windows[k] = (0, 0);
                let mut buf = std::mem::take(&mut self.bufs);
                // From a little below (a frame's saved rbp lies under its
                // return address), but not below the word's page.
                let start = (addr.saturating_sub(64) & !7).max(addr & !4095);
                let n = self.read(start, &mut buf[k * Self::WINDOW..(k + 1) * Self::WINDOW]);
                self.bufs = buf;
                match n {
                    Some(n) if start + n as u64 >= addr + 8 => self.windows[k] = (start, n),
                    _ => return None,
                }
                k
            }
        };
        let at = k * Self::WINDOW + (addr - self.windows[k].0) as usize;
        Some(u64::from_le_bytes(self.bufs[at..at + 8].try_into().unwrap()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_past_the_runtime_keeps_its_site_in_the_same_file() {
        let map = |start: u64, ino: u64| Mapping {
            start,
            end: start + 0x1000,
            file_offset: 0,
            dev: 1,
            ino,
            path: None,
            executable: true,
        };
        // Two mappings of the program (inode 7), one of a library (8).
        let maps = [map(0x1000, 7), map(0x2000, 7), map(0x3000, 8)];
        // C: no runtime frame met; the location is the call into libc.
        assert_eq!(Callsite::of(Ok((0, 0x10)), None, &maps), Ok(Callsite { map: 0, offset: 0x10, site: None }));
        // Rust: the user's frame, std's call into libc as its site.
        assert_eq!(
            Callsite::of(Ok((0, 0x10)), Some((1, 0x1800)), &maps),
            Ok(Callsite { map: 0, offset: 0x10, site: Some(0x1800) })
        );
        // The runtime's frame was the user's own (Own at once): no site.
        assert_eq!(Callsite::of(Ok((1, 0x1800)), Some((1, 0x1800)), &maps).unwrap().site, None);
        // Past the runtime out of the program's file, or a failed walk:
        // the runtime's first frame, with no site.
        for found in [Ok((2, 0x20)), Err(Unwound::TooManyFrames)] {
            assert_eq!(
                Callsite::of(found, Some((1, 0x1800)), &maps),
                Ok(Callsite { map: 1, offset: 0x1800, site: None })
            );
        }
        assert_eq!(Callsite::of(Err(Unwound::TooManyFrames), None, &maps), Err(Unwound::TooManyFrames));
    }

    fn libc_path() -> PathBuf {
        skip_modules().unwrap()[0].path.clone()
    }

    /// Address of a `.dynsym` function of libc (its file offset equals the
    /// virtual address only if the first PT_LOAD maps offset 0 at 0, so
    /// convert).
    fn dynsym_offset(path: &Path, name: &str) -> u64 {
        use object::ObjectSymbol;
        let data = std::fs::read(path).unwrap();
        let obj = object::File::parse(&*data).unwrap();
        let loads = load_segments(&obj);
        let sym =
            obj.dynamic_symbols().find(|s| s.name() == Ok(name)).unwrap_or_else(|| panic!("{name} not in .dynsym"));
        vaddr_to_offset(&loads, sym.address()).unwrap()
    }

    #[test]
    fn skip_modules_are_libc_the_loader_and_the_vdso() {
        let skip = skip_modules().unwrap();
        assert_eq!(skip.len(), 3, "{:?}", skip.iter().map(|s| &s.path).collect::<Vec<_>>());
        assert_eq!((skip[2].path.to_str(), skip[2].dev, skip[2].ino), (Some(VDSO), 0, 0));
        assert!(skip[2].table.rows.iter().any(|r| r.cfa == CfaRule::Rsp(8)));
        let names: Vec<String> =
            skip[..2].iter().map(|s| s.path.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert!(names[0].starts_with("libc.so"), "{names:?}");
        assert!(names[1].starts_with("ld-linux"), "{names:?}");
        for s in &skip[..2] {
            assert!(s.table.rows.len() > 100, "{}: {} rows", s.path.display(), s.table.rows.len());
        }
    }

    #[test]
    fn libc_rows_are_sorted_and_cover_every_fde() {
        let path = libc_path();
        let data = std::fs::read(&path).unwrap();
        let table = UnwindTable::from_elf_data(&data).unwrap();
        assert!(table.rows.windows(2).all(|w| w[0].pc < w[1].pc), "rows not strictly sorted");
        assert!(table.rows.windows(2).all(|w| !w[0].same_rule(&w[1])), "equal adjacent rows not merged");
        // Every row of every FDE of .eh_frame, as gimli evaluates it, is
        // found in the table at its address with the same CFA rule (libc's
        // text is mapped at file offset = virtual address).
        let obj = object::File::parse(&*data).unwrap();
        let loads = load_segments(&obj);
        let sec = obj.section_by_name(".eh_frame").unwrap();
        let mut eh = EhFrame::new(sec.data().unwrap(), LittleEndian);
        eh.set_address_size(8);
        let bases = BaseAddresses::default().set_eh_frame(sec.address());
        let mut ctx = UnwindContext::new();
        let mut entries = eh.entries(&bases);
        let (mut fdes, mut rows, mut exprs, mut at_entry_rsp8, mut ra_in_register) = (0, 0, 0, 0, 0);
        let vfork = dynsym_offset(&path, "vfork");
        let mut ranges = Vec::new();
        while let Some(e) = entries.next().unwrap() {
            let CieOrFde::Fde(p) = e else { continue };
            let fde = p.parse(|s, b, o| s.cie_from_offset(b, o)).unwrap();
            if fde.len() == 0 {
                continue;
            }
            fdes += 1;
            let mut it = fde.rows(&eh, &bases, &mut ctx).unwrap();
            let mut first = true;
            while let Some(r) = it.next_row().unwrap() {
                let off = vaddr_to_offset(&loads, r.start_address()).unwrap();
                let got = table.lookup(off).unwrap_or_else(|| panic!("no row at {off:#x}")).cfa;
                let ra = r.register(X86_64::RA);
                let want = match *r.cfa() {
                    _ if ra == Some(gimli::RegisterRule::Undefined) || fde.is_signal_trampoline() => CfaRule::Outermost,
                    // vfork pops its return address into a register in its
                    // first instruction (it stays at CFA-8); the CFI keeps
                    // it "in rdi" after the push back, and longjmp takes
                    // another: those stay unknown.
                    gimli::CfaRule::RegisterAndOffset { offset, .. } if r.start_address() == vfork + 1 => {
                        ra_in_register += matches!(ra, Some(gimli::RegisterRule::Register(_))) as usize;
                        CfaRule::Rsp(offset as i32)
                    }
                    _ if ra != Some(gimli::RegisterRule::Offset(-8)) => CfaRule::Unknown,
                    gimli::CfaRule::RegisterAndOffset { register, offset } if register == X86_64::RSP => {
                        CfaRule::Rsp(offset as i32)
                    }
                    gimli::CfaRule::RegisterAndOffset { register, offset } if register == X86_64::RBP => {
                        CfaRule::Rbp(offset as i32)
                    }
                    _ => {
                        exprs += 1;
                        CfaRule::Unknown
                    }
                };
                assert_eq!(got, want, "row at {off:#x} of FDE {:#x}", fde.initial_address());
                if first {
                    at_entry_rsp8 += (got == CfaRule::Rsp(8)) as usize;
                    first = false;
                }
                rows += 1;
            }
            ranges.push((fde.initial_address(), fde.end_address()));
        }
        // Just past an FDE: the next FDE's rule, or no rule if none starts there.
        ranges.sort_unstable();
        for &(start, mut end) in &ranges {
            if data[end as usize..end as usize + 2] == [0x0f, 0x05] {
                end += 2; // clone's syscall, see collect_fdes
            }
            let next = ranges.binary_search_by_key(&end, |r| r.0).is_ok();
            let after = table.lookup(end).unwrap().cfa;
            assert!(
                next || matches!(after, CfaRule::Unknown | CfaRule::Outermost),
                "FDE {start:#x}..{end:#x} covers past its end: {after:?}"
            );
        }
        assert!(fdes > 1000, "only {fdes} FDEs");
        assert_eq!(ra_in_register, 1, "rows with the return address in a register (vfork's)");
        // At most one gap row per FDE is added to the CFI's rows.
        assert!(table.rows.len() <= rows + fdes, "{} rows from {rows} CFI rows of {fdes} FDEs", table.rows.len());
        // Hand-written signal-return code needs expressions; little else does.
        assert!(exprs < 10, "{exprs} rows need expressions");
        // Functions start with CFA = rsp + 8; the FDEs of split-off cold
        // parts (`foo.cold`) start with their parent's CFA.
        assert!(at_entry_rsp8 * 10 >= fdes * 9, "{at_entry_rsp8} of {fdes} FDEs start with CFA = rsp + 8");
    }

    #[test]
    fn entry_points_of_known_functions_have_cfa_rsp_plus_8() {
        let skip = skip_modules().unwrap();
        let libc = &skip[0];
        for name in ["write", "read", "fwrite", "printf", "__libc_start_main"] {
            let off = dynsym_offset(&libc.path, name);
            let row = libc.table.lookup(off).unwrap();
            assert_eq!(row.cfa, CfaRule::Rsp(8), "{name} at {off:#x}");
            assert_eq!(row.rbp_offset, None, "{name}");
        }
        // Past fwrite's prologue the CFA has moved (it pushes registers).
        let off = dynsym_offset(&libc.path, "fwrite");
        let moved = (off..off + 64).any(|o| matches!(libc.table.lookup(o).unwrap().cfa, CfaRule::Rsp(n) if n > 8));
        assert!(moved, "fwrite's CFA never moves in its first 64 bytes");
    }

    /// The end offset of the first `syscall` instruction in the 64 bytes
    /// from `off` of `path`.
    fn syscall_end(path: &Path, off: u64) -> u64 {
        let data = std::fs::read(path).unwrap();
        let code = &data[off as usize..off as usize + 64];
        off + code.windows(2).position(|w| w == [0x0f, 0x05]).expect("no syscall instruction") as u64 + 2
    }

    #[test]
    fn clone_and_vfork_system_calls_have_rules() {
        // Probed as the unwinder does, at ip - 1 where ip follows the syscall.
        let libc = &skip_modules().unwrap()[0];
        for (name, cfa) in [("clone", CfaRule::Rsp(8)), ("vfork", CfaRule::Rsp(0))] {
            let end = syscall_end(&libc.path, dynsym_offset(&libc.path, name));
            assert_eq!(libc.table.lookup(end - 1).unwrap().cfa, cfa, "{name}'s syscall at {end:#x}");
        }
    }

    #[test]
    fn gaps_between_fdes_are_unknown() {
        let f = |start, end, rows: Vec<(u64, CfaRule, Option<i32>)>| FdeRows { start, end, rows };
        let t = UnwindTable::from_fdes(
            vec![
                f(0x200, 0x210, vec![(0x200, CfaRule::Rsp(8), None)]),
                f(0x100, 0x120, vec![(0x100, CfaRule::Rsp(8), None), (0x101, CfaRule::Rsp(16), Some(-16))]),
                f(0x120, 0x130, vec![(0x120, CfaRule::Rsp(8), None)]),
            ],
            Some(0x180),
        );
        let cfa = |o| t.lookup(o).map(|r| r.cfa);
        assert_eq!(cfa(0xff), None);
        assert_eq!(cfa(0x100), Some(CfaRule::Rsp(8)));
        assert_eq!(t.lookup(0x11f).unwrap().rbp_offset, Some(-16));
        assert_eq!(cfa(0x120), Some(CfaRule::Rsp(8)));
        assert_eq!(cfa(0x130), Some(CfaRule::Unknown));
        assert_eq!(cfa(0x17f), Some(CfaRule::Unknown));
        assert_eq!(cfa(0x180), Some(CfaRule::Outermost));
        assert_eq!(cfa(0x1ff), Some(CfaRule::Outermost));
        assert_eq!(cfa(0x200), Some(CfaRule::Rsp(8)));
        assert_eq!(cfa(0x210), Some(CfaRule::Unknown));
        assert_eq!(cfa(u64::MAX), Some(CfaRule::Unknown));
    }

    #[test]
    fn maps_lines_parse() {
        let text = "7f384f26f000-7f384f3c5000 r-xp 00026000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6\n\
                    7ffd1000-7ffd3000 rw-p 00000000 00:00 0 \n\
                    7ffe0000-7ffe2000 r-xp 00000000 00:00 0                          [vdso]\n\
                    garbage\n";
        let maps = parse_maps(text);
        assert_eq!(maps.len(), 3);
        assert_eq!(maps[0].start, 0x7f384f26f000);
        assert_eq!(maps[0].file_offset, 0x26000);
        assert_eq!(maps[0].dev, libc::makedev(0xfe, 0));
        assert_eq!(maps[0].ino, 326269);
        assert!(maps[0].executable);
        assert_eq!(maps[0].path.as_deref(), Some(Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6")));
        assert_eq!(maps[1].path, None);
        assert!(!maps[1].executable);
        assert_eq!(maps[2].path.as_deref(), Some(Path::new("[vdso]")));
    }

    #[test]
    fn own_maps_agree_with_stat_of_libc() {
        let skip = skip_modules().unwrap();
        let maps = read_maps(std::process::id()).unwrap();
        for s in skip {
            assert!(maps.iter().any(|m| s.maps(m) && m.executable), "{} not found by dev/ino", s.path.display());
        }
    }

    #[test]
    fn process_memory_reads_across_pages() {
        let words: Vec<u64> = (0..2048u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        let mut mem = ProcessMemory::new(std::process::id());
        let base = words.as_ptr() as u64;
        for (i, &w) in words.iter().enumerate() {
            assert_eq!(mem.read_u64(base + 8 * i as u64), Some(w));
        }
        // Unaligned, straddling a page boundary.
        let bytes: &[u8] = unsafe { std::slice::from_raw_parts(words.as_ptr().cast(), words.len() * 8) };
        let cross = (base + 4096) & !4095;
        if cross + 4 < base + bytes.len() as u64 {
            let at = (cross - 3 - base) as usize;
            let want = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
            assert_eq!(mem.read_u64(cross - 3), Some(want));
        }
        assert_eq!(mem.read_u64(8), None, "page zero read");
        // Reads up to the end of a mapping stop there, not before.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(page, libc::MAP_FAILED);
        unsafe { libc::munmap(page.cast::<u8>().add(4096).cast(), 4096) };
        let last = page as u64 + 4096 - 8;
        unsafe { *(last as *mut u64) = 0x1122_3344_5566_7788 };
        mem.invalidate();
        assert_eq!(mem.read_u64(last), Some(0x1122_3344_5566_7788));
        assert_eq!(mem.read_u64(last + 4), None);
        unsafe { libc::munmap(page, 4096) };
    }
}
