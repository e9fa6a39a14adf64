//! `syscluster calibrate`: measure this machine once and cache the figures.

use crate::flags::CalibrateArgs;
use crate::Failure;
use std::path::PathBuf;
use syscluster_advise::calibration::{self, Calibration};
use syscluster_calibrate::measure::{self, MeasureOptions};

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
    c.tracers = syscluster_calibrate::tracers::measure_tracers(samples, &mut progress);
    c.save(path).map_err(|e| Failure::new(format!("cannot write calibration {}: {e}", path.display())))?;
    if !quiet {
        eprintln!("syscluster: calibration stored in {}", path.display());
    }
    Ok(c)
}

pub fn run(a: CalibrateArgs) -> Result<i32, Failure> {
    let path = match a.output {
        Some(p) => p,
        None => calibration::default_path()?,
    };
    let mc = find_mc_calibrate(a.mc_calibrate);
    let samples = if a.quick { a.samples.min(3) } else { a.samples };
    let c = calibrate(&path, samples, a.dir, mc, a.quick, a.quiet)?;
    if a.json {
        let mut v = serde_json::to_vec_pretty(&c).expect("a calibration serializes");
        v.push(b'\n');
        super::advise::write_out(None, &v, "calibration")?;
        return Ok(0);
    }
    use std::fmt::Write as _;
    let mut o = String::new();
    let x = &c.crossing;
    let _ = writeln!(o, "Crossing against function call (seed 000 table 1), measured on {}", c.machine);
    let _ = writeln!(o, "  {:<28} {:>10} {:>10} {:>8}", "", "ns", "median ns", "ratio");
    let _ = writeln!(
        o,
        "  {:<28} {:>10.1} {:>10.1} {:>7.0}×",
        format!("system call ({})", x.syscall),
        x.syscall_ns,
        x.syscall_median_ns,
        x.ratio
    );
    let _ = writeln!(
        o,
        "  {:<28} {:>10.2} {:>10.2} {:>7}×",
        "function call", x.function_call_ns, x.function_call_median_ns, 1
    );
    let _ = writeln!(o, "  (ns: the least disturbed of {} batches of {} calls)", x.samples, x.iterations);
    let _ = writeln!(o, "\nPer-call costs (crossing included)");
    for k in &c.costs {
        let _ = writeln!(o, "  {:<16} {:<5} {:>8} B {:>10.1} ns   {}", k.syscall, k.on, k.bytes, k.ns, k.what);
    }
    let _ = match &c.multicall {
        Some(m) => {
            let _ = writeln!(o, "\nlibmulticall backends, measured by {}:", m.source);
            let d = syscluster_advise::calibration::MulticallDecisions::of(m);
            let from = |n: u64| if n == 0 { "never".to_string() } else { format!("from runs of {n}") };
            for (rule, (unreg, reg)) in &d.min_run {
                let _ = writeln!(o, "  fusion {rule:<18} {}; with the fd registered: {}", from(*unreg), from(*reg));
            }
            writeln!(o, "  io_uring: {}", if d.uring_wins { "chosen where it wins" } else { "never faster than direct here" })
        }
        None => writeln!(o, "\nlibmulticall backends: not measured (mc-calibrate not found: build libmulticall, or pass --mc-calibrate)"),
    };
    let _ = writeln!(o, "\nThe recorder's own cost (taken out of profiles before estimating)");
    if c.tracers.is_empty() {
        let _ = writeln!(o, "  not measured: no recorder could run here");
    }
    for t in &c.tracers {
        let _ = writeln!(
            o,
            "  {:<16} {:>10.0} ns per call ({:.0} ns inside the call{}) {:>8.1} ms per run",
            format!("{}/{}", t.backend, t.mode),
            t.per_call_ns,
            t.kernel_ns,
            t.cpu_per_call_ns.map_or(String::new(), |c| format!(", {c:.0} ns of the program's CPU")),
            t.fixed_ns / 1e6
        );
    }
    let _ = writeln!(o, "stored in {}", path.display());
    super::advise::write_out(None, o.as_bytes(), "calibration")?;
    Ok(0)
}
