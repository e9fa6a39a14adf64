//! `syscluster calibrate`, and the calibration and host description that
//! `advise` and `report --format html` price with: found and checked, or
//! measured now. advise.rs and report.rs use this file; it uses neither.

use crate::flags::CalibrateArgs;
use crate::Failure;
use std::path::{Path, PathBuf};
use syscluster_calibrate::measure::TABLE;
use syscluster_calibrate::CalibrateOptions;
use syscluster_model::calibration::{self, Calibration, CalibrationError};
use syscluster_model::host::{Host, KMOD_DEVICE};

/// How `advise` (and `report --format html`) find their calibration.
pub(crate) struct CalibrationChoice {
    pub path: Option<PathBuf>,
    pub recalibrate: bool,
    pub none: bool,
    /// Refuse a stale or broken calibration (advise) or fall back with a
    /// note (report).
    pub strict: bool,
    pub quiet: bool,
}

/// The host to advise for: the description in `file`, else this machine's.
pub(crate) fn host_for(file: Option<&Path>) -> Result<Host, Failure> {
    match file {
        Some(f) => Host::load(f).map_err(Failure::new),
        None => Ok(syscluster_calibrate::host::describe(Path::new(KMOD_DEVICE))),
    }
}

/// The calibration to use for `host`, if any, with its path; a line for
/// stderr when there is none. A calibration of another machine is stale.
pub(crate) fn calibration_for(
    c: &CalibrationChoice,
    host: &Host,
) -> Result<(Option<Calibration>, Option<String>), Failure> {
    if c.none {
        return Ok((None, None));
    }
    let path = match &c.path {
        Some(p) => p.clone(),
        None => calibration::default_path()?,
    };
    let remeasure = |why: &str| -> Result<(Option<Calibration>, Option<String>), Failure> {
        if !c.quiet {
            eprintln!("syscluster: {why}: measuring this machine now");
        }
        let opts = CalibrateOptions {
            samples: 9,
            dir: None,
            mc_calibrate: syscluster_calibrate::find_mc_calibrate(None),
            quick: false,
        };
        let cal = measure(&path, &opts, host, c.quiet)?;
        Ok((Some(cal), Some(path.display().to_string())))
    };
    match Calibration::load_for(&path, &host.machine) {
        Ok(Some(cal)) => Ok((Some(cal), Some(path.display().to_string()))),
        Ok(None) if c.recalibrate => remeasure(&format!("no calibration at {}", path.display())),
        Ok(None) => {
            if !c.quiet {
                eprintln!(
                    "syscluster: no calibration of this machine ({} does not exist): using the profile's own kernel times; run `syscluster calibrate` for measured costs",
                    path.display()
                );
            }
            Ok((None, None))
        }
        Err(e) if c.recalibrate => remeasure(&e.to_string()),
        Err(e @ CalibrationError::NoCacheDir) => Err(Failure::new(e.to_string())),
        Err(e) if c.strict => Err(Failure::new(e.to_string())),
        Err(e) => {
            if !c.quiet {
                eprintln!("syscluster: {e}; using the profile's own kernel times");
            }
            Ok((None, None))
        }
    }
}

/// Measures this machine and stores the calibration at `path`, with
/// progress on stderr.
fn measure(path: &Path, opts: &CalibrateOptions, host: &Host, quiet: bool) -> Result<Calibration, Failure> {
    if !quiet {
        eprintln!("syscluster: calibrating this machine ({} samples per figure)…", opts.samples);
    }
    let mut progress = |l: &str| {
        if !quiet {
            eprintln!("  {l}");
        }
    };
    let c = syscluster_calibrate::calibrate(path, opts, host, &mut progress).map_err(Failure::new)?;
    if !quiet {
        eprintln!("syscluster: calibration stored in {}", path.display());
    }
    Ok(c)
}

/// The table of measurements, one row a line.
fn list() -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(o, "{:<24} {:<32} {:<12} {:<22} how", "measurement", "fills", "needs", "unit");
    for m in TABLE {
        let sizes = if m.sizes == [0] {
            String::new()
        } else {
            format!(" at {} B", m.sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "))
        };
        let _ = writeln!(
            o,
            "{:<24} {:<32} {:<12} {:<22} {}{sizes}",
            m.name,
            m.fills.field(),
            m.needs.as_str(),
            m.unit,
            m.how
        );
    }
    o
}

pub fn run(a: CalibrateArgs) -> Result<i32, Failure> {
    if a.list {
        super::write_out(None, list().as_bytes(), "table")?;
        return Ok(0);
    }
    let path = match a.output {
        Some(p) => p,
        None => calibration::default_path()?,
    };
    let opts = CalibrateOptions {
        samples: if a.quick { a.samples.min(3) } else { a.samples },
        dir: a.dir,
        mc_calibrate: syscluster_calibrate::find_mc_calibrate(a.mc_calibrate),
        quick: a.quick,
    };
    let c = measure(&path, &opts, &host_for(None)?, a.quiet)?;
    if a.json {
        let mut v = serde_json::to_vec_pretty(&c).expect("a calibration serializes");
        v.push(b'\n');
        super::write_out(None, &v, "calibration")?;
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
            let d = calibration::MulticallDecisions::of(m);
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
    super::write_out(None, o.as_bytes(), "calibration")?;
    Ok(0)
}
