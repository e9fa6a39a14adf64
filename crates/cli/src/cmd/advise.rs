//! `syscluster advise`: ranked rewrites with their savings on this machine,
//! as text, JSON or HTML, and optionally the plan for `syscluster run --plan`.

use crate::flags::{AdviseArgs, AdviseFormatArg};
use crate::Failure;
use std::io::Write;
use std::path::{Path, PathBuf};
use syscluster_advise::calibration::{self, Calibration, CalibrationError, Machine};
use syscluster_advise::{Advice, AdviseOptions, CostModel};
use syscluster_model::Profile;

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

/// The calibration to use, if any, with its path; a line for stderr when
/// there is none.
pub(crate) fn calibration_for(c: &CalibrationChoice) -> Result<(Option<Calibration>, Option<String>), Failure> {
    if c.none {
        return Ok((None, None));
    }
    let path = match &c.path {
        Some(p) => p.clone(),
        None => calibration::default_path()?,
    };
    let here = Machine::here();
    let remeasure = |why: &str| -> Result<(Option<Calibration>, Option<String>), Failure> {
        if !c.quiet {
            eprintln!("syscluster: {why}: measuring this machine now");
        }
        let mc = super::calibrate::find_mc_calibrate(None);
        let cal = super::calibrate::calibrate(&path, 9, None, mc, false, c.quiet)?;
        Ok((Some(cal), Some(path.display().to_string())))
    };
    match Calibration::load_for(&path, &here) {
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

/// The advice on a profile.
pub(crate) fn advice(
    profile: &Profile,
    cal: Option<&Calibration>,
    cal_path: Option<String>,
    opts: &AdviseOptions,
) -> Advice {
    let cost = CostModel::new(profile, cal, cal_path);
    syscluster_advise::advise(profile, &cost, opts)
}

pub(crate) fn write_out(path: Option<&Path>, bytes: &[u8], what: &str) -> Result<(), Failure> {
    match path {
        Some(path) => syscluster_model::profile::write_atomically(path, bytes)
            .map_err(|e| Failure::new(format!("cannot write {}: {e}", path.display()))),
        None => {
            let mut out = std::io::stdout().lock();
            match out.write_all(bytes).and_then(|_| out.flush()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    Err(Failure::new(format!("cannot write the {what}: {e}")))
                }
                _ => Ok(()),
            }
        }
    }
}

pub fn run(a: AdviseArgs) -> Result<i32, Failure> {
    let profile = Profile::load(&a.profile)?;
    let choice = CalibrationChoice {
        path: a.calibration.clone(),
        recalibrate: a.recalibrate,
        none: a.no_calibration,
        strict: true,
        quiet: a.quiet,
    };
    let (cal, cal_path) = calibration_for(&choice)?;
    let opts = AdviseOptions { min_repeats: a.min_repeats.max(1), ..Default::default() };
    let advice = advice(&profile, cal.as_ref(), cal_path, &opts);
    use syscluster_report::{json::Json, text::Text, Render, ReportOptions};
    let bytes = match a.format {
        AdviseFormatArg::Text => Text.render(&advice, &ReportOptions::default()),
        AdviseFormatArg::Json => Json.render(&advice, &ReportOptions::default()),
        AdviseFormatArg::Html => syscluster_report::html::page(&profile, Some(&advice)),
    };
    write_out(a.output.as_deref(), &bytes, "advice")?;
    if let Some(plan_path) = &a.plan_out {
        let plan = syscluster_advise::plan::from_advice(&advice, &profile);
        syscluster_model::profile::write_atomically(plan_path, &plan.to_json())
            .map_err(|e| Failure::new(format!("cannot write plan {}: {e}", plan_path.display())))?;
        if !a.quiet {
            eprintln!("syscluster: plan with {} cluster(s) written to {}", plan.clusters.len(), plan_path.display());
        }
    }
    Ok(0)
}
