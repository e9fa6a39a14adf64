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
    use syscluster_report::{json::Json, text::Text, Render, ReportOptions};
    if a.json {
        super::write_out(None, &Json.render(&c, &ReportOptions::default()), "calibration")?;
        return Ok(0);
    }
    let mut o = Text.render(&c, &ReportOptions::default());
    o.extend_from_slice(format!("stored in {}\n", path.display()).as_bytes());
    super::write_out(None, &o, "calibration")?;
    Ok(0)
}
