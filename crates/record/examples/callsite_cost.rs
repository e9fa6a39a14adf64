//! What code locations cost: building the unwind tables of libc and the
//! loader, unwinding one call in user space (the ptrace backend's path),
//! and symbolizing a distinct address.
//!
//!   make -C tests/corpus
//!   cargo run --release -p syscluster-record --example callsite_cost

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Instant;
use syscluster_model::CodeAddr;
use syscluster_record::callsite::unwind::{
    find_callsite, read_maps, CfaRule, ProcessMemory, Regs, SkipModule, UnwindTable,
};
use syscluster_record::callsite::{Modules, Symbolizer};

fn main() {
    if let Err(e) = run() {
        eprintln!("callsite_cost: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/bin");
    let stdio = corpus.join("stdio");
    if !stdio.exists() {
        return Err(format!("{} is missing: run make -C tests/corpus", stdio.display()));
    }

    // Tables: the skip modules, built from scratch several times.
    let skip = syscluster_record::callsite::unwind::skip_modules()?;
    println!(
        "unwind tables (row = {} bytes in memory):",
        std::mem::size_of::<syscluster_record::callsite::unwind::UnwindRow>()
    );
    for m in skip {
        let runs = 10;
        let t = Instant::now();
        if m.ino != 0 {
            for _ in 0..runs {
                UnwindTable::from_elf(&m.path)?;
            }
        }
        let per = t.elapsed() / runs; // the vDSO's (from memory) is not timed
        let rows = &m.table.rows;
        let count = |f: &dyn Fn(&CfaRule) -> bool| rows.iter().filter(|r| f(&r.cfa)).count();
        let max_off = rows
            .iter()
            .filter_map(|r| match r.cfa {
                CfaRule::Rsp(n) | CfaRule::Rbp(n) => Some(n.unsigned_abs()),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let max_rbp = rows.iter().filter_map(|r| r.rbp_offset.map(i32::unsigned_abs)).max().unwrap_or(0);
        println!(
            "  {}: {} rows ({} rsp, {} rbp, {} unknown, {} outermost), {} bytes; built in {:.2} ms; largest CFA offset {max_off}, rbp offset {max_rbp}",
            m.path.display(),
            rows.len(),
            count(&|c| matches!(c, CfaRule::Rsp(_))),
            count(&|c| matches!(c, CfaRule::Rbp(_))),
            count(&|c| *c == CfaRule::Unknown),
            count(&|c| *c == CfaRule::Outermost),
            m.table.size_bytes(),
            per.as_secs_f64() * 1e3,
        );
    }

    // Unwinding: stop programs at each write(2) to fd 3 and unwind it many
    // times: write8 calls write() itself, stdio through fwrite/fflush.
    println!("user-space unwind at write(2) entries (process_vm_readv, maps cached):");
    let mut modules = Modules::new();
    let mut sites = Vec::new();
    let out = std::env::temp_dir().join(format!("callsite_cost.{}", std::process::id()));
    for prog in [corpus.join("write8"), stdio.clone()] {
        sites.extend(unwind_writes(&prog, &[out.as_os_str(), "2".as_ref()], skip, &mut modules)?);
    }
    std::fs::remove_file(&out).ok();

    // Symbolizing: the first address of a module parses its DWARF; later
    // distinct addresses reuse it; repeated ones hit the cache.
    println!("symbolization:");
    let libc_path = skip[0].path.clone();
    let libc = modules.intern_path(&libc_path).map_err(|e| e.to_string())?;
    let mut s = Symbolizer::new(modules);
    let mut seen = std::collections::HashSet::new();
    for &site in &sites {
        if !seen.insert(site) {
            continue;
        }
        let first = seen.iter().filter(|a| a.module == site.module).count() == 1;
        let t = Instant::now();
        let loc = s.resolve(site);
        let what = if first {
            "first address of its module (loads the module and its DWARF)"
        } else {
            "another address of a loaded module"
        };
        println!("  {what}: {:.1} µs -> {loc}", t.elapsed().as_secs_f64() * 1e6);
    }
    let t = Instant::now();
    let runs = 100_000;
    for _ in 0..runs {
        std::hint::black_box(s.resolve(sites[0]));
    }
    println!("  a repeated address: {:.3} µs", (t.elapsed() / runs).as_secs_f64() * 1e6);
    // libc with its separate debug file (libc6-dbg), 64 distinct addresses.
    let text = skip[0]
        .table
        .rows
        .iter()
        .map(|r| r.pc as u64)
        .filter(|&p| p > 0x30000)
        .step_by(400)
        .take(64)
        .collect::<Vec<_>>();
    let t = Instant::now();
    let loc = s.resolve(CodeAddr::at(libc, text[0] + 1));
    println!("  first address of libc (separate debug file): {:.1} ms -> {loc}", t.elapsed().as_secs_f64() * 1e3);
    let t = Instant::now();
    for &o in &text[1..] {
        std::hint::black_box(s.resolve(CodeAddr::at(libc, o + 1)));
    }
    println!(
        "  further distinct libc addresses: {:.1} µs each",
        (t.elapsed() / (text.len() as u32 - 1)).as_secs_f64() * 1e6
    );
    Ok(())
}

/// Runs `prog args` under ptrace, and unwinds each write(2) to fd 3 many
/// times at its entry stop; returns the sites found.
fn unwind_writes(
    prog: &Path,
    args: &[&std::ffi::OsStr],
    skip: &[SkipModule],
    modules: &mut Modules,
) -> Result<Vec<CodeAddr>, String> {
    let mut cmd = std::process::Command::new(prog);
    cmd.args(args);
    unsafe {
        cmd.pre_exec(|| {
            if libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| format!("{}: {e}", prog.display()))?;
    let pid = child.id() as i32;
    let mut status = 0;
    unsafe { libc::waitpid(pid, &mut status, 0) };
    unsafe {
        libc::ptrace(libc::PTRACE_SETOPTIONS, pid, 0, (libc::PTRACE_O_TRACESYSGOOD | libc::PTRACE_O_EXITKILL) as usize)
    };
    let mut entering = false;
    let mut sites = Vec::new();
    let mut mem = ProcessMemory::new(pid as u32);
    loop {
        unsafe { libc::ptrace(libc::PTRACE_SYSCALL, pid, 0, 0) };
        if unsafe { libc::waitpid(pid, &mut status, 0) } < 0 || !libc::WIFSTOPPED(status) {
            break;
        }
        entering = !entering;
        let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
        unsafe { libc::ptrace(libc::PTRACE_GETREGS, pid, 0, &mut regs as *mut _ as usize) };
        if !entering || regs.orig_rax != libc::SYS_write as u64 || regs.rdi != 3 {
            continue;
        }
        let t = Instant::now();
        let runs = 200;
        for _ in 0..runs {
            std::hint::black_box(read_maps(pid as u32).map_err(|e| e.to_string())?);
        }
        let maps_cost = t.elapsed() / runs;
        let maps = read_maps(pid as u32).map_err(|e| e.to_string())?;
        let r = Regs { ip: regs.rip, sp: regs.rsp, bp: regs.rbp };
        let runs = 20_000;
        let t = Instant::now();
        let mut last = None;
        for _ in 0..runs {
            mem.invalidate();
            last = Some(find_callsite(r, &mut mem, &maps, skip));
        }
        let per = t.elapsed() / runs;
        let found = last.unwrap().map_err(|e| e.to_string())?;
        let (idx, off) = (found.map, found.offset);
        println!(
            "  {} write of {} bytes: {} stack words read, {:.2} µs per unwind (memory read afresh each time); reading /proc/PID/maps: {:.1} µs",
            prog.file_name().unwrap().to_string_lossy(),
            regs.rdx,
            words_read(r, pid as u32, &maps, skip),
            per.as_secs_f64() * 1e6,
            maps_cost.as_secs_f64() * 1e6
        );
        let m = &maps[idx];
        let id = modules.intern(m.dev, m.ino);
        if let Some(p) = &m.path {
            modules.learn_path(p);
        }
        sites.push(CodeAddr::at(id, off));
    }
    drop(child);
    Ok(sites)
}

/// How many frames the unwinder steps for these registers: the words read
/// for return addresses, counted by a wrapper.
fn words_read(r: Regs, pid: u32, maps: &[syscluster_record::callsite::unwind::Mapping], skip: &[SkipModule]) -> usize {
    struct Count(ProcessMemory, usize);
    impl syscluster_record::callsite::unwind::Memory for Count {
        fn read_u64(&mut self, addr: u64) -> Option<u64> {
            self.1 += 1;
            self.0.read_u64(addr)
        }
    }
    let mut c = Count(ProcessMemory::new(pid), 0);
    let _ = find_callsite(r, &mut c, maps, skip);
    c.1
}
