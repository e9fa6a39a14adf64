//! What recording costs: each recorder (BPF events, BPF aggregate, ptrace)
//! timed on a loop of cheap calls, recorded and not.

use syscluster_model::calibration;
use syscluster_record::{Backend, Mode, RecordOptions};

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
fn traced(argv: &[std::ffi::OsString], opts: &RecordOptions) -> Result<(f64, f64, f64, f64), String> {
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

/// What one recorder (`backend` in `mode`) costs per recorded call and per
/// run: the same loop of cheap calls at two lengths (`blocks` and twice
/// that), recorded and not; the differences between the lengths take out
/// what starting a program costs, the least disturbed of `samples` runs
/// counts. `Err` says why the recorder cannot run here (its profiles'
/// shares are then of the traced run, and advise says so).
pub fn measure(backend: Backend, mode: Mode, blocks: u64, samples: u32) -> Result<calibration::TracerCost, String> {
    let n = blocks;
    let opts = RecordOptions { backend: Some(backend), mode, ..Default::default() };
    let (short, long) = (dd_loop(n), dd_loop(2 * n));
    let mut best = [f64::MAX; 4]; // traced short, traced long, untraced short, untraced long
                                  // The same, CPU time (user + system) of the program.
    let mut cpu = [f64::MAX; 4];
    let (mut calls, mut kernel) = ((0.0, 0.0), f64::MAX);
    for _ in 0..samples {
        let (a, b) = (traced(&short, &opts)?, traced(&long, &opts)?);
        best[0] = best[0].min(a.0);
        best[1] = best[1].min(b.0);
        calls = (a.1, b.1);
        cpu[0] = cpu[0].min(a.3);
        cpu[1] = cpu[1].min(b.3);
        kernel = kernel.min(a.2).min(b.2);
        let (s, l) = (untraced_ns(&short), untraced_ns(&long));
        best[2] = best[2].min(s.map_or(f64::MAX, |t| t.0));
        best[3] = best[3].min(l.map_or(f64::MAX, |t| t.0));
        cpu[2] = cpu[2].min(s.map_or(f64::MAX, |t| t.1));
        cpu[3] = cpu[3].min(l.map_or(f64::MAX, |t| t.1));
    }
    let extra = calls.1 - calls.0;
    if extra <= 0.0 || best[3] == f64::MAX || best[2] == f64::MAX {
        return Err("dd did not run".into());
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
    Ok(calibration::TracerCost {
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
    })
}
