//! Records a command with the ptrace backend and prints the heaviest edges
//! (a stand-in for `syscluster record --backend ptrace` while measuring).
//!   cargo run --release -p syscluster-record --example ptrace_record -- CMD [ARGS...]
use syscluster_record::{record, Backend, RecordOptions};

fn main() {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let callsites = std::env::var_os("NO_CALLSITES").is_none();
    let opts = RecordOptions { backend: Some(Backend::Ptrace), callsites, ..RecordOptions::default() };
    match record(&argv, &opts) {
        Ok(r) => {
            let p = &r.profile;
            for e in p.edges.iter().take(8) {
                eprintln!("{:>10}  {} -> {}", e.weight, p.label(e.from), p.label(e.to));
            }
            eprintln!("calls {}  lost {:?}  notes {:?}", p.meta.total_calls, p.lost_events, r.notes);
            let cpu = |who| {
                let mut u: libc::rusage = unsafe { std::mem::zeroed() };
                unsafe { libc::getrusage(who, &mut u) };
                let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
                (s(u.ru_utime), s(u.ru_stime))
            };
            let (tu, ts) = cpu(libc::RUSAGE_SELF);
            let (cu, cs) = cpu(libc::RUSAGE_CHILDREN);
            eprintln!("cpu: recorder user {tu:.3} s sys {ts:.3} s; command user {cu:.3} s sys {cs:.3} s");
            std::process::exit(r.exit.shell_code());
        }
        Err(e) => {
            eprintln!("syscluster: {e}");
            std::process::exit(1);
        }
    }
}
