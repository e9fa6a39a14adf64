//! Calibration: measuring this machine -- what a crossing and the calls the
//! advisor rewrites cost (`measure::TABLE`, one row per measurement),
//! libmulticall's backends (its mc-calibrate), the recorders' own cost
//! (`tracers`) -- and describing what it lets a program use (`host`).
//! Everything the advisor knows about a machine comes from here, through
//! two files whose formats live in the model: the calibration
//! (`syscluster_model::calibration`) and the host description
//! (`syscluster_model::host`). The advisor itself reads neither `/proc`
//! nor `/dev`.

pub mod host;
pub mod kernel;
pub mod measure;
pub mod tracers;

use std::path::{Path, PathBuf};
use syscluster_model::calibration::Calibration;
use syscluster_model::host::Host;

/// What `calibrate` measures with.
#[derive(Clone, Debug)]
pub struct CalibrateOptions {
    /// Batches timed per figure.
    pub samples: u32,
    /// The file system whose costs to measure [default: the calibration's
    /// directory].
    pub dir: Option<PathBuf>,
    /// libmulticall's mc-calibrate, when built (`find_mc_calibrate`).
    pub mc_calibrate: Option<PathBuf>,
    /// A quicker, noisier mc-calibrate.
    pub quick: bool,
}

/// Measures this machine (`host` describes it) and stores the calibration
/// at `path`; mc-calibrate's own file goes beside it, where libmulticall's
/// auto backend reads it. One line per figure to `progress`.
pub fn calibrate(
    path: &Path,
    opts: &CalibrateOptions,
    host: &Host,
    progress: &mut dyn FnMut(&str),
) -> Result<Calibration, String> {
    let dir = match &opts.dir {
        Some(d) => d.clone(),
        None => {
            let d = path.parent().map(|p| p.to_path_buf()).unwrap_or_else(std::env::temp_dir);
            std::fs::create_dir_all(&d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
            d
        }
    };
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    let mc_out = path.with_file_name("multicall-calibration.json");
    let m = measure::MeasureOptions {
        samples: opts.samples,
        dir,
        mc_calibrate: opts.mc_calibrate.clone().map(|t| (t, mc_out)),
        mc_quick: opts.quick,
        ..Default::default()
    };
    let c = measure::measure(&m, host, progress).map_err(|e| format!("calibration failed: {e}"))?;
    c.save(path).map_err(|e| format!("cannot write calibration {}: {e}", path.display()))?;
    Ok(c)
}

/// libmulticall's mc-calibrate: the flag, `$SYSCLUSTER_MC_CALIBRATE` (`none`
/// or empty: do not run it), installed beside syscluster (`make install`),
/// or `libmulticall/build/mc-calibrate` in a directory above syscluster's
/// own (a source tree's `target/release/syscluster`).
pub fn find_mc_calibrate(flag: Option<PathBuf>) -> Option<PathBuf> {
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
