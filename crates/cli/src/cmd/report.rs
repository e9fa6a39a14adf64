//! `syscluster report`: show a profile.

use crate::flags::{FormatArg, ReportArgs};
use crate::Failure;
use std::io::Write;
use syscluster_model::Profile;
use syscluster_report::ReportOptions;

pub fn run(a: ReportArgs) -> Result<i32, Failure> {
    let profile = Profile::load(&a.profile)?;
    let name = match a.format {
        FormatArg::Text => "text",
        FormatArg::Json => "json",
        FormatArg::Dot => "dot",
    };
    let reporter = syscluster_report::by_name(name).expect("every format flag has a reporter");
    let bytes = reporter.render(&profile, &ReportOptions { top: a.top.max(1) });
    match &a.output {
        Some(path) => syscluster_model::profile::write_atomically(path, &bytes)
            .map_err(|e| Failure::new(format!("cannot write {}: {e}", path.display())))?,
        None => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(&bytes).and_then(|_| out.flush()) {
                // A closed pipe (`| head`) is not an error worth a message.
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(Failure::new(format!("cannot write the report: {e}")));
                }
            }
        }
    }
    Ok(0)
}
