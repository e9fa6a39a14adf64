//! Code addresses to functions, source files and lines.
//!
//! An address is a module and the file offset of a return address; the call
//! instruction ends just before it, so `offset - 1` is looked up. The file
//! offset becomes a virtual address through the PT_LOAD segments; DWARF
//! (in the file, or in a separate debug file found by build-id or
//! `.gnu_debuglink`, with a dwz supplementary file if it names one) gives
//! the function, file and line; the symbol tables give the function where
//! DWARF does not. A module whose file is gone, replaced, or unreadable
//! yields its path and offset only.

use super::runtime::{is_runtime_function, language_of, Language};
use super::unwind::load_segments;
use super::Modules;
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use syscluster_model::profile::Location;
use syscluster_model::CodeAddr;

type Reader = gimli::EndianArcSlice<gimli::RunTimeEndian>;

/// Where separate debug files live (Debian's `-dbg`/`-dbgsym` packages).
const DEBUG_DIR: &str = "/usr/lib/debug";

/// A function symbol: start address, size, name, and whether it came from
/// the full symbol table (`.symtab`) rather than `.dynsym`.
struct Symbol {
    addr: u64,
    size: u64,
    name: String,
    full: bool,
}

/// What a module's files say about its addresses; parsed once per module.
struct ModuleInfo {
    /// PT_LOAD segments: (vaddr, file offset, memory size, file size).
    loads: Vec<(u64, u64, u64, u64)>,
    /// Sorted by address.
    symbols: Vec<Symbol>,
    dwarf: Option<addr2line::Context<Reader>>,
    /// The language whose runtime the file holds (Go, Rust), if any: its
    /// functions inlined into the program's are passed over.
    lang: Option<Language>,
}

pub struct Symbolizer {
    modules: Modules,
    /// Per module id; `None`: the file is gone, replaced or unreadable.
    info: FxHashMap<u32, Option<ModuleInfo>>,
    cache: FxHashMap<CodeAddr, Location>,
    debug_dir: PathBuf,
}

impl Symbolizer {
    pub fn new(modules: Modules) -> Symbolizer {
        Symbolizer {
            modules,
            info: FxHashMap::default(),
            cache: FxHashMap::default(),
            debug_dir: PathBuf::from(DEBUG_DIR),
        }
    }

    /// Looks for separate debug files under `dir` instead of /usr/lib/debug.
    pub fn set_debug_dir(&mut self, dir: &Path) {
        self.debug_dir = dir.to_path_buf();
        self.info.clear();
        self.cache.clear();
    }

    /// The modules this symbolizer resolves against.
    pub fn modules(&self) -> &Modules {
        &self.modules
    }

    pub fn resolve(&mut self, addr: CodeAddr) -> Location {
        if let Some(loc) = self.cache.get(&addr) {
            return loc.clone();
        }
        let loc = self.resolve_uncached(addr);
        self.cache.insert(addr, loc.clone());
        loc
    }

    fn resolve_uncached(&mut self, addr: CodeAddr) -> Location {
        let (module, path) = match self.modules.get(addr.module) {
            Some(m) => match &m.path {
                Some(p) => (p.display().to_string(), Some((p.clone(), m.dev, m.ino))),
                None => (format!("<dev {:#x} inode {}>", m.dev, m.ino), None),
            },
            None => ("<unknown>".to_string(), None),
        };
        let mut loc = Location { module, offset: addr.offset, function: None, file: None, line: None, site: addr.site };
        let Some((path, dev, ino)) = path else { return loc };
        let debug_dir = &self.debug_dir;
        let info = self.info.entry(addr.module).or_insert_with(|| ModuleInfo::load(&path, dev, ino, debug_dir));
        if let Some(info) = info {
            info.locate(addr.offset.saturating_sub(1), &mut loc);
        }
        loc
    }
}

impl ModuleInfo {
    /// Parses the module's file, if it is still the file that was mapped.
    fn load(path: &Path, dev: u64, ino: u64, debug_dir: &Path) -> Option<ModuleInfo> {
        let md = std::fs::metadata(path).ok()?;
        if md.dev() != dev || md.ino() != ino {
            return None;
        }
        let data = std::fs::read(path).ok()?;
        let obj = object::File::parse(&*data).ok()?;
        let loads = load_segments(&obj);
        let lang = language_of(&obj);
        let mut symbols = Vec::new();
        add_symbols(&obj, &mut symbols);
        let dwarf = if has_dwarf(&obj) {
            load_dwarf(&obj, path, debug_dir)
        } else {
            match find_debug_file(&obj, path, debug_dir) {
                Some((dpath, ddata)) => {
                    let dobj = object::File::parse(&*ddata).ok();
                    dobj.and_then(|dobj| {
                        add_symbols(&dobj, &mut symbols);
                        load_dwarf(&dobj, &dpath, debug_dir)
                    })
                }
                None => None,
            }
        };
        symbols.sort_by(|a, b| a.addr.cmp(&b.addr).then_with(|| name_rank(a).cmp(&name_rank(b))));
        symbols.dedup_by(|b, a| a.addr == b.addr && a.name == b.name);
        Some(ModuleInfo { loads, symbols, dwarf, lang })
    }

    /// Fills function, file and line of the instruction at file offset `off`.
    fn locate(&self, off: u64, loc: &mut Location) {
        let Some(vaddr) =
            self.loads.iter().find(|&&(_, o, _, fs)| off >= o && off - o < fs).map(|&(va, o, _, _)| off - o + va)
        else {
            return;
        };
        if let Some(ctx) = &self.dwarf {
            if let Ok(mut frames) = ctx.find_frames(vaddr).skip_all_loads() {
                // The innermost frame: the (possibly inlined) function that
                // holds the call, and the line of the call in it; past the
                // language runtime's functions inlined into the program's
                // (the line in the outer frame is the inlined call's).
                let mut first = true;
                while let Ok(Some(frame)) = frames.next() {
                    let name = frame.function.as_ref().and_then(|f| f.raw_name().ok()).map(Cow::into_owned);
                    let runtime = self.lang.is_some_and(|l| name.as_deref().is_some_and(|n| is_runtime_function(l, n)));
                    if first || !runtime {
                        loc.function = name;
                        (loc.file, loc.line) = match frame.location {
                            Some(l) => (l.file.map(str::to_string), l.line),
                            None => (None, None),
                        };
                    }
                    first = false;
                    if !runtime {
                        break;
                    }
                }
            }
            if loc.file.is_none() {
                if let Ok(Some(l)) = ctx.find_location(vaddr) {
                    loc.file = l.file.map(str::to_string);
                    loc.line = l.line;
                }
            }
        }
        if loc.function.is_none() {
            loc.function = self.symbol_at(vaddr).map(str::to_string);
        }
    }

    /// The name of the function symbol whose extent holds `vaddr`.
    fn symbol_at(&self, vaddr: u64) -> Option<&str> {
        let i = self.symbols.partition_point(|s| s.addr <= vaddr);
        // Aliases share an address and are sorted best name first, so
        // walking back the last one seen is the best; a few nested or
        // overlapping symbols may lie between.
        let mut best: Option<&Symbol> = None;
        for s in self.symbols[..i].iter().rev().take(32) {
            if vaddr - s.addr >= s.size && vaddr != s.addr {
                continue;
            }
            match best {
                Some(b) if b.addr > s.addr => break,
                _ => best = Some(s),
            }
        }
        best.map(|s| s.name.as_str())
    }
}

/// Orders aliases of one address: the fewest leading underscores (`write`
/// before `__write` and `__libc_write`), then `.symtab`, then the shortest.
fn name_rank(s: &Symbol) -> (usize, bool, usize, &str) {
    let underscores = s.name.bytes().take_while(|&b| b == b'_').count();
    (underscores, !s.full, s.name.len(), &s.name)
}

fn add_symbols(obj: &object::File<'_>, out: &mut Vec<Symbol>) {
    let full = obj.symbols().map(|s| (s, true));
    let dynamic = obj.dynamic_symbols().map(|s| (s, false));
    for (s, full) in full.chain(dynamic) {
        if s.kind() != SymbolKind::Text || !s.is_definition() || s.address() == 0 {
            continue;
        }
        if let Ok(name) = s.name() {
            if !name.is_empty() {
                out.push(Symbol { addr: s.address(), size: s.size(), name: name.to_string(), full });
            }
        }
    }
}

fn has_dwarf(obj: &object::File<'_>) -> bool {
    obj.section_by_name(".debug_info").is_some_and(|s| s.size() > 0)
}

/// The DWARF of `obj` (at `path`), with its dwz supplementary file if it
/// names one.
fn load_dwarf(obj: &object::File<'_>, path: &Path, debug_dir: &Path) -> Option<addr2line::Context<Reader>> {
    let mut dwarf = sections_of(obj)?;
    if let Ok(Some((name, build_id))) = obj.gnu_debugaltlink() {
        let name = Path::new(std::str::from_utf8(name).ok()?);
        let dir = path.parent().unwrap_or(Path::new("/"));
        let mut candidates = vec![dir.join(name)];
        candidates.push(build_id_path(debug_dir, build_id));
        for c in candidates {
            let Ok(data) = std::fs::read(&c) else { continue };
            let Ok(sup) = object::File::parse(&*data) else { continue };
            if sup.build_id().ok().flatten() != Some(build_id) {
                continue;
            }
            if let Some(s) = sections_of(&sup) {
                dwarf.set_sup(s);
                break;
            }
        }
    }
    addr2line::Context::from_dwarf(dwarf).ok()
}

fn sections_of(obj: &object::File<'_>) -> Option<gimli::Dwarf<Reader>> {
    let endian = if obj.is_little_endian() { gimli::RunTimeEndian::Little } else { gimli::RunTimeEndian::Big };
    gimli::Dwarf::load(|id: gimli::SectionId| -> Result<Reader, ()> {
        let data: Arc<[u8]> = match obj.section_by_name(id.name()) {
            Some(sec) => Arc::from(sec.uncompressed_data().map_err(|_| ())?.as_ref()),
            None => Arc::from(&[][..]),
        };
        Ok(gimli::EndianReader::new(data, endian))
    })
    .ok()
}

fn build_id_path(debug_dir: &Path, id: &[u8]) -> PathBuf {
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    if hex.len() < 3 {
        return debug_dir.join(".build-id/none");
    }
    debug_dir.join(".build-id").join(&hex[..2]).join(format!("{}.debug", &hex[2..]))
}

/// A separate debug file for `obj`: by build-id, else by `.gnu_debuglink`
/// (beside the file, in its `.debug/`, or under the debug directory), and
/// only one that belongs to it (same build-id, or the link's CRC).
fn find_debug_file(obj: &object::File<'_>, path: &Path, debug_dir: &Path) -> Option<(PathBuf, Vec<u8>)> {
    let build_id = obj.build_id().ok().flatten();
    let mut candidates = Vec::new();
    if let Some(id) = build_id {
        candidates.push(build_id_path(debug_dir, id));
    }
    let link = obj.gnu_debuglink().ok().flatten();
    if let Some((name, _)) = link {
        let name = std::str::from_utf8(name).ok()?;
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let dir = real.parent().unwrap_or(Path::new("/"));
        candidates.push(dir.join(name));
        candidates.push(dir.join(".debug").join(name));
        candidates.push(debug_dir.join(dir.strip_prefix("/").unwrap_or(dir)).join(name));
    }
    for c in candidates {
        if std::fs::canonicalize(&c).ok().as_deref() == std::fs::canonicalize(path).ok().as_deref() {
            continue;
        }
        let Ok(data) = std::fs::read(&c) else { continue };
        let belongs = match (build_id, object::File::parse(&*data).ok().and_then(|d| d.build_id().ok().flatten())) {
            (Some(a), Some(b)) => a == b,
            _ => link.is_some_and(|(_, crc)| crc32(&data) == crc),
        };
        if belongs {
            return Some((c, data));
        }
    }
    None
}

/// CRC-32 (IEEE), as `.gnu_debuglink` records it.
fn crc32(data: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (i, t) in table.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { 0xedb8_8320 ^ (c >> 1) } else { c >> 1 };
        }
        *t = c;
    }
    !data.iter().fold(!0u32, |c, &b| table[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callsite::unwind::skip_modules;

    fn symbolizer_for(path: &Path) -> (Symbolizer, u32) {
        let mut modules = Modules::new();
        let id = modules.intern_path(path).unwrap();
        (Symbolizer::new(modules), id)
    }

    /// File offset of a `.dynsym` function of `path`.
    fn dynsym_offset(path: &Path, name: &str) -> u64 {
        let data = std::fs::read(path).unwrap();
        let obj = object::File::parse(&*data).unwrap();
        let loads = load_segments(&obj);
        let sym = obj.dynamic_symbols().find(|s| s.name() == Ok(name)).unwrap();
        let va = sym.address();
        loads.iter().find(|&&(v, _, _, fs)| va >= v && va - v < fs).map(|&(v, o, _, _)| va - v + o).unwrap()
    }

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn libc_without_debug_file_resolves_from_dynsym_with_plain_names() {
        // .dynsym has write with the aliases __write and __libc_write, and
        // fwrite with _IO_fwrite; the plain name wins.
        let libc = skip_modules().unwrap()[0].path.clone();
        let (mut s, id) = symbolizer_for(&libc);
        let none = tempfile::tempdir().unwrap();
        s.set_debug_dir(none.path());
        for name in ["write", "fwrite", "read"] {
            let off = dynsym_offset(&libc, name);
            let loc = s.resolve(CodeAddr::at(id, off + 5));
            assert_eq!(loc.module, libc.display().to_string());
            assert_eq!(loc.offset, off + 5);
            assert_eq!(loc.function.as_deref(), Some(name), "{loc:?}");
            assert_eq!((loc.file, loc.line), (None, None));
        }
    }

    #[test]
    fn libc_with_its_debug_file_resolves_to_glibc_sources() {
        // libc6-dbg (scripts/install-deps.sh) puts libc's DWARF under
        // /usr/lib/debug/.build-id: function names are DWARF's, and the
        // file is in glibc's source tree. glibc's DWARF names some functions
        // by their internal aliases (`__GI__IO_fwrite`).
        let libc = skip_modules().unwrap()[0].path.clone();
        let (mut s, id) = symbolizer_for(&libc);
        for (name, dwarf_name, file) in [("fwrite", "_IO_fwrite", "iofwrite.c"), ("write", "__libc_write", "write.c")] {
            let off = dynsym_offset(&libc, name);
            let loc = s.resolve(CodeAddr::at(id, off + 5));
            assert!(loc.file.is_some(), "no DWARF for libc (is libc6-dbg installed?): {loc:?}");
            assert!(loc.function.as_deref().unwrap().ends_with(dwarf_name), "{loc:?}");
            assert!(loc.file.as_deref().unwrap().ends_with(file), "{loc:?}");
            assert!(loc.line.unwrap() > 0);
        }
    }

    #[test]
    fn unknown_and_pathless_modules_give_module_and_offset() {
        let mut modules = Modules::new();
        let id = modules.intern(0x1234, 99);
        let mut s = Symbolizer::new(modules);
        let loc = s.resolve(CodeAddr::at(id, 0x40));
        assert_eq!(loc.module, "<dev 0x1234 inode 99>");
        assert_eq!((loc.offset, loc.function, loc.file, loc.line), (0x40, None, None, None));
        let loc = s.resolve(CodeAddr::at(7, 1));
        assert_eq!(loc.module, "<unknown>");
    }
}
