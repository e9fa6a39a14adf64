//! Code locations of real programs' system calls, found live: each program
//! runs under ptrace, stops at every call's entry, and the unwinder steps
//! out of libc and the loader there; the symbolizer then names the source
//! line, which must be the line of the call in the corpus source.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use syscluster_model::profile::Location;
use syscluster_model::CodeAddr;
use syscluster_record::callsite::unwind::{
    find_callsite, read_maps, skip_modules, Memory, ProcessMemory, Regs, Unwound,
};
use syscluster_record::callsite::{Modules, Symbolizer};
use syscluster_testutil::{cc, cc_text, on_path, program, transform};

/// The tracer reaps with waitpid(-1), which would steal other tests'
/// children: everything in this file that runs a child holds this lock.
static CHILDREN: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    CHILDREN.lock().unwrap_or_else(|e| e.into_inner())
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus").canonicalize().unwrap()
}

/// Builds the corpus once; returns the path of program `name`.
fn corpus(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let _g = lock();
        let st = Command::new("make").arg("-s").arg("-C").arg(corpus_dir()).status().expect("run make");
        assert!(st.success(), "make -C tests/corpus failed");
    });
    corpus_dir().join("bin").join(name)
}

/// The 1-based number of the only line of corpus source `file` containing
/// `text`.
fn line_of(file: &str, text: &str) -> u32 {
    let src = std::fs::read_to_string(corpus_dir().join(file)).unwrap();
    let hits: Vec<usize> = src.lines().enumerate().filter(|(_, l)| l.contains(text)).map(|(i, _)| i + 1).collect();
    assert_eq!(hits.len(), 1, "{text:?} in {file}: lines {hits:?}");
    hits[0] as u32
}

/// Counts the words the unwinder reads (one or two per frame stepped).
struct Counting<'a> {
    mem: &'a mut ProcessMemory,
    reads: usize,
}

impl Memory for Counting<'_> {
    fn read_u64(&mut self, addr: u64) -> Option<u64> {
        self.reads += 1;
        self.mem.read_u64(addr)
    }
}

/// One system call's entry as the tracer saw it.
struct Call {
    nr: u64,
    args: [u64; 6],
    site: Result<CodeAddr, Unwound>,
    /// Stack words read to find the site.
    reads: usize,
}

struct Trace {
    calls: Vec<Call>,
    modules: Modules,
    exit: i32,
}

impl Trace {
    fn symbolizer(self) -> (Vec<Call>, Symbolizer) {
        (self.calls, Symbolizer::new(self.modules))
    }
}

/// Runs `prog args` under ptrace (threads too) and finds the code location
/// of every system call at its entry.
#[allow(clippy::zombie_processes)] // reaped by the waitpid loop
fn trace(prog: &Path, args: &[&OsStr]) -> Trace {
    let skip = skip_modules().expect("skip modules");
    let _g = lock();
    let mut cmd = Command::new(prog);
    // Cargo's LD_LIBRARY_PATH would send the loader through many directories.
    cmd.args(args).stdout(std::process::Stdio::null()).env_remove("LD_LIBRARY_PATH");
    unsafe {
        cmd.pre_exec(|| {
            if libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().unwrap_or_else(|e| panic!("{}: {e}", prog.display()));
    let pid = child.id() as i32;
    let mut status = 0;
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, libc::__WALL) }, pid);
    assert!(libc::WIFSTOPPED(status) && libc::WSTOPSIG(status) == libc::SIGTRAP, "no exec stop: {status:#x}");
    let opts = libc::PTRACE_O_TRACESYSGOOD | libc::PTRACE_O_EXITKILL | libc::PTRACE_O_TRACECLONE;
    assert_eq!(unsafe { libc::ptrace(libc::PTRACE_SETOPTIONS, pid, 0, opts as usize) }, 0);
    let mut in_call: HashMap<i32, bool> = HashMap::new();
    in_call.insert(pid, false);
    let mut trace = Trace { calls: Vec::new(), modules: Modules::new(), exit: -1 };
    let resume = |tid: i32, sig: i32| unsafe { libc::ptrace(libc::PTRACE_SYSCALL, tid, 0, sig as usize) };
    resume(pid, 0);
    loop {
        let tid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
        if tid < 0 {
            break;
        }
        if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            if tid == pid {
                trace.exit =
                    if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) };
            }
            in_call.remove(&tid);
            continue;
        }
        let sig = libc::WSTOPSIG(status);
        let seen = in_call.contains_key(&tid);
        if sig == libc::SIGTRAP | 0x80 {
            let entering = !in_call.get(&tid).copied().unwrap_or(false);
            in_call.insert(tid, entering);
            if entering {
                let call = at_entry(pid as u32, tid, skip, &mut trace.modules);
                trace.calls.push(call);
            }
            resume(tid, 0);
        } else if status >> 16 != 0 || (sig == libc::SIGSTOP && !seen) {
            // A ptrace event (a new thread), or a new thread's first stop.
            in_call.entry(tid).or_insert(false);
            resume(tid, 0);
        } else {
            resume(tid, sig);
        }
    }
    trace
}

fn at_entry(
    pid: u32,
    tid: i32,
    skip: &[syscluster_record::callsite::unwind::SkipModule],
    modules: &mut Modules,
) -> Call {
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::ptrace(libc::PTRACE_GETREGS, tid, 0, &mut regs as *mut _ as usize) }, 0);
    let maps = read_maps(pid).unwrap();
    let mut mem = ProcessMemory::new(tid as u32);
    let mut counting = Counting { mem: &mut mem, reads: 0 };
    let r = Regs { ip: regs.rip, sp: regs.rsp, bp: regs.rbp };
    let site = find_callsite(r, &mut counting, &maps, skip).map(|found| {
        let m = &maps[found.map];
        let module = modules.intern(m.dev, m.ino);
        if let Some(p) = &m.path {
            modules.learn_path(p);
        }
        CodeAddr { module, offset: found.offset, site: found.site }
    });
    Call {
        nr: regs.orig_rax,
        args: [regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9],
        site,
        reads: counting.reads,
    }
}

/// The calls `nr` on `fd` the program made (the loader's startup calls,
/// on the same fds, end in the loader: `Unwound::Outermost`).
fn program_calls(calls: &[Call], nr: u64, fd: u64) -> Vec<&Call> {
    calls
        .iter()
        .filter(|c| c.nr == nr && c.args[0] == fd && !matches!(c.site, Err(Unwound::Outermost { .. })))
        .collect()
}

/// The resolved location of `call`, which must have one.
fn location(s: &mut Symbolizer, call: &Call) -> Location {
    let site = call.site.unwrap_or_else(|e| panic!("syscall {} {:?}: {e}", call.nr, call.args));
    s.resolve(site)
}

fn assert_at(loc: &Location, function: &str, file: &str, line: u32) {
    assert_eq!(loc.function.as_deref(), Some(function), "{loc:?}");
    let f = loc.file.as_deref().unwrap_or_else(|| panic!("no file: {loc:?}"));
    assert!(Path::new(f).file_name() == Some(OsStr::new(file)), "{loc:?}, want {file}:{line}");
    assert_eq!(loc.line, Some(line), "{loc:?}, want {file}:{line}");
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

const WRITE: u64 = libc::SYS_write as u64;
const READ: u64 = libc::SYS_read as u64;
const CLOSE: u64 = libc::SYS_close as u64;

#[test]
fn write8_writes_are_located_at_the_write_line() {
    let dir = tmp();
    let out = dir.path().join("out");
    let t = trace(&corpus("write8"), &[out.as_os_str(), OsStr::new("5")]);
    assert_eq!(t.exit, 0);
    let (calls, mut s) = t.symbolizer();
    let writes: Vec<&Call> = program_calls(&calls, WRITE, 3);
    assert_eq!(writes.len(), 5);
    let line = line_of("write8.c", "write(fd, \"01234567\", 8)");
    for w in &writes {
        let loc = location(&mut s, w);
        assert_at(&loc, "main", "write8.c", line);
        assert_eq!(loc.module, corpus("write8").display().to_string());
        assert_eq!(w.site, writes[0].site, "one call site, one address");
    }
    let close = program_calls(&calls, CLOSE, 3)[0];
    assert_at(&location(&mut s, close), "main", "write8.c", line_of("write8.c", "close(fd)"));
}

#[test]
fn copy_reads_and_writes_are_located_at_their_lines() {
    let dir = tmp();
    let (input, output) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::write(&input, vec![7u8; 10000]).unwrap();
    let t = trace(&corpus("copy"), &[input.as_os_str(), output.as_os_str()]);
    assert_eq!(t.exit, 0);
    let (calls, mut s) = t.symbolizer();
    let reads: Vec<&Call> = program_calls(&calls, READ, 3);
    let writes: Vec<&Call> = program_calls(&calls, WRITE, 4);
    assert_eq!((reads.len(), writes.len()), (4, 3));
    for r in reads {
        assert_at(&location(&mut s, r), "main", "copy.c", line_of("copy.c", "n = read(inp"));
    }
    for w in writes {
        assert_at(&location(&mut s, w), "main", "copy.c", line_of("copy.c", "write(out"));
    }
}

/// stdio's writes come from fflush, fwrite and fclose, several libc frames
/// below main; `prog` is stdio.c built some way.
fn check_stdio(prog: &Path) {
    let dir = tmp();
    let out = dir.path().join("out");
    let t = trace(prog, &[out.as_os_str(), OsStr::new("3")]);
    assert_eq!(t.exit, 0);
    let (calls, mut s) = t.symbolizer();
    let writes: Vec<&Call> = program_calls(&calls, WRITE, 3);
    let sizes: Vec<u64> = writes.iter().map(|c| c.args[2]).collect();
    assert_eq!(sizes, [8, 8, 8, 4096, 4096]);
    for w in &writes[..3] {
        assert_at(&location(&mut s, w), "main", "stdio.c", line_of("stdio.c", "fflush(f)"));
    }
    for w in &writes[3..] {
        assert_at(&location(&mut s, w), "main", "stdio.c", line_of("stdio.c", "fwrite(big"));
    }
    let close = program_calls(&calls, CLOSE, 3)[0];
    assert_at(&location(&mut s, close), "main", "stdio.c", line_of("stdio.c", "fclose(f)"));
    // write8's write is one frame deep (one read: the return address);
    // these are at least three.
    for w in &writes {
        assert!(w.reads >= 3, "only {} stack reads for a write from stdio", w.reads);
    }
}

#[test]
fn stdio_writes_unwind_through_several_libc_frames() {
    check_stdio(&corpus("stdio"));
}

#[test]
fn stdio_built_at_o0_with_frame_pointers() {
    let dir = tmp();
    let prog = dir.path().join("stdio-O0");
    {
        let _g = lock();
        cc(&corpus_dir().join("stdio.c"), &prog, &["-O0", "-g", "-fno-omit-frame-pointer"]);
    }
    check_stdio(&prog);
}

/// Every call of a real program either has a location in the program or
/// was made by the loader or libc on their own (startup, thread exit); the
/// unwinder never fails. Returns (located, outermost).
fn check_every_call_unwinds(prog: &Path, args: &[&OsStr]) -> (usize, usize) {
    let t = trace(prog, args);
    let (calls, mut s) = t.symbolizer();
    let (mut ok, mut outermost) = (0, 0);
    for c in &calls {
        match c.site {
            Ok(site) => {
                ok += 1;
                let loc = s.resolve(site);
                assert!(
                    !loc.module.contains("libc.so") && !loc.module.contains("ld-linux"),
                    "syscall {} located in {loc:?}",
                    c.nr
                );
            }
            Err(Unwound::Outermost { .. }) => outermost += 1,
            Err(e) => panic!("{}: syscall {} {:x?}: {e}", prog.display(), c.nr, c.args),
        }
    }
    eprintln!("{}: {ok} located, {outermost} made by libc or the loader on their own", prog.display());
    assert!(ok > 0);
    (ok, outermost)
}

#[test]
fn every_call_of_corpus_programs_unwinds() {
    let dir = tmp();
    let d = dir.path();
    let file = d.join("f");
    std::fs::write(&file, vec![1u8; 65536]).unwrap();
    let os = |s: &'static str| OsStr::new(s);
    check_every_call_unwinds(&corpus("write8"), &[d.join("w").as_os_str(), os("20")]);
    check_every_call_unwinds(&corpus("copy"), &[file.as_os_str(), d.join("c").as_os_str()]);
    check_every_call_unwinds(&corpus("stdio"), &[d.join("s").as_os_str(), os("4")]);
    check_every_call_unwinds(&corpus("openstat"), &[d.as_os_str(), os("5")]);
    check_every_call_unwinds(&corpus("seekread"), &[file.as_os_str(), os("5")]);
    check_every_call_unwinds(&corpus("selecttime"), &[os("5")]);
    // Threads exit from libc's start_thread: the stack ends there.
    let (_, outermost) = check_every_call_unwinds(&corpus("threads"), &[d.as_os_str(), os("3"), os("5")]);
    assert!(outermost >= 3);
}

/// A program every Linux host has, found on PATH: its absence is a broken
/// host, not a capability to skip.
fn host_program(name: &str) -> PathBuf {
    on_path(name).unwrap_or_else(|| panic!("{name} is not on PATH"))
}

#[test]
fn every_call_of_python_and_coreutils_unwinds() {
    // Programs as the distribution built them (its flags, its unwind
    // tables, modules python loads with dlopen), found at run time.
    let os = OsStr::new;
    if let Some(python) = program("python3", "python3") {
        check_every_call_unwinds(&python, &[os("-c"), os("import os, json; os.write(1, json.dumps([1]).encode())")]);
    }
    let dir = tmp();
    for i in 0..20 {
        std::fs::write(dir.path().join(format!("f{i}")), [b'x'; 10]).unwrap();
        std::os::unix::fs::symlink(format!("f{i}"), dir.path().join(format!("l{i}"))).unwrap();
    }
    check_every_call_unwinds(&host_program("ls"), &[os("-l"), dir.path().as_os_str()]);
    // The shell runs `true` as a program of its own.
    let t = host_program("true");
    check_every_call_unwinds(&host_program("sh"), &[os("-c"), os("echo hi; \"$1\""), os("sh"), t.as_os_str()]);
}

/// The `.dynsym` function of `path` that holds the instruction before file
/// offset `offset`, found here independently of the symbolizer.
fn dynsym_function_at(path: &Path, offset: u64) -> Option<String> {
    use object::{Object, ObjectSegment, ObjectSymbol};
    let data = std::fs::read(path).unwrap();
    let obj = object::File::parse(&*data).unwrap();
    let off = offset - 1;
    let vaddr = obj.segments().find_map(|s| {
        let (o, size) = s.file_range();
        (off >= o && off < o + size).then(|| off - o + s.address())
    })?;
    let mut hits: Vec<String> = obj
        .dynamic_symbols()
        .filter(|s| s.is_definition() && s.address() <= vaddr && vaddr < s.address() + s.size())
        .map(|s| s.name().unwrap().to_string())
        .collect();
    hits.sort_by_key(|n| (n.bytes().take_while(|&b| b == b'_').count(), n.len()));
    hits.into_iter().next()
}

/// A program stripped as distributions strip theirs (`strip
/// --strip-unneeded`: no .symtab, no debug info), which exports one
/// function, `sc_emit`, in .dynsym, as an interpreter exports its API
/// (python3 is linked with --export-dynamic).
const EXPORTING: &str = "#include <unistd.h>\n\
    __attribute__((noinline)) void sc_emit(int fd)\n\
    {\n\
    \x20   if (write(fd, \"x\", 1) != 1)\n\
    \x20       _exit(2);\n\
    }\n\
    int main(void)\n\
    {\n\
    \x20   sc_emit(1);\n\
    \x20   return 0;\n\
    }\n";

#[test]
fn stripped_programs_resolve_from_dynsym_or_to_module_and_offset() {
    use object::{Object, ObjectSymbol};
    let dir = tmp();
    let prog = {
        let _g = lock();
        let p = cc_text(dir.path(), "exporting", EXPORTING, &["-O2", "-g", "-Wl,--export-dynamic-symbol=sc_emit"]);
        transform("strip", &["--strip-unneeded"], &p);
        p
    };
    // The facts the test needs of the program, stated: no .symtab nor
    // debug info; .dynsym holds sc_emit but neither main nor _start.
    {
        let data = std::fs::read(&prog).unwrap();
        let obj = object::File::parse(&*data).unwrap();
        assert!(obj.section_by_name(".symtab").is_none() && obj.section_by_name(".debug_info").is_none());
        let exported: Vec<&str> =
            obj.dynamic_symbols().filter(|s| s.is_definition()).filter_map(|s| s.name().ok()).collect();
        assert!(exported.contains(&"sc_emit"), "{exported:?}");
        assert!(!exported.contains(&"main") && !exported.contains(&"_start"), "{exported:?}");
    }
    // The write is in an exported function: named from .dynsym alone.
    let t = trace(&prog, &[]);
    assert_eq!(t.exit, 0);
    let (calls, mut s) = t.symbolizer();
    let w = program_calls(&calls, WRITE, 1);
    assert_eq!(w.len(), 1);
    let loc = location(&mut s, w[0]);
    assert_eq!(loc.module, prog.display().to_string());
    assert_eq!(loc.function.as_deref(), Some("sc_emit"), "{loc:?}");
    assert_eq!(loc.function, dynsym_function_at(&prog, loc.offset), "{loc:?}");
    assert_eq!((loc.file, loc.line), (None, None));
    // exit_group, after main returned, is located at _start, which
    // .dynsym lacks: module and offset only.
    let exit = calls.iter().find(|c| c.nr == libc::SYS_exit_group as u64).unwrap();
    let loc = location(&mut s, exit);
    assert_eq!(loc.module, prog.display().to_string());
    assert_eq!(dynsym_function_at(&prog, loc.offset), None);
    assert_eq!((loc.function.as_deref(), loc.file.as_deref()), (None, None), "{loc:?}");
    assert_eq!(loc.short(), format!("exporting+{:#x}", loc.offset));
}

/// Copies corpus program write8 into `dir` as `name`, transformed by
/// `objcopy`/`strip` arguments if any.
fn write8_copy(dir: &Path, name: &str, tool: Option<(&str, &[&str])>) -> PathBuf {
    let dst = dir.join(name);
    std::fs::copy(corpus("write8"), &dst).unwrap();
    if let Some((tool, args)) = tool {
        let _g = lock();
        transform(tool, args, &dst);
    }
    dst
}

/// The site of write8's writes when `prog` (a copy of it) runs.
fn write8_site(prog: &Path, dir: &Path) -> (Vec<Call>, Symbolizer) {
    let t = trace(prog, &[dir.join("out").as_os_str(), OsStr::new("2")]);
    assert_eq!(t.exit, 0);
    t.symbolizer()
}

#[test]
fn debug_info_removed_leaves_the_function_from_symtab() {
    let dir = tmp();
    let prog = write8_copy(dir.path(), "w8-nodebug", Some(("strip", &["--strip-debug"])));
    let (calls, mut s) = write8_site(&prog, dir.path());
    let loc = location(&mut s, program_calls(&calls, WRITE, 3)[0]);
    assert_eq!(loc.function.as_deref(), Some("main"), "{loc:?}");
    assert_eq!((loc.file, loc.line), (None, None));
}

#[test]
fn all_symbols_removed_leaves_module_and_offset() {
    let dir = tmp();
    let original = write8_site(&corpus("write8"), dir.path());
    let orig_offset = program_calls(&original.0, WRITE, 3)[0].site.unwrap().offset;
    let prog = write8_copy(dir.path(), "w8-stripped", Some(("strip", &["--strip-all"])));
    let (calls, mut s) = write8_site(&prog, dir.path());
    let loc = location(&mut s, program_calls(&calls, WRITE, 3)[0]);
    assert_eq!(loc.module, prog.display().to_string());
    // strip keeps the loaded segments where they were.
    assert_eq!(loc.offset, orig_offset);
    assert_eq!((loc.function, loc.file, loc.line), (None, None, None));
}

#[test]
fn separate_debug_file_by_debuglink_and_by_build_id() {
    let dir = tmp();
    let d = dir.path();
    let line = line_of("write8.c", "write(fd, \"01234567\", 8)");
    // objcopy --only-keep-debug, then strip and link: the debug file sits
    // beside the program.
    let debug = d.join("w8.debug");
    {
        let _g = lock();
        let st = Command::new("objcopy").arg("--only-keep-debug").arg(corpus("write8")).arg(&debug).status().unwrap();
        assert!(st.success());
    }
    let linked = write8_copy(
        d,
        "w8-linked",
        Some(("objcopy", &["--strip-debug", &format!("--add-gnu-debuglink={}", debug.display())])),
    );
    let (calls, mut s) = write8_site(&linked, d);
    assert_at(&location(&mut s, program_calls(&calls, WRITE, 3)[0]), "main", "write8.c", line);
    // Without the link, by build-id under a debug directory.
    let bare = write8_copy(d, "w8-bare", Some(("strip", &["--strip-debug"])));
    let (calls, mut s) = write8_site(&bare, d);
    let site = program_calls(&calls, WRITE, 3)[0].site.unwrap();
    let debug_dir = d.join("debug");
    let id = {
        use object::Object;
        let data = std::fs::read(&bare).unwrap();
        let obj = object::File::parse(&*data).unwrap();
        obj.build_id()
            .unwrap()
            .expect("corpus programs carry a build-id")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    s.set_debug_dir(&debug_dir);
    assert_eq!(s.resolve(site).file, None, "debug info found before it was installed");
    let at = debug_dir.join(".build-id").join(&id[..2]).join(format!("{}.debug", &id[2..]));
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::fs::copy(&debug, &at).unwrap();
    s.set_debug_dir(&debug_dir);
    assert_at(&s.resolve(site), "main", "write8.c", line);
}

#[test]
fn deleted_or_replaced_programs_give_module_and_offset() {
    let dir = tmp();
    for replace in [false, true] {
        let prog = write8_copy(dir.path(), "w8-gone", None);
        let (calls, mut s) = write8_site(&prog, dir.path());
        let site = program_calls(&calls, WRITE, 3)[0].site.unwrap();
        if replace {
            // Another program renamed over it, as an upgrade or a rebuild
            // does (a new inode): its symbols must not be used.
            let new = dir.path().join("new");
            std::fs::copy(corpus("copy"), &new).unwrap();
            std::fs::rename(&new, &prog).unwrap();
        } else {
            std::fs::remove_file(&prog).unwrap();
        }
        let loc = s.resolve(site);
        assert_eq!(loc.module, prog.display().to_string());
        assert_eq!(loc.offset, site.offset);
        assert_eq!((loc.function, loc.file, loc.line), (None, None, None), "replaced: {replace}");
        std::fs::remove_file(&prog).ok();
    }
}

#[test]
fn debug_frame_covers_what_eh_frame_does_not() {
    // Without asynchronous unwind tables gcc puts the program's own CFI in
    // .debug_frame; the C runtime's start files still bring .eh_frame.
    use object::{Object, ObjectSymbol};
    use syscluster_record::callsite::unwind::{CfaRule, UnwindTable};
    let dir = tmp();
    let prog = dir.path().join("stdio-debug-frame");
    {
        let _g = lock();
        cc(
            &corpus_dir().join("stdio.c"),
            &prog,
            &["-O2", "-g", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"],
        );
    }
    let data = std::fs::read(&prog).unwrap();
    let obj = object::File::parse(&*data).unwrap();
    assert!(obj.section_by_name(".debug_frame").is_some(), "no .debug_frame");
    let main = obj.symbols().find(|s| s.name() == Ok("main")).unwrap().address();
    let table = UnwindTable::from_elf(&prog).unwrap();
    // PIE: the first PT_LOAD maps offset 0 at address 0.
    assert_eq!(table.lookup(main).map(|r| r.cfa), Some(CfaRule::Rsp(8)), "main's entry");
    let pushes = (main..main + 32).any(|o| matches!(table.lookup(o).map(|r| r.cfa), Some(CfaRule::Rsp(n)) if n > 8));
    assert!(pushes, "main's CFA never moves");
    // .eh_frame alone says nothing about main.
    let eh_only = dir.path().join("eh-only");
    {
        let _g = lock();
        let st = Command::new("objcopy")
            .args(["--remove-section", ".debug_frame"])
            .arg(&prog)
            .arg(&eh_only)
            .status()
            .unwrap();
        assert!(st.success());
    }
    let without = UnwindTable::from_elf(&eh_only).unwrap();
    assert!(matches!(without.lookup(main).map(|r| r.cfa), None | Some(CfaRule::Unknown)), "{:?}", without.lookup(main));
}

#[test]
fn calls_from_the_vdso_are_located_in_the_program() {
    let t = trace(&corpus("cputime"), &[OsStr::new("3")]);
    assert_eq!(t.exit, 0);
    let (calls, mut s) = t.symbolizer();
    let clocks = program_calls(&calls, libc::SYS_clock_gettime as u64, libc::CLOCK_PROCESS_CPUTIME_ID as u64);
    assert_eq!(clocks.len(), 3);
    for c in clocks {
        assert_at(&location(&mut s, c), "main", "cputime.c", line_of("cputime.c", "if (clock_gettime("));
    }
}

#[test]
fn inlined_function_is_named_with_its_own_line() {
    // put() is inlined into main at -O2: the location is the write() line
    // in put, and the function named is put, which holds that line.
    let dir = tmp();
    let src = dir.path().join("inl.c");
    std::fs::write(
        &src,
        "#include <unistd.h>\n\
         static inline __attribute__((always_inline)) void put(int fd)\n\
         {\n\
         \x20   write(fd, \"x\", 1);\n\
         }\n\
         int main(void)\n\
         {\n\
         \x20   put(1);\n\
         \x20   put(1);\n\
         \x20   return 0;\n\
         }\n",
    )
    .unwrap();
    let prog = dir.path().join("inl");
    {
        let _g = lock();
        cc(&src, &prog, &["-O2", "-g"]);
    }
    let t = trace(&prog, &[]);
    let (calls, mut s) = t.symbolizer();
    let writes = program_calls(&calls, WRITE, 1);
    assert_eq!(writes.len(), 2);
    assert_ne!(writes[0].site, writes[1].site, "two inlined copies, two call sites");
    for w in writes {
        assert_at(&location(&mut s, w), "put", "inl.c", 4);
    }
}
