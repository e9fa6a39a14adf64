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
            std::process::exit(r.exit.shell_code());
        }
        Err(e) => {
            eprintln!("syscluster: {e}");
            std::process::exit(1);
        }
    }
}
