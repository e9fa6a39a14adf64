//! `syscluster advise`: ranked rewrites with their savings on this machine
//! (or the host `--host` describes), as text, JSON or HTML, and optionally
//! the plan for `syscluster run --plan`. The calibration and the host
//! description come from calibrate.rs.

use super::calibrate::{calibration_for, host_for, CalibrationChoice};
use crate::flags::{AdviseArgs, AdviseFormatArg};
use crate::Failure;
use syscluster_advise::calibration::Calibration;
use syscluster_advise::{Advice, AdviseOptions, CostModel};
use syscluster_model::host::Host;
use syscluster_model::Profile;

/// The advice on a profile for `host`.
pub(crate) fn advice(
    profile: &Profile,
    cal: Option<&Calibration>,
    cal_path: Option<String>,
    host: &Host,
    opts: &AdviseOptions,
) -> Advice {
    let cost = CostModel::new(profile, cal, cal_path);
    syscluster_advise::advise(profile, &cost, host, opts)
}

pub fn run(a: AdviseArgs) -> Result<i32, Failure> {
    let profile = Profile::load(&a.profile)?;
    let host = host_for(a.host.as_deref())?;
    let choice = CalibrationChoice {
        path: a.calibration.clone(),
        recalibrate: a.recalibrate,
        none: a.no_calibration,
        strict: true,
        quiet: a.quiet,
    };
    let (cal, cal_path) = calibration_for(&choice, &host)?;
    let opts = AdviseOptions {
        min_repeats: a.min_repeats.max(1),
        host_file: a.host.as_ref().map(|h| h.display().to_string()),
        ..Default::default()
    };
    let mut advice = advice(&profile, cal.as_ref(), cal_path, &host, &opts);
    if let Some(dir) = &a.remarks {
        let remarks = syscluster_advise::remarks::load_dir(dir).map_err(Failure::new)?;
        syscluster_advise::remarks::annotate(&mut advice.recommendations, &remarks);
    }
    use syscluster_report::{json::Json, text::Text, Render, ReportOptions};
    let bytes = match a.format {
        AdviseFormatArg::Text => Text.render(&advice, &ReportOptions::default()),
        AdviseFormatArg::Json => Json.render(&advice, &ReportOptions::default()),
        AdviseFormatArg::Html => syscluster_report::html::page(&profile, Some(&advice)),
    };
    super::write_out(a.output.as_deref(), &bytes, "advice")?;
    if let Some(host_path) = &a.host_out {
        host.save(host_path)
            .map_err(|e| Failure::new(format!("cannot write host description {}: {e}", host_path.display())))?;
    }
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
