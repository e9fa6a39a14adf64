//! `syscluster report`: show a profile.

use crate::flags::{FormatArg, ReportArgs};
use crate::Failure;
use syscluster_advise::AdviseOptions;
use syscluster_model::Profile;
use syscluster_report::ReportOptions;

pub fn run(a: ReportArgs) -> Result<i32, Failure> {
    let profile = Profile::load(&a.profile)?;
    let bytes = match a.format {
        FormatArg::Html => {
            // The page shows the advice too; a stale calibration only costs a note.
            let host = super::calibrate::host_for(None)?;
            let choice = super::calibrate::CalibrationChoice {
                path: None,
                recalibrate: false,
                none: false,
                strict: false,
                quiet: false,
            };
            let (cal, path) = super::calibrate::calibration_for(&choice, &host).unwrap_or((None, None));
            let advice = super::advise::advice(&profile, cal.as_ref(), path, &host, &AdviseOptions::default());
            syscluster_report::html::page(&profile, Some(&advice))
        }
        f => {
            let name = match f {
                FormatArg::Text => "text",
                FormatArg::Json => "json",
                FormatArg::Dot => "dot",
                FormatArg::Folded => "folded",
                FormatArg::Html => unreachable!("handled above"),
            };
            let reporter = syscluster_report::by_name(name).expect("every format flag has a reporter");
            reporter.render(&profile, &ReportOptions { top: a.top.max(1), width: width(a.wide) })
        }
    };
    super::write_out(a.output.as_deref(), &bytes, "report")?;
    Ok(0)
}

/// The text report's width: unlimited with --wide, else the terminal's
/// ($COLUMNS, as shells set it), else 80 columns.
fn width(wide: bool) -> usize {
    if wide {
        return usize::MAX / 4;
    }
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok());
    columns.filter(|&c| c >= 40).unwrap_or(syscluster_report::DEFAULT_WIDTH)
}
