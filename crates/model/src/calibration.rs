//! The calibration of this machine: what a crossing costs against a function
//! call (seed 000 table 1, measured here), what the calls the advisor
//! rewrites cost by size, and libmulticall's own figures (mc-calibrate).
//! Stored once per machine in a versioned cache file and reused; see
//! docs/ADVICE.md. `syscluster_calibrate` measures it, the advisor reads it.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// The version this build writes. Version 1 (no tracer costs) is still
/// read: its advice then says that shares are of the traced run; versions
/// 1 and 2 named the kernel without its name (`uname -rv`).
pub const CALIBRATION_VERSION: u32 = crate::formats::CALIBRATION_VERSION;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    pub calibration_version: u32,
    /// The program that measured, with its version.
    pub tool: String,
    /// Seconds since the Unix epoch.
    pub created_at: f64,
    pub machine: Machine,
    pub crossing: Crossing,
    /// Per-call cost of the calls the advisor rewrites, by size.
    pub costs: Vec<CallCost>,
    /// libmulticall's per-backend figures by batch size, as mc-calibrate
    /// wrote them; absent when mc-calibrate was not built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multicall: Option<MulticallFigures>,
    /// What recording costs per recorded call, by backend and mode: taken
    /// out of a profile's duration and kernel times before estimating.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tracers: Vec<TracerCost>,
    /// The kernel's fixed work per call of the transfers a rewrite resizes
    /// (read, write, copy_file_range on files), fitted from two sizes timed
    /// alternately; absent in calibrations by an older syscluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel: Vec<KernelFixed>,
}

/// One call's cost as `fixed_ns + per_byte_ns × bytes`, for sizes from
/// `small_bytes` up (below a page a write shares its folio with the next
/// ones, and the line does not hold: the costs by size do).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KernelFixed {
    pub syscall: String,
    /// As in [`CallCost::on`].
    pub on: String,
    /// The two sizes timed, alternately.
    pub small_bytes: u64,
    pub large_bytes: u64,
    /// The work per call whatever the size, crossing included, ns (the fit
    /// through the least disturbed batch of each size).
    pub fixed_ns: f64,
    /// The work per byte, ns.
    pub per_byte_ns: f64,
    /// The medians of the fits of each round: their spread.
    pub fixed_median_ns: f64,
    pub per_byte_median_ns: f64,
    /// Rounds of the two sizes.
    pub rounds: u32,
    /// What exactly was timed.
    pub what: String,
}

/// The recorder's own cost per recorded call, with one backend and mode:
/// a loop of cheap calls timed recorded and not.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TracerCost {
    /// `bpf` or `ptrace`.
    pub backend: String,
    /// `events` or `aggregate`.
    pub mode: String,
    /// Wall time the recording adds per recorded call, ns (least disturbed
    /// of the runs).
    pub per_call_ns: f64,
    /// What recording adds once per run (loading and attaching the
    /// tracer, reading it out), ns.
    #[serde(default)]
    pub fixed_ns: f64,
    /// Of `per_call_ns`, what the recorder adds to each call's measured kernel time
    /// (its work between the call's entry and exit timestamps), ns.
    pub kernel_ns: f64,
    /// CPU time (user + system) the recording adds to the recorded
    /// program per recorded call, ns: what its BPF programs cost in the
    /// program's context, free of the wall time a busy machine adds
    /// (absent for recorders that do not measure the program's CPU time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_per_call_ns: Option<f64>,
    /// Calls recorded per run, and runs.
    pub calls: u64,
    pub samples: u32,
    /// What exactly was timed.
    pub what: String,
}

/// What makes two machines the same for the figures: the kernel (its entry
/// path and mitigations) and the CPU.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    pub arch: String,
    /// Kernel name, release and version (`uname -srv`), as libmulticall
    /// names it (`crate::machine`).
    pub kernel: String,
    /// CPU model name.
    pub cpu: String,
    pub cpus: u32,
}

/// Seed 000 table 1, measured here: a system call round trip against a
/// function call.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Crossing {
    /// The call timed: a system call that does almost nothing.
    pub syscall: String,
    /// ns per call in the least disturbed batch (the machine is shared:
    /// interference only ever adds time).
    pub syscall_ns: f64,
    /// ns per call, median over the batches.
    pub syscall_median_ns: f64,
    /// A non-inlined function of one argument, least disturbed batch.
    pub function_call_ns: f64,
    pub function_call_median_ns: f64,
    /// syscall_ns / function_call_ns.
    pub ratio: f64,
    /// Batches timed, and calls per batch.
    pub samples: u32,
    pub iterations: u64,
}

/// The cost of one call of `syscall` on an object of kind `on` transferring
/// `bytes` (0 for calls that transfer nothing).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CallCost {
    pub syscall: String,
    /// `file` (regular file in the page cache), `udp` (datagram socket on
    /// loopback), `pipe`, `vdso` (no system call: the vDSO function), or
    /// empty.
    pub on: String,
    /// Bytes per call (per message for sendmmsg, in all for writev).
    pub bytes: u64,
    /// ns per call, crossing included, in the least disturbed batch.
    pub ns: f64,
    /// ns per call, median over the batches.
    pub median_ns: f64,
    /// What exactly was timed.
    pub what: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MulticallFigures {
    /// The mc-calibrate that measured.
    pub source: String,
    /// Its JSON output, verbatim (docs/MULTICALL.md describes it).
    pub data: serde_json::Value,
}

/// What libmulticall's calibration decided: from which run length each
/// fusion rule pays (`rule.class` → (unregistered, registered) calls), and
/// whether io_uring ever beats direct.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MulticallDecisions {
    pub min_run: std::collections::BTreeMap<String, (u64, u64)>,
    pub uring_wins: bool,
}

/// Why libmulticall would not use a calibration file (it then falls back
/// to its built-in choices), as `mc-calibrate --check` words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MulticallRefusal {
    /// Another format version, machine, kernel or CPU.
    Stale(String),
    /// Not a calibration libmulticall can read.
    Corrupt(String),
}

impl fmt::Display for MulticallRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MulticallRefusal::Stale(why) => write!(f, "stale: {why}"),
            MulticallRefusal::Corrupt(why) => write!(f, "corrupt: {why}"),
        }
    }
}

impl MulticallDecisions {
    /// The decisions in mc-calibrate's file (docs/MULTICALL.md), when
    /// libmulticall would use them; the machine is not compared (the
    /// calibration that carries them is checked against this machine).
    pub fn of(m: &MulticallFigures) -> Result<MulticallDecisions, MulticallRefusal> {
        MulticallDecisions::parse(&m.data, None)
    }

    /// [`MulticallDecisions::parse`] of the file's text.
    pub fn parse_text(text: &str, machine: Option<(&str, &str)>) -> Result<MulticallDecisions, MulticallRefusal> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|_| MulticallRefusal::Corrupt("not JSON".into()))?;
        MulticallDecisions::parse(&v, machine)
    }

    /// Reads mc-calibrate's file by libmulticall's rules
    /// (`__mc_calib_parse`, libmulticall/src/calib.c), so that both take or
    /// refuse the same files (tests/fixtures/formats/multicall-calibration):
    /// `machine`, the (kernel, cpu) identity the file must name, or `None`
    /// not to compare it.
    pub fn parse(
        data: &serde_json::Value,
        machine: Option<(&str, &str)>,
    ) -> Result<MulticallDecisions, MulticallRefusal> {
        use crate::formats::{
            MC_FDCLASS_NAMES, MC_RULE_NAMES, MC_URING_KIND_NAMES, MULTICALL_CALIBRATION_VERSION as VERSION,
        };
        use MulticallRefusal::{Corrupt, Stale};
        // A whole number in 0..=max, as libmulticall's jint takes it (2.0 included).
        let int = |v: Option<&serde_json::Value>, max: f64| -> Option<u64> {
            let x = v?.as_f64()?;
            (x >= 0.0 && x <= max && x.fract() == 0.0).then_some(x as u64)
        };
        let root = data.as_object().ok_or_else(|| Corrupt("not a JSON object".into()))?;
        let version =
            int(root.get("format_version"), 1000.0).ok_or_else(|| Corrupt("no format_version in 0..1000".into()))?;
        if version != VERSION as u64 {
            return Err(Stale(format!("format_version {version}, libmulticall reads {VERSION}")));
        }
        let m = root.get("machine").and_then(|m| m.as_object()).ok_or_else(|| Corrupt("no machine object".into()))?;
        let kernel =
            m.get("kernel").and_then(|k| k.as_str()).ok_or_else(|| Corrupt("machine.kernel is not a string".into()))?;
        let cpu = m.get("cpu").ok_or_else(|| Corrupt("no machine.cpu".into()))?;
        if let Some((k, c)) = machine {
            if kernel != k {
                return Err(Stale(format!("made under kernel {kernel:?}, this is {k:?}")));
            }
            if cpu.as_str() != Some(c) {
                return Err(Stale(format!("made on CPU {cpu}, this is {c:?}")));
            }
        }
        let d = root.get("decisions").and_then(|d| d.as_object());
        let (Some(mr), Some(um)) = (d.and_then(|d| d.get("min_run")), d.and_then(|d| d.get("uring_min"))) else {
            return Err(Corrupt("no decisions.min_run and decisions.uring_min".into()));
        };
        let mut min_run = std::collections::BTreeMap::new();
        let mr = mr.as_object().ok_or_else(|| Corrupt("decisions.min_run is not an object".into()))?;
        for (key, v) in mr {
            let known = key.len() < 64
                && key
                    .split_once('.')
                    .is_some_and(|(r, c)| MC_RULE_NAMES.contains(&r) && MC_FDCLASS_NAMES.contains(&c));
            if !known {
                return Err(Corrupt(format!("decisions.min_run has {key:?}, not a RULE.CLASS libmulticall knows")));
            }
            let pair = match v.as_array().map(|a| a.as_slice()) {
                Some([a, b]) => int(Some(a), 65535.0).zip(int(Some(b), 65535.0)),
                _ => None,
            };
            let pair =
                pair.ok_or_else(|| Corrupt(format!("decisions.min_run.{key} is not two whole numbers in 0..65535")))?;
            min_run.insert(key.clone(), pair);
        }
        let mut uring_wins = false;
        for kind in MC_URING_KIND_NAMES {
            let n = int(um.get(kind), 65535.0)
                .ok_or_else(|| Corrupt(format!("decisions.uring_min.{kind} is not a whole number in 0..65535")))?;
            uring_wins |= n > 0;
        }
        Ok(MulticallDecisions { min_run, uring_wins })
    }
}

impl Machine {
    /// This machine.
    pub fn here() -> Machine {
        use crate::machine;
        Machine {
            arch: std::env::consts::ARCH.to_string(),
            kernel: machine::kernel(),
            cpu: machine::cpu_model(),
            cpus: machine::cpu_count(),
        }
    }
}

impl fmt::Display for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ×{}, {}", self.cpu, self.cpus, self.kernel)
    }
}

/// Why a calibration cannot be used.
#[derive(Debug)]
pub enum CalibrationError {
    Io(PathBuf, std::io::Error),
    Corrupt(PathBuf, String),
    Version(PathBuf, u64),
    /// Made on another machine (or kernel): what differs.
    Stale(PathBuf, String),
    NoCacheDir,
}

impl fmt::Display for CalibrationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CalibrationError::Io(p, e) => write!(f, "cannot read calibration {}: {e}", p.display()),
            CalibrationError::Corrupt(p, why) => write!(f, "corrupt calibration {}: {why}; run `syscluster calibrate` again", p.display()),
            CalibrationError::Version(p, v) => write!(
                f,
                "calibration {} has calibration_version {v}, this syscluster reads {CALIBRATION_VERSION}; run `syscluster calibrate` again",
                p.display()
            ),
            CalibrationError::Stale(p, why) => write!(
                f,
                "stale calibration {}: {why}; run `syscluster calibrate` (or `advise --recalibrate`)",
                p.display()
            ),
            CalibrationError::NoCacheDir => f.write_str("neither XDG_CACHE_HOME nor HOME is set: no place for the calibration cache"),
        }
    }
}

impl std::error::Error for CalibrationError {}

/// `$XDG_CACHE_HOME/syscluster/calibration.json`, else under `~/.cache`.
pub fn default_path() -> Result<PathBuf, CalibrationError> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(h) => PathBuf::from(h).join(".cache"),
            None => return Err(CalibrationError::NoCacheDir),
        },
    };
    Ok(base.join("syscluster").join("calibration.json"))
}

impl Calibration {
    /// Reads a calibration; `Ok(None)` when the file does not exist.
    pub fn load(path: &Path) -> Result<Option<Calibration>, CalibrationError> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(CalibrationError::Io(path.to_path_buf(), e)),
        };
        let v: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| CalibrationError::Corrupt(path.to_path_buf(), format!("invalid JSON: {e}")))?;
        match v.get("calibration_version").and_then(|x| x.as_u64()) {
            None => return Err(CalibrationError::Corrupt(path.to_path_buf(), "no calibration_version".into())),
            Some(n) if n > CALIBRATION_VERSION as u64 || n < crate::formats::CALIBRATION_OLDEST as u64 => {
                return Err(CalibrationError::Version(path.to_path_buf(), n))
            }
            Some(_) => {}
        }
        let mut c: Calibration =
            serde_json::from_value(v).map_err(|e| CalibrationError::Corrupt(path.to_path_buf(), e.to_string()))?;
        if c.calibration_version < 3 && !c.machine.kernel.starts_with("Linux ") {
            // Before version 3 the kernel was `uname -rv`; it is `uname -srv`
            // now, as libmulticall names it: the same kernel, so the same machine.
            c.machine.kernel = format!("Linux {}", c.machine.kernel);
        }
        c.validate().map_err(|why| CalibrationError::Corrupt(path.to_path_buf(), why))?;
        Ok(Some(c))
    }

    fn validate(&self) -> Result<(), String> {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        if !ok(self.crossing.syscall_ns) || !ok(self.crossing.function_call_ns) {
            return Err("the crossing figures are not positive numbers".into());
        }
        if let Some(c) = self.costs.iter().find(|c| !ok(c.ns)) {
            return Err(format!("the cost of {} on {} ({} B) is not a positive number", c.syscall, c.on, c.bytes));
        }
        if let Some(t) = self.tracers.iter().find(|t| {
            !([t.per_call_ns, t.kernel_ns, t.fixed_ns, t.cpu_per_call_ns.unwrap_or(0.0)]
                .iter()
                .all(|x| x.is_finite() && *x >= 0.0))
        }) {
            return Err(format!("the tracer cost of {}/{} is not a non-negative number", t.backend, t.mode));
        }
        if let Some(k) = self.kernel.iter().find(|k| {
            !(k.fixed_ns.is_finite()
                && k.per_byte_ns.is_finite()
                && k.per_byte_ns >= 0.0
                && k.small_bytes < k.large_bytes)
        }) {
            return Err(format!("the fixed cost of {} on {} is not a valid fit", k.syscall, k.on));
        }
        Ok(())
    }

    /// The recorder's cost per call for a profile recorded with `backend`
    /// in `mode`, if measured.
    pub fn tracer(&self, backend: &str, mode: &str) -> Option<&TracerCost> {
        self.tracers.iter().find(|t| t.backend == backend && t.mode == mode)
    }

    /// The fixed and per-byte work of `syscall` on `on`, if fitted.
    pub fn kernel_fixed(&self, syscall: &str, on: &str) -> Option<&KernelFixed> {
        self.kernel.iter().find(|k| k.syscall == syscall && k.on == on)
    }

    /// Loads the calibration at `path` and checks that it was made here.
    pub fn load_for(path: &Path, here: &Machine) -> Result<Option<Calibration>, CalibrationError> {
        let Some(c) = Calibration::load(path)? else {
            return Ok(None);
        };
        if let Some(why) = c.differs(here).or_else(|| c.older(path)) {
            return Err(CalibrationError::Stale(path.to_path_buf(), why));
        }
        Ok(Some(c))
    }

    /// What this calibration lacks that this syscluster measures, if
    /// anything: made by an older one, it would silently give older
    /// figures (shares of the traced run; the compiler plugin leaving every
    /// loop alone for want of libmulticall's first-context cost).
    pub fn older(&self, path: &Path) -> Option<String> {
        if self.tracers.iter().any(|t| t.backend == "bpf" && t.mode == "events" && t.cpu_per_call_ns.is_none()) {
            return Some("made by an older syscluster: no CPU cost per recorded call for BPF events".into());
        }
        if !self.costs.is_empty() && self.kernel.is_empty() {
            return Some(
                "made by an older syscluster: no fixed kernel work per call of read, write and copy_file_range".into(),
            );
        }
        let mc = path.with_file_name("multicall-calibration.json");
        match std::fs::read(&mc) {
            Ok(b) if !b.windows(b"\"first_context\"".len()).any(|w| w == b"\"first_context\"") => Some(format!(
                "{} was made by an older mc-calibrate: no first_context (the compiler plugin needs it)",
                mc.display()
            )),
            _ => None,
        }
    }

    /// What makes this calibration unfit for machine `here`, if anything.
    pub fn differs(&self, here: &Machine) -> Option<String> {
        let m = &self.machine;
        if m.arch != here.arch {
            return Some(format!("made on {}, this is {}", m.arch, here.arch));
        }
        if m.kernel != here.kernel {
            return Some(format!("made under kernel {:?}, this is {:?}", m.kernel, here.kernel));
        }
        if m.cpu != here.cpu || m.cpus != here.cpus {
            return Some(format!("made on {} ×{}, this is {} ×{}", m.cpu, m.cpus, here.cpu, here.cpus));
        }
        None
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        json.push(b'\n');
        crate::profile::write_atomically(path, &json)
    }

    /// The cost of one call of `syscall` on `on` moving `bytes`: linear
    /// between the sizes measured, extended past the largest along its last
    /// segment, clamped at the smallest. `None` when not measured.
    pub fn cost(&self, syscall: &str, on: &str, bytes: u64) -> Option<f64> {
        let mut pts: Vec<(f64, f64)> =
            self.costs.iter().filter(|c| c.syscall == syscall && c.on == on).map(|c| (c.bytes as f64, c.ns)).collect();
        if pts.is_empty() {
            return None;
        }
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        pts.dedup_by(|a, b| a.0 == b.0);
        let x = bytes as f64;
        if pts.len() == 1 || x <= pts[0].0 {
            return Some(pts[0].1);
        }
        let seg = pts.windows(2).find(|w| x <= w[1].0).unwrap_or(&pts[pts.len() - 2..]);
        let (x0, y0, x1, y1) = (seg[0].0, seg[0].1, seg[1].0, seg[1].1);
        Some((y0 + (y1 - y0) * (x - x0) / (x1 - x0)).max(pts[0].1.min(y0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cal() -> Calibration {
        let cost = |syscall: &str, on: &str, bytes, ns| CallCost {
            syscall: syscall.into(),
            on: on.into(),
            bytes,
            ns,
            median_ns: ns,
            what: String::new(),
        };
        Calibration {
            calibration_version: CALIBRATION_VERSION,
            tool: "t".into(),
            created_at: 0.0,
            machine: Machine { arch: "x86_64".into(), kernel: "Linux 6.1 #1".into(), cpu: "cpu".into(), cpus: 2 },
            crossing: Crossing {
                syscall: "getppid".into(),
                syscall_ns: 150.0,
                syscall_median_ns: 160.0,
                function_call_ns: 1.5,
                function_call_median_ns: 1.6,
                ratio: 100.0,
                samples: 9,
                iterations: 1000,
            },
            costs: vec![
                cost("write", "file", 8, 800.0),
                cost("write", "file", 4096, 2000.0),
                cost("write", "file", 65536, 12000.0),
                cost("lseek", "file", 0, 200.0),
            ],
            multicall: None,
            tracers: Vec::new(),
            kernel: vec![fixed("read", 400.0, 0.1), fixed("write", 2000.0, 0.2)],
        }
    }

    fn fixed(syscall: &str, fixed_ns: f64, per_byte_ns: f64) -> KernelFixed {
        KernelFixed {
            syscall: syscall.into(),
            on: "file".into(),
            small_bytes: 4096,
            large_bytes: 131072,
            fixed_ns,
            per_byte_ns,
            fixed_median_ns: fixed_ns,
            per_byte_median_ns: per_byte_ns,
            rounds: 9,
            what: String::new(),
        }
    }

    #[test]
    fn interpolates_costs_by_size() {
        let c = cal();
        assert_eq!(c.cost("write", "file", 8), Some(800.0));
        assert_eq!(c.cost("write", "file", 0), Some(800.0), "clamped below the smallest size");
        let mid = c.cost("write", "file", 2052).unwrap();
        assert!((mid - 1400.0).abs() < 1.0, "{mid}");
        let far = c.cost("write", "file", 126976).unwrap();
        assert!(far > 12000.0, "extrapolated past the largest size: {far}");
        assert_eq!(c.cost("lseek", "file", 4096), Some(200.0));
        assert_eq!(c.cost("read", "file", 8), None);
        assert_eq!(c.cost("write", "udp", 8), None);
    }

    #[test]
    fn round_trip_and_staleness() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/calibration.json");
        assert!(Calibration::load(&p).unwrap().is_none(), "a missing file is no calibration, not an error");
        let c = cal();
        c.save(&p).unwrap();
        assert_eq!(Calibration::load(&p).unwrap().unwrap(), c);
        let here = c.machine.clone();
        assert!(Calibration::load_for(&p, &here).unwrap().is_some());
        let other = Machine { kernel: "Linux 6.2 #1".into(), ..here };
        let e = Calibration::load_for(&p, &other).unwrap_err().to_string();
        assert!(
            e.starts_with("stale calibration") && e.contains("6.2 #1") && e.contains("syscluster calibrate"),
            "{e}"
        );
    }

    #[test]
    fn a_calibration_by_an_older_syscluster_is_stale() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("calibration.json");
        let tracer = |cpu| TracerCost {
            backend: "bpf".into(),
            mode: "events".into(),
            per_call_ns: 900.0,
            fixed_ns: 0.0,
            kernel_ns: 300.0,
            cpu_per_call_ns: cpu,
            calls: 1000,
            samples: 3,
            what: String::new(),
        };
        let mut c = cal();
        c.tracers.push(tracer(None));
        c.save(&p).unwrap();
        let here = c.machine.clone();
        let e = Calibration::load_for(&p, &here).unwrap_err().to_string();
        assert!(e.starts_with("stale calibration") && e.contains("older syscluster"), "{e}");
        c.tracers = vec![tracer(Some(120.0))];
        c.save(&p).unwrap();
        assert!(Calibration::load_for(&p, &here).unwrap().is_some());
        let kernel = std::mem::take(&mut c.kernel);
        c.save(&p).unwrap();
        let e = Calibration::load_for(&p, &here).unwrap_err().to_string();
        assert!(e.starts_with("stale calibration") && e.contains("fixed kernel work"), "{e}");
        c.kernel = kernel;
        c.save(&p).unwrap();
        assert_eq!(c.kernel_fixed("write", "file").map(|k| k.fixed_ns), Some(2000.0));
        assert!(c.kernel_fixed("write", "udp").is_none());
        let mc = d.path().join("multicall-calibration.json");
        std::fs::write(&mc, r#"{"format_version": 1, "costs_ns": {"crossing": 150}}"#).unwrap();
        let e = Calibration::load_for(&p, &here).unwrap_err().to_string();
        assert!(e.contains("first_context"), "{e}");
        std::fs::write(&mc, r#"{"format_version": 1, "costs_ns": {"first_context": 120.5}}"#).unwrap();
        assert!(Calibration::load_for(&p, &here).unwrap().is_some());
    }

    #[test]
    fn older_versions_name_the_kernel_as_libmulticall_does() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("calibration.json");
        let mut c = cal();
        c.calibration_version = 2;
        c.machine.kernel = "6.1 #1".into();
        c.save(&p).unwrap();
        assert_eq!(Calibration::load(&p).unwrap().unwrap().machine.kernel, "Linux 6.1 #1");
        c.calibration_version = CALIBRATION_VERSION;
        c.machine.kernel = "Linux 6.1 #1".into();
        c.save(&p).unwrap();
        assert_eq!(Calibration::load(&p).unwrap().unwrap().machine.kernel, "Linux 6.1 #1");
    }

    #[test]
    fn reads_libmulticall_decisions_as_libmulticall_does() {
        let figures = |min_run: serde_json::Value| MulticallFigures {
            source: "mc-calibrate".into(),
            data: serde_json::json!({
                "format_version": 1,
                "machine": {"kernel": "Linux 6.1 #1", "cpu": "cpu"},
                "decisions": {"min_run": min_run, "uring_min": {"read.file": 0, "write.file": 0, "other": 0}}
            }),
        };
        let d = MulticallDecisions::of(&figures(serde_json::json!({"writev.file": [3, 2], "sendmmsg.dgram": [2, 0]})))
            .unwrap();
        assert_eq!(d.min_run.len(), 2);
        assert_eq!(d.min_run["writev.file"], (3, 2));
        assert_eq!(d.min_run["sendmmsg.dgram"], (2, 0));
        assert!(!d.uring_wins);
        // One malformed entry and libmulticall ignores the whole file (it
        // keeps its built-in choices): so does the advisor.  It used to
        // leave out only the entry, and advise from decisions the library
        // never took.
        let bad = MulticallDecisions::of(&figures(serde_json::json!({"writev.file": [3, 2], "bad": [1]})));
        assert!(matches!(bad, Err(MulticallRefusal::Corrupt(_))), "{bad:?}");
        let none = MulticallDecisions::of(&MulticallFigures { source: String::new(), data: serde_json::json!({}) });
        assert!(matches!(none, Err(MulticallRefusal::Corrupt(_))), "{none:?}");
    }

    #[test]
    fn refuses_bad_files() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c.json");
        std::fs::write(&p, "{").unwrap();
        assert!(Calibration::load(&p).unwrap_err().to_string().contains("invalid JSON"));
        std::fs::write(&p, r#"{"calibration_version": 99}"#).unwrap();
        assert!(Calibration::load(&p).unwrap_err().to_string().contains("calibration_version 99"));
        let mut c = cal();
        c.crossing.syscall_ns = 0.0;
        std::fs::write(&p, serde_json::to_vec(&c).unwrap()).unwrap();
        assert!(Calibration::load(&p).unwrap_err().to_string().contains("not positive"));
        let mut c = cal();
        c.kernel[0].large_bytes = c.kernel[0].small_bytes;
        std::fs::write(&p, serde_json::to_vec(&c).unwrap()).unwrap();
        assert!(Calibration::load(&p).unwrap_err().to_string().contains("not a valid fit"));
    }
}
