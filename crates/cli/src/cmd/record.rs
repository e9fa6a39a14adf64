//! `syscluster record`: run a command under a recorder, write its profile.

use crate::flags::{BackendArg, ModeArg, RecordArgs};
use crate::Failure;
use syscluster_analysis::BuilderOptions;
use syscluster_record::{Backend, LaunchError, Mode, RecordError, RecordOptions};

pub fn run(a: RecordArgs) -> Result<i32, Failure> {
    let ring = a.ring_buffer.checked_mul(1 << 20).filter(|b| b.is_power_of_two()).ok_or_else(|| {
        Failure::with_code(format!("--ring-buffer {} is not a power of two number of MiB", a.ring_buffer), 2)
    })?;
    let opts = RecordOptions {
        backend: a.backend.map(|b| match b {
            BackendArg::Bpf => Backend::Bpf,
            BackendArg::Ptrace => Backend::Ptrace,
        }),
        mode: match a.mode {
            ModeArg::Aggregate => Mode::Aggregate,
            ModeArg::Events => Mode::Events,
        },
        builder: BuilderOptions {
            node_key: super::node_key(a.node_key),
            tnv_slots: a.tnv_slots as usize,
            ..Default::default()
        },
        callsites: !a.no_callsites,
        ring_buffer_bytes: ring,
        follow_detached: a.follow_detached,
        ..Default::default()
    };
    // Fail before running the command if the profile cannot be written.
    check_writable(&a.output)?;
    let rec = syscluster_record::record(&a.command, &opts).map_err(|e| match e {
        RecordError::Launch(LaunchError::Exec(ref _c, ref io)) => {
            let code = if io.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
            Failure::with_code(e.to_string(), code)
        }
        RecordError::Launch(LaunchError::Interrupted(sig)) => Failure::with_code(e.to_string(), 128 + sig),
        other => Failure::new(other.to_string()),
    })?;
    for note in &rec.notes {
        eprintln!("syscluster: {note}");
    }
    if !a.quiet && rec.profile.meta.node_key != opts.builder.node_key {
        eprintln!(
            "syscluster: {} mode keys nodes by {} (--node-key {}), not by {}; events mode keys them by what each descriptor is",
            rec.profile.meta.mode,
            rec.profile.meta.node_key.as_str(),
            rec.profile.meta.node_key.as_str(),
            opts.builder.node_key.as_str()
        );
    }
    super::save(&rec.profile, &a.output)?;
    if !a.quiet {
        let m = &rec.profile.meta;
        eprintln!(
            "syscluster: recorded {} with {}/{} in {:.2} s → {}",
            super::summary(&rec.profile),
            m.backend,
            m.mode,
            m.duration_ns as f64 / 1e9,
            a.output.display()
        );
    }
    Ok(rec.exit.shell_code())
}

fn check_writable(path: &std::path::Path) -> Result<(), Failure> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let md = std::fs::metadata(dir)
        .map_err(|e| Failure::new(format!("cannot write profile {}: {}: {e}", path.display(), dir.display())))?;
    if !md.is_dir() {
        return Err(Failure::new(format!(
            "cannot write profile {}: {} is not a directory",
            path.display(),
            dir.display()
        )));
    }
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|_| Failure::new("bad output path"))?;
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
        return Err(Failure::new(format!(
            "cannot write profile {}: {}: {}",
            path.display(),
            dir.display(),
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}
