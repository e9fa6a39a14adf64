//! `syscluster calibrate`: measure this machine once and cache the figures.

use crate::flags::CalibrateArgs;
use crate::Failure;
use std::path::PathBuf;
use syscluster_advise::calibration::{self, Calibration};
use syscluster_advise::measure::{self, MeasureOptions};

/// libmulticall's mc-calibrate: the flag, `$SYSCLUSTER_MC_CALIBRATE` (`none`
/// or empty: do not run it), installed beside syscluster (`make install`),
/// or `libmulticall/build/mc-calibrate` in a directory above syscluster's
/// own (a source tree's `target/release/syscluster`).
pub(crate) fn find_mc_calibrate(flag: Option<PathBuf>) -> Option<PathBuf> {
    if flag.is_some() {
        return flag;
    }
    match std::env::var_os("SYSCLUSTER_MC_CALIBRATE") {
        Some(v) if v == "none" || v.is_empty() => return None,
        Some(v) => return Some(PathBuf::from(v)),
        None => {}
    }
    let exe = std::env::current_exe().ok()?;
    // Beside the binary (bin/), from the full CLI in lib/syscluster to bin/,
    // or in the build tree.
    std::iter::once(exe.with_file_name("mc-calibrate"))
        .chain(exe.parent().map(|d| d.join("../../bin/mc-calibrate")))
        .chain(exe.ancestors().skip(1).take(4).map(|d| d.join("libmulticall/build/mc-calibrate")))
        .find(|p| p.is_file())
}

/// Measures this machine and stores the calibration at `path`.
pub(crate) fn calibrate(
    path: &std::path::Path,
    samples: u32,
    dir: Option<PathBuf>,
    mc: Option<PathBuf>,
    quick: bool,
    quiet: bool,
) -> Result<Calibration, Failure> {
    let dir = match dir {
        Some(d) => d,
        None => {
            let d = path.parent().map(|p| p.to_path_buf()).unwrap_or_else(std::env::temp_dir);
            std::fs::create_dir_all(&d).map_err(|e| Failure::new(format!("cannot create {}: {e}", d.display())))?;
            d
        }
    };
    if !dir.is_dir() {
        return Err(Failure::new(format!("{} is not a directory", dir.display())));
    }
    // libmulticall's auto backend reads its own file from the same directory.
    let mc_out = path.with_file_name("multicall-calibration.json");
    let opts =
        MeasureOptions { samples, dir, mc_calibrate: mc.map(|t| (t, mc_out)), mc_quick: quick, ..Default::default() };
    if !quiet {
        eprintln!("syscluster: calibrating this machine ({} samples per figure)…", samples);
    }
    let mut progress = |l: &str| {
        if !quiet {
            eprintln!("  {l}");
        }
    };
    let mut c = measure::measure(&opts, &mut progress).map_err(|e| Failure::new(format!("calibration failed: {e}")))?;
    c.tracers = measure_tracers(samples, &mut progress);
    c.save(path).map_err(|e| Failure::new(format!("cannot write calibration {}: {e}", path.display())))?;
    if !quiet {
        eprintln!("syscluster: calibration stored in {}", path.display());
    }
    Ok(c)
}

/// A loop of cheap calls (`dd bs=1`: a read of /dev/zero and a write to
/// /dev/null per byte), `blocks` times round.
fn dd_loop(blocks: u64) -> Vec<std::ffi::OsString> {
    ["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "status=none"]
        .iter()
        .map(|s| s.into())
        .chain(std::iter::once(format!("count={blocks}").into()))
        .collect()
}

/// Wall time and CPU time (user + system) of one untraced run of `argv`, ns.
fn untraced_ns(argv: &[std::ffi::OsString]) -> Option<(f64, f64)> {
    let t = std::time::Instant::now();
    let child =
        std::process::Command::new(&argv[0]).args(&argv[1..]).stdin(std::process::Stdio::null()).spawn().ok()?;
    let mut st = 0;
    // SAFETY: zeroed rusage is valid; wait4 reaps the child just spawned.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut st, 0, &mut ru) };
    let wall = t.elapsed().as_nanos() as f64;
    let ns = |t: libc::timeval| t.tv_sec as f64 * 1e9 + t.tv_usec as f64 * 1e3;
    (pid == child.id() as i32 && libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0)
        .then(|| (wall, ns(ru.ru_utime) + ns(ru.ru_stime)))
}

/// One recorded run of `argv`: (recorded duration, calls, kernel time of
/// one write to /dev/null, CPU time of the program or NaN), ns. That write does a few ns of work of its
/// own: the kernel time it shows is the recorder's.
fn traced(
    argv: &[std::ffi::OsString],
    opts: &syscluster_record::RecordOptions,
) -> Result<(f64, f64, f64, f64), String> {
    let r = syscluster_record::record(argv, opts).map_err(|e| e.to_string())?;
    if r.exit.shell_code() != 0 {
        return Err(format!("{} failed under the recorder", argv[0].to_string_lossy()));
    }
    let p = &r.profile;
    let null_write = p
        .nodes
        .iter()
        .filter(|n| n.syscall == "write" && n.count > 0)
        .max_by_key(|n| n.count)
        .map_or(0.0, |n| n.kernel_ns as f64 / n.count as f64);
    Ok((p.meta.duration_ns as f64, p.meta.total_calls as f64, null_write, p.meta.cpu_ns.map_or(f64::NAN, |c| c as f64)))
}

/// What each recorder (BPF events, BPF aggregate, ptrace) costs per
/// recorded call and per run: the same loop of cheap calls at two lengths,
/// recorded and not; the differences between the lengths take out what
/// starting a program costs, the least disturbed of `samples` runs counts.
/// A recorder that cannot run here is left out (its profiles' shares are
/// then of the traced run, and advise says so).
fn measure_tracers(samples: u32, progress: &mut dyn FnMut(&str)) -> Vec<calibration::TracerCost> {
    use syscluster_record::{Backend, Mode, RecordOptions};
    let samples = samples.clamp(1, 3);
    let mut out = Vec::new();
    let setups = [
        (Backend::Bpf, Mode::Events, 100_000u64),
        (Backend::Bpf, Mode::Aggregate, 100_000),
        (Backend::Ptrace, Mode::Events, 10_000),
    ];
    for (backend, mode, n) in setups {
        let opts = RecordOptions { backend: Some(backend), mode, ..Default::default() };
        let (short, long) = (dd_loop(n), dd_loop(2 * n));
        let mut best = [f64::MAX; 4]; // traced short, traced long, untraced short, untraced long
                                      // The same, CPU time (user + system) of the program.
        let mut cpu = [f64::MAX; 4];
        let (mut calls, mut kernel) = ((0.0, 0.0), f64::MAX);
        let mut failed = None;
        for _ in 0..samples {
            match (traced(&short, &opts), traced(&long, &opts)) {
                (Ok(a), Ok(b)) => {
                    if a.0 < best[0] {
                        best[0] = a.0;
                    }
                    if b.0 < best[1] {
                        best[1] = b.0;
                    }
                    calls = (a.1, b.1);
                    cpu[0] = cpu[0].min(a.3);
                    cpu[1] = cpu[1].min(b.3);
                    kernel = kernel.min(a.2).min(b.2);
                }
                (Err(e), _) | (_, Err(e)) => {
                    failed = Some(e);
                    break;
                }
            }
            let (s, l) = (untraced_ns(&short), untraced_ns(&long));
            best[2] = best[2].min(s.map_or(f64::MAX, |t| t.0));
            best[3] = best[3].min(l.map_or(f64::MAX, |t| t.0));
            cpu[2] = cpu[2].min(s.map_or(f64::MAX, |t| t.1));
            cpu[3] = cpu[3].min(l.map_or(f64::MAX, |t| t.1));
        }
        let name = match backend {
            Backend::Bpf => format!("bpf/{}", mode.as_str()),
            Backend::Ptrace => "ptrace".to_string(),
        };
        if let Some(e) = failed {
            progress(&format!("recorder {name}: not measured ({e})"));
            continue;
        }
        let extra = calls.1 - calls.0;
        if extra <= 0.0 || best[3] == f64::MAX || best[2] == f64::MAX {
            progress(&format!("recorder {name}: not measured (dd did not run)"));
            continue;
        }
        let per_call_untraced = ((best[3] - best[2]) / extra).max(0.0);
        let per_call = ((best[1] - best[0]) / extra - per_call_untraced).max(0.0);
        let fixed = (best[0] - best[2] - per_call * calls.0).max(0.0);
        // f64::min ignores NaN: a CPU time not measured leaves MAX.
        let cpu_per_call =
            cpu.iter().all(|&c| c < f64::MAX).then(|| (((cpu[1] - cpu[0]) - (cpu[3] - cpu[2])) / extra).max(0.0));
        // What the recorder adds between a call's timestamps: the kernel
        // time of a write to /dev/null (a few ns of its own work).
        let kernel_ns = if kernel == f64::MAX { 0.0 } else { kernel.min(per_call) };
        let meta_mode = match backend {
            Backend::Bpf => mode.as_str(),
            Backend::Ptrace => "trace",
        };
        progress(&format!(
            "recorder {name}: {per_call:.0} ns per recorded call ({kernel_ns:.0} ns of it inside the call), {:.1} ms per run",
            fixed / 1e6
        ));
        out.push(calibration::TracerCost {
            backend: backend.as_str().into(),
            mode: meta_mode.into(),
            per_call_ns: per_call,
            fixed_ns: fixed,
            kernel_ns,
            cpu_per_call_ns: cpu_per_call,
            calls: calls.1 as u64,
            samples,
            what: format!(
                "dd bs=1 count={n} and count={} (read of /dev/zero, write to /dev/null), recorded and not; differences between the two lengths, least disturbed of {samples} runs; inside the call: the kernel time of the write to /dev/null",
                2 * n
            ),
        });
    }
    out
}

pub fn run(a: CalibrateArgs) -> Result<i32, Failure> {
    let path = match a.output {
        Some(p) => p,
        None => calibration::default_path()?,
    };
    let mc = find_mc_calibrate(a.mc_calibrate);
    let samples = if a.quick { a.samples.min(3) } else { a.samples };
    let c = calibrate(&path, samples, a.dir, mc, a.quick, a.quiet)?;
    use syscluster_report::{json::Json, text::Text, Render, ReportOptions};
    if a.json {
        super::advise::write_out(None, &Json.render(&c, &ReportOptions::default()), "calibration")?;
        return Ok(0);
    }
    let mut o = Text.render(&c, &ReportOptions::default());
    o.extend_from_slice(format!("stored in {}\n", path.display()).as_bytes());
    super::advise::write_out(None, &o, "calibration")?;
    Ok(0)
}
