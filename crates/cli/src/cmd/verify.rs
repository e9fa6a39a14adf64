//! `syscluster verify`: run an original and a candidate in scratch copies of
//! a directory and compare byte for byte what each did, under the same
//! faults; crossings and times side by side, as `stat` measures them.
//!
//! Every execution runs at one path, `<scratch>/work`, so that a program
//! that writes its working directory somewhere writes the same bytes in
//! both variants; afterwards the copy is moved aside (copied off the tmpfs
//! with --fs-limit) and compared with the other variant's.

use super::stat::{launch_failure, timed_run};
use crate::flags::VerifyArgs;
use crate::Failure;
use std::ffi::{CString, OsString};
use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use syscluster_record::launch::ExitStatus;
use syscluster_record::ptrace::fault::Fault;
use syscluster_record::RecordOptions;
use syscluster_report::{text::Text, Exit, Render, ReportOptions, Variant, Verification};

/// Largest directory verify copies, in bytes and in entries.
const MAX_COPY_BYTES: u64 = 256 << 20;
const MAX_COPY_ENTRIES: usize = 20_000;

/// Exit status when verify itself cannot run.
fn cannot(message: impl Into<String>) -> Failure {
    Failure::with_code(message, 2)
}

/// What one execution of one variant did.
struct Execution {
    exit: ExitStatus,
    stdout: PathBuf,
    stderr: PathBuf,
    /// The scratch copy after the run.
    tree: PathBuf,
}

/// The measurements of one variant over all its runs.
#[derive(Default)]
struct Figures {
    wall: Vec<u64>,
    user: Vec<u64>,
    sys: Vec<u64>,
    crossings: Vec<u64>,
    /// Per --inject fault, the calls of its kind seen in each run.
    faults_seen: Vec<Vec<u64>>,
    exits: Vec<ExitStatus>,
}

/// The scratch directory, removed (and its tmpfs unmounted) when dropped.
struct Scratch {
    root: PathBuf,
    keep: bool,
    mounted: bool,
}

impl Scratch {
    fn new(keep: bool) -> Result<Scratch, Failure> {
        let base = std::env::var_os("TMPDIR").map(PathBuf::from).unwrap_or_else(|| "/tmp".into());
        let template = CString::new(base.join("syscluster-verify.XXXXXX").as_os_str().as_bytes())
            .map_err(|_| cannot("bad TMPDIR"))?;
        let mut buf = template.into_bytes_with_nul();
        if unsafe { libc::mkdtemp(buf.as_mut_ptr() as *mut libc::c_char) }.is_null() {
            return Err(cannot(format!(
                "cannot make a scratch directory in {}: {}",
                base.display(),
                std::io::Error::last_os_error()
            )));
        }
        buf.pop();
        let root = PathBuf::from(OsString::from(std::ffi::OsStr::from_bytes(&buf)));
        Ok(Scratch { root, keep, mounted: false })
    }

    fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    fn unmount(&mut self) {
        if self.mounted {
            if let Ok(c) = CString::new(self.work().as_os_str().as_bytes()) {
                unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
            }
            self.mounted = false;
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.unmount();
        if self.keep {
            eprintln!("syscluster: scratch copies kept in {}", self.root.display());
        } else {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}

/// `64K`, `1M`, `2G`, `4096`: bytes.
fn parse_size(s: &str) -> Result<u64, Failure> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(cannot(format!("bad --fs-limit {s:?}: expected a size such as 4096, 64K, 1M"))),
    };
    match digits.parse::<u64>() {
        Ok(n) if n > 0 && n.checked_shl(shift).is_some_and(|b| b >> shift == n) => Ok(n << shift),
        _ => Err(cannot(format!("bad --fs-limit {s:?}: expected a size such as 4096, 64K, 1M"))),
    }
}

/// Splits `ORIGINAL… ::: CANDIDATE…` (or builds the --run candidate).
fn variants(a: &VerifyArgs) -> Result<(Vec<OsString>, Vec<OsString>), Failure> {
    let sep = a.command.iter().position(|s| s == ":::");
    if a.run {
        if sep.is_some() {
            return Err(cannot(
                "--run takes one command (the candidate is that command under `syscluster run`), not `:::`",
            ));
        }
        let exe = std::env::current_exe().map_err(|e| cannot(format!("cannot find the syscluster binary: {e}")))?;
        let mut candidate: Vec<OsString> = vec![exe.into(), "run".into()];
        if let Some(plan) = &a.plan {
            let plan =
                fs::canonicalize(plan).map_err(|e| cannot(format!("cannot read plan {}: {e}", plan.display())))?;
            candidate.extend(["--plan".into(), plan.into()]);
        }
        candidate.push("--".into());
        candidate.extend(a.command.iter().cloned());
        return Ok((a.command.clone(), candidate));
    }
    let Some(i) = sep else {
        return Err(cannot("expected ORIGINAL… ::: CANDIDATE… (or --run CMD…)"));
    };
    let (original, candidate) = (a.command[..i].to_vec(), a.command[i + 1..].to_vec());
    if original.is_empty() || candidate.is_empty() {
        return Err(cannot("both sides of `:::` need a command"));
    }
    if candidate.iter().any(|s| s == ":::") {
        return Err(cannot("`:::` appears twice: one ORIGINAL and one CANDIDATE"));
    }
    Ok((original, candidate))
}

/// Bytes and entries under `dir`, refusing what cannot be copied.
fn measure_tree(dir: &Path, bytes: &mut u64, entries: &mut usize) -> Result<(), Failure> {
    let rd = fs::read_dir(dir).map_err(|e| cannot(format!("cannot read {}: {e}", dir.display())))?;
    for entry in rd {
        let entry = entry.map_err(|e| cannot(format!("cannot read {}: {e}", dir.display())))?;
        let md = entry
            .path()
            .symlink_metadata()
            .map_err(|e| cannot(format!("cannot read {}: {e}", entry.path().display())))?;
        *entries += 1;
        *bytes += md.len();
        if *bytes > MAX_COPY_BYTES || *entries > MAX_COPY_ENTRIES {
            return Err(cannot(format!(
                "{} is too big to copy for each run (over {} MiB or {MAX_COPY_ENTRIES} entries): give a smaller --dir",
                dir.display(),
                MAX_COPY_BYTES >> 20
            )));
        }
        if md.is_dir() {
            measure_tree(&entry.path(), bytes, entries)?;
        }
    }
    Ok(())
}

/// Copies the tree `from` into the existing directory `to`: directories,
/// regular files and symbolic links, with their permission bits.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let md = src.symlink_metadata()?;
        let ft = md.file_type();
        if ft.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&src)?, &dst)?;
        } else if ft.is_dir() {
            fs::create_dir(&dst)?;
            copy_tree(&src, &dst)?;
            fs::set_permissions(&dst, md.permissions())?;
        } else if ft.is_file() {
            fs::copy(&src, &dst)?;
        } else {
            return Err(std::io::Error::other(format!("{} is not a file, directory or link", src.display())));
        }
    }
    Ok(())
}

/// Redirects stdin, stdout and stderr of this process (and so of the
/// command it starts) while alive; restores them when dropped.
struct Redirect {
    saved: [libc::c_int; 3],
}

impl Redirect {
    fn new(stdout: &Path, stderr: &Path) -> Result<Redirect, Failure> {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        let null = fs::File::open("/dev/null").map_err(|e| cannot(format!("/dev/null: {e}")))?;
        let out = fs::File::create(stdout).map_err(|e| cannot(format!("{}: {e}", stdout.display())))?;
        let err = fs::File::create(stderr).map_err(|e| cannot(format!("{}: {e}", stderr.display())))?;
        let mut saved = [-1; 3];
        for (fd, file) in [(0, &null), (1, &out), (2, &err)] {
            use std::os::fd::AsRawFd;
            saved[fd as usize] = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
            unsafe { libc::dup2(file.as_raw_fd(), fd) };
        }
        Ok(Redirect { saved })
    }
}

impl Drop for Redirect {
    fn drop(&mut self) {
        for (fd, saved) in self.saved.iter().enumerate() {
            if *saved >= 0 {
                unsafe {
                    libc::dup2(*saved, fd as libc::c_int);
                    libc::close(*saved);
                }
            }
        }
    }
}

/// SIGINT, SIGTERM or SIGHUP reached verify during an untraced run.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Notes SIGINT, SIGTERM and SIGHUP instead of dying of them, so that the
/// scratch copies are removed and the tmpfs unmounted (the recorder puts
/// its own handler in place while it records: it passes them on to the
/// command and counts them).
fn note_interrupts() {
    extern "C" fn note(_: libc::c_int) {
        INTERRUPTED.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        unsafe { libc::signal(sig, note as extern "C" fn(libc::c_int) as libc::sighandler_t) };
    }
}

fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) || syscluster_record::launch::interrupts() > 0
}

/// How one execution is made.
#[derive(Clone, Copy)]
enum How<'a> {
    /// Untraced, timed.
    Timed,
    /// Under the recorder (crossings), with the faults of the options.
    Recorded(&'a RecordOptions),
}

struct Runner {
    source: PathBuf,
    scratch: Scratch,
    fs_limit: Option<u64>,
    cwd: PathBuf,
}

impl Runner {
    /// Prepares `<scratch>/work` as a fresh copy of the source.
    fn prepare(&mut self) -> Result<(), Failure> {
        let work = self.scratch.work();
        fs::create_dir(&work).map_err(|e| cannot(format!("cannot make {}: {e}", work.display())))?;
        if let Some(size) = self.fs_limit {
            let target = CString::new(work.as_os_str().as_bytes()).expect("no NUL in a path");
            let data = CString::new(format!("size={size},mode=0755")).expect("no NUL");
            let r = unsafe {
                libc::mount(
                    c"syscluster-verify".as_ptr(),
                    target.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    data.as_ptr() as *const libc::c_void,
                )
            };
            if r != 0 {
                return Err(cannot(format!(
                    "--fs-limit: cannot mount a tmpfs on {}: {} (needs root)",
                    work.display(),
                    std::io::Error::last_os_error()
                )));
            }
            self.scratch.mounted = true;
        }
        let mode = fs::metadata(&self.source).map(|m| m.permissions().mode()).unwrap_or(0o755);
        copy_tree(&self.source, &work)
            .and_then(|_| fs::set_permissions(&work, fs::Permissions::from_mode(mode)))
            .map_err(|e| {
                let full = if e.raw_os_error() == Some(libc::ENOSPC) { " (it does not fit in --fs-limit)" } else { "" };
                cannot(format!("cannot copy {} for a run: {e}{full}", self.source.display()))
            })
    }

    /// Runs `argv` once in a fresh copy; the copy is then kept as `name`.
    fn execute(&mut self, argv: &[OsString], how: How, name: &str, fig: &mut Figures) -> Result<Execution, Failure> {
        note_interrupts();
        self.prepare()?;
        let work = self.scratch.work();
        let stdout = self.scratch.root.join(format!("{name}.stdout"));
        let stderr = self.scratch.root.join(format!("{name}.stderr"));
        std::env::set_current_dir(&work).map_err(|e| cannot(format!("cannot enter {}: {e}", work.display())))?;
        let result = {
            let _redirect = Redirect::new(&stdout, &stderr)?;
            match how {
                How::Timed => timed_run(argv).map(|t| {
                    fig.wall.push(t.wall);
                    fig.user.push(t.user);
                    fig.sys.push(t.sys);
                    t.exit
                }),
                How::Recorded(opts) => syscluster_record::record(argv, opts)
                    .map_err(|e| match e {
                        syscluster_record::RecordError::Launch(l) => launch_failure(l),
                        e => Failure::new(e.to_string()),
                    })
                    .map(|rec| {
                        fig.crossings.push(rec.profile.meta.total_calls);
                        if !opts.faults.is_empty() {
                            fig.faults_seen.push(rec.faults_seen.clone());
                            // Under ptrace the recording is the only run: its times.
                            fig.wall.push(rec.profile.meta.duration_ns);
                        }
                        rec.exit
                    }),
            }
        };
        let _ = std::env::set_current_dir(&self.cwd);
        if interrupted() {
            return Err(cannot("interrupted; the scratch copies were removed"));
        }
        let role = name.split('-').next().unwrap_or(name);
        let exit = result.map_err(|f| cannot(format!("the {role}: {}", f.message)))?;
        fig.exits.push(exit);
        let tree = self.scratch.root.join(name);
        if self.scratch.mounted {
            fs::create_dir(&tree)
                .and_then(|_| copy_tree(&work, &tree))
                .map_err(|e| cannot(format!("cannot save {}: {e}", work.display())))?;
            self.scratch.unmount();
            fs::remove_dir(&work).map_err(|e| cannot(format!("cannot remove {}: {e}", work.display())))?;
        } else {
            fs::rename(&work, &tree).map_err(|e| cannot(format!("cannot save {}: {e}", work.display())))?;
        }
        Ok(Execution { exit, stdout, stderr, tree })
    }

    /// Removes what `e` left (unless the copies are kept).
    fn discard(&self, e: &Execution) {
        if !self.scratch.keep {
            let _ = fs::remove_dir_all(&e.tree);
            let _ = fs::remove_file(&e.stdout);
            let _ = fs::remove_file(&e.stderr);
        }
    }
}

/// A printable excerpt of `bytes` around `at`: escapes, and where `at` is.
fn excerpt(bytes: &[u8], at: usize) -> String {
    let from = at.saturating_sub(16);
    let to = (at + 16).min(bytes.len());
    let mut s = String::new();
    if from > 0 {
        s.push('…');
    }
    s.push('"');
    for (i, &b) in bytes[from..to].iter().enumerate() {
        if from + i == at {
            s.push('⟦');
        }
        s.extend(std::ascii::escape_default(b).map(char::from));
    }
    if at >= to {
        s.push('⟦');
    }
    s.push('"');
    if to < bytes.len() {
        s.push('…');
    }
    s
}

/// Compares two byte strings; `None` if equal, else a description.
fn compare_bytes(what: &str, a: &[u8], b: &[u8]) -> Option<String> {
    if a == b {
        return None;
    }
    let at = a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
    Some(format!(
        "{what}: first difference at byte {at} (original {} bytes, candidate {} bytes)\n      original:  {}\n      candidate: {}",
        a.len(),
        b.len(),
        excerpt(a, at),
        excerpt(b, at)
    ))
}

fn read(path: &Path) -> Result<Vec<u8>, Failure> {
    let mut v = Vec::new();
    fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut v))
        .map_err(|e| cannot(format!("cannot read {}: {e}", path.display())))?;
    Ok(v)
}

/// What is at one relative path of a tree.
#[derive(PartialEq, Eq)]
enum Entry {
    Dir(u32),
    File(u32, u64),
    Link(PathBuf),
}

impl Entry {
    fn describe(&self) -> String {
        match self {
            Entry::Dir(m) => format!("a directory (mode {m:o})"),
            Entry::File(m, n) => format!("a file of {n} bytes (mode {m:o})"),
            Entry::Link(t) => format!("a link to {}", t.display()),
        }
    }
}

fn list_tree(root: &Path, rel: &Path, out: &mut std::collections::BTreeMap<PathBuf, Entry>) -> Result<(), Failure> {
    let dir = root.join(rel);
    let rd = fs::read_dir(&dir).map_err(|e| cannot(format!("cannot read {}: {e}", dir.display())))?;
    for entry in rd {
        let entry = entry.map_err(|e| cannot(format!("cannot read {}: {e}", dir.display())))?;
        let path = rel.join(entry.file_name());
        let md = entry
            .path()
            .symlink_metadata()
            .map_err(|e| cannot(format!("cannot read {}: {e}", entry.path().display())))?;
        let mode = md.mode() & 0o7777;
        if md.file_type().is_symlink() {
            out.insert(path, Entry::Link(fs::read_link(entry.path()).unwrap_or_default()));
        } else if md.is_dir() {
            out.insert(path.clone(), Entry::Dir(mode));
            list_tree(root, &path, out)?;
        } else {
            out.insert(path, Entry::File(mode, md.len()));
        }
    }
    Ok(())
}

/// The files of `dir` that differ from `source`: created, changed, deleted.
fn changes(source: &Path, dir: &Path) -> Result<(usize, usize, usize), Failure> {
    let (mut s, mut d) = (Default::default(), Default::default());
    list_tree(source, Path::new(""), &mut s)?;
    list_tree(dir, Path::new(""), &mut d)?;
    let created = d.keys().filter(|k| !s.contains_key(*k)).count();
    let deleted = s.keys().filter(|k| !d.contains_key(*k)).count();
    let mut changed = 0;
    for (k, e) in &d {
        if let Some(f) = s.get(k) {
            if e != f || (matches!(e, Entry::File(..)) && read(&source.join(k))? != read(&dir.join(k))?) {
                changed += 1;
            }
        }
    }
    Ok((created, changed, deleted))
}

/// Every difference between two executions, one description each.
fn differences(a: &Execution, b: &Execution) -> Result<Vec<String>, Failure> {
    let mut out = Vec::new();
    if a.exit != b.exit {
        out.push(format!("exit status: original {}, candidate {}", status(a.exit), status(b.exit)));
    }
    out.extend(compare_bytes("stdout", &read(&a.stdout)?, &read(&b.stdout)?));
    out.extend(compare_bytes("stderr", &read(&a.stderr)?, &read(&b.stderr)?));
    let (mut ta, mut tb) = (std::collections::BTreeMap::new(), std::collections::BTreeMap::new());
    list_tree(&a.tree, Path::new(""), &mut ta)?;
    list_tree(&b.tree, Path::new(""), &mut tb)?;
    let mut paths: Vec<&PathBuf> = ta.keys().chain(tb.keys()).collect();
    paths.sort();
    paths.dedup();
    for p in paths {
        let name = p.display();
        match (ta.get(p), tb.get(p)) {
            (Some(x), None) => out.push(format!("file {name}: only the original has it ({})", x.describe())),
            (None, Some(y)) => out.push(format!("file {name}: only the candidate has it ({})", y.describe())),
            (Some(Entry::File(m, _)), Some(Entry::File(n, _))) => {
                out.extend(compare_bytes(&format!("file {name}"), &read(&a.tree.join(p))?, &read(&b.tree.join(p))?));
                if m != n {
                    out.push(format!("file {name}: mode {m:o} in the original, {n:o} in the candidate"));
                }
            }
            (Some(x), Some(y)) if x != y => {
                out.push(format!("file {name}: {} in the original, {} in the candidate", x.describe(), y.describe()))
            }
            _ => {}
        }
    }
    Ok(out)
}

fn status(s: ExitStatus) -> String {
    match s {
        ExitStatus::Code(c) => format!("exit {c}"),
        ExitStatus::Signal(sig) => format!("killed by signal {sig}"),
    }
}

pub fn run(a: VerifyArgs) -> Result<i32, Failure> {
    let (original, candidate) = variants(&a)?;
    let faults: Vec<Fault> = a.inject.iter().map(|s| Fault::parse(s).map_err(cannot)).collect::<Result<_, _>>()?;
    if a.run && !faults.is_empty() {
        return Err(cannot(
            "--inject cannot be used with --run: the runtime changes which calls reach the kernel, so the K-th call is not the \
             same call in both; use --fs-limit",
        ));
    }
    if !faults.is_empty() && a.no_count {
        return Err(cannot(
            "--inject runs the variants under ptrace, which counts their crossings: --no-count does not apply",
        ));
    }
    let fs_limit = a.fs_limit.as_deref().map(parse_size).transpose()?;
    let cwd = std::env::current_dir().map_err(|e| cannot(format!("no current directory: {e}")))?;
    let source = fs::canonicalize(a.dir.as_deref().unwrap_or(&cwd)).map_err(|e| cannot(format!("--dir: {e}")))?;
    if !source.is_dir() {
        return Err(cannot(format!("{} is not a directory", source.display())));
    }
    let (mut bytes, mut entries) = (0, 0);
    measure_tree(&source, &mut bytes, &mut entries)?;
    if !faults.is_empty() {
        // Every call of a multi-call issued on its own, in the source's order.
        std::env::set_var("MULTICALL_BACKEND", "direct");
    }
    let scratch = Scratch::new(a.keep)?;
    let mut runner = Runner { source: source.clone(), scratch, fs_limit, cwd };
    let opts =
        RecordOptions { faults: faults.clone(), ..super::stat::counting_options(a.ptrace || !faults.is_empty()) };
    let hows: Vec<How> = if !faults.is_empty() {
        vec![How::Recorded(&opts)]
    } else if a.no_count {
        vec![How::Timed]
    } else {
        vec![How::Timed, How::Recorded(&opts)]
    };
    let (mut fa, mut fb) = (Figures::default(), Figures::default());
    let mut found: Vec<(u32, String)> = Vec::new();
    let mut files = ((0, 0, 0), (0, 0, 0));
    for i in 1..=a.runs {
        for (j, how) in hows.iter().enumerate() {
            let ea = runner.execute(&original, *how, &format!("original-{i}-{j}"), &mut fa)?;
            let eb = runner.execute(&candidate, *how, &format!("candidate-{i}-{j}"), &mut fb)?;
            if i == 1 && j == 0 {
                files = (changes(&source, &ea.tree)?, changes(&source, &eb.tree)?);
            }
            for d in differences(&ea, &eb)? {
                if !found.iter().any(|(_, x)| *x == d) {
                    found.push((i, d));
                }
            }
            runner.discard(&ea);
            runner.discard(&eb);
        }
    }
    drop(runner);

    // Faults that never fired test nothing.
    let mut faults_injected = Vec::new();
    for (k, f) in faults.iter().enumerate() {
        let most = |fig: &Figures| fig.faults_seen.iter().map(|v| v[k]).min().unwrap_or(0);
        let (sa, sb) = (most(&fa), most(&fb));
        match (sa >= f.nth, sb >= f.nth) {
            (false, false) => {
                return Err(cannot(format!(
                    "fault {f} was never injected: the original made {sa} such call{}, the candidate {sb}",
                    if sa == 1 { "" } else { "s" }
                )))
            }
            (true, false) => found.push((
                1,
                format!(
                    "fault {f}: the candidate made only {sb} such call{} (the original {sa})",
                    if sb == 1 { "" } else { "s" }
                ),
            )),
            (false, true) => found.push((
                1,
                format!(
                    "fault {f}: the original made only {sa} such call{} (the candidate {sb})",
                    if sa == 1 { "" } else { "s" }
                ),
            )),
            (true, true) => faults_injected.push(f.to_string()),
        }
    }

    let side = |command: &[OsString], fig: Figures, files: (usize, usize, usize)| Variant {
        command: command.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        exit: match fig.exits[0] {
            ExitStatus::Code(c) => Exit::Code(c),
            ExitStatus::Signal(sig) => Exit::Signal(sig),
        },
        files,
        wall: fig.wall,
        user: fig.user,
        system: fig.sys,
        crossings: fig.crossings,
    };
    let code = if found.is_empty() { 0 } else { 1 };
    let verification = Verification {
        runs: a.runs,
        original: side(&original, fa, files.0),
        candidate: side(&candidate, fb, files.1),
        traced: !faults.is_empty(),
        faults_injected,
        fs_limit,
        differences: found,
    };
    let out = Text.render(&verification, &ReportOptions::default());
    std::io::Write::write_all(&mut std::io::stdout(), &out).map_err(|e| cannot(format!("stdout: {e}")))?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").ok(), Some(4096));
        assert_eq!(parse_size("64K").ok(), Some(65536));
        assert_eq!(parse_size("1m").ok(), Some(1 << 20));
        assert_eq!(parse_size("2GiB").ok(), Some(2 << 30));
        for bad in ["", "0", "K", "12X", "-1", "99999999999999999999G"] {
            assert!(parse_size(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn first_difference_and_context() {
        assert!(compare_bytes("x", b"abc", b"abc").is_none());
        let d = compare_bytes("file out", b"0123456789", b"0123X56789").unwrap();
        assert!(d.starts_with("file out: first difference at byte 4 (original 10 bytes, candidate 10 bytes)"), "{d}");
        assert!(d.contains("\"0123⟦456789\"") && d.contains("\"0123⟦X56789\""), "{d}");
        let d = compare_bytes("stdout", b"ab", b"abc").unwrap();
        assert!(d.contains("byte 2") && d.contains("\"ab⟦\""), "{d}");
        assert_eq!(excerpt(&[b'a'; 40], 30), format!("…\"{}⟦{}\"", "a".repeat(16), "a".repeat(10)));
    }
}
