//! A bare driver of the recorder library, for measuring the backends before
//! the CLI has them: `record [--mode aggregate|events] [--backend bpf|ptrace]
//! [--node-key name|fd|callsite] [--no-callsites] [-o FILE] -- CMD...`;
//! `record --floor enter|both -- CMD` runs CMD with empty BPF programs on
//! the attach points (the benchmark's floor).
use std::ffi::OsString;
use syscluster_model::profile::NodeKeyMode;
use syscluster_record::{record, Backend, Mode, RecordOptions};

fn main() {
    let mut args = std::env::args_os().skip(1);
    let mut o = RecordOptions::default();
    let mut json = None;
    let mut floor = None;
    let mut argv: Vec<OsString> = Vec::new();
    while let Some(a) = args.next() {
        match a.to_str() {
            Some("--mode") => o.mode = if args.next().unwrap() == "aggregate" { Mode::Aggregate } else { Mode::Events },
            Some("--backend") => {
                o.backend = Some(if args.next().unwrap() == "ptrace" { Backend::Ptrace } else { Backend::Bpf })
            }
            Some("--node-key") => {
                o.builder.node_key = match args.next().unwrap().to_str() {
                    Some("name") => NodeKeyMode::Name,
                    Some("callsite") => NodeKeyMode::Callsite,
                    _ => NodeKeyMode::Fd,
                }
            }
            Some("--no-callsites") => o.callsites = false,
            Some("--ring") => o.ring_buffer_bytes = args.next().unwrap().to_str().unwrap().parse().unwrap(),
            Some("--json" | "-o") => json = args.next(),
            Some("--floor") => floor = Some(args.next().unwrap() == "both"),
            Some("--") => {
                argv.extend(args.by_ref());
            }
            _ => argv.push(a),
        }
    }
    if let Some(exit_too) = floor {
        let status = syscluster_record::bpf::with_floor(exit_too, || {
            std::process::Command::new(&argv[0]).args(&argv[1..]).status().unwrap()
        });
        match status {
            Ok(s) => std::process::exit(s.code().unwrap_or(1)),
            Err(e) => {
                eprintln!("record: {e}");
                std::process::exit(1);
            }
        }
    }
    match record(&argv, &o) {
        Ok(r) => {
            for n in &r.notes {
                eprintln!("note: {n}");
            }
            let p = &r.profile;
            eprintln!(
                "exit {:?}; {} calls, {} nodes, {} edges, lost {:?}",
                r.exit,
                p.meta.total_calls,
                p.nodes.len(),
                p.edges.len(),
                p.lost_events
            );
            for e in p.edges.iter().take(8) {
                eprintln!("  {} -> {}: {}", p.label(e.from), p.label(e.to), e.weight);
            }
            if let Some(path) = json {
                p.save(std::path::Path::new(&path)).unwrap();
            }
        }
        Err(e) => {
            eprintln!("record: {e}");
            std::process::exit(1);
        }
    }
}
