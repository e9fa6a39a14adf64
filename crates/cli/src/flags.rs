//! Every flag of every subcommand, defined once with its documentation:
//! `--help` is generated from here.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;

const ABOUT: &str = "Profile-directed system call clustering: find the sequences of system calls \
that cost a program its time, and remove the crossings.";

const AFTER: &str = "\
A typical session:
  syscluster record -- cp big.iso /tmp/copy     # profile → syscluster.json
  syscluster report                             # tables: calls, edges, hot sequences, …
  syscluster report --format dot | dot -Tsvg > graph.svg

Profiles of strace logs:  strace -f -ttt -T -o LOG CMD; syscluster import-strace LOG";

#[derive(Parser, Debug)]
#[command(name = "syscluster", version, about = ABOUT, after_help = AFTER, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    Record(RecordArgs),
    ImportStrace(ImportArgs),
    Report(ReportArgs),
    Merge(MergeArgs),
    Stat(StatArgs),
    Run(RunArgs),
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum BackendArg {
    /// BPF programs on the raw_syscalls tracepoints (needs root or CAP_BPF+CAP_PERFMON).
    Bpf,
    /// ptrace with a seccomp filter: no privileges, much slower.
    Ptrace,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ModeArg {
    /// The graph and counts are built in the kernel: lowest overhead; no value
    /// profiles, I/O patterns or data dependencies.
    Aggregate,
    /// Every call is streamed to syscluster: the full profile.
    Events,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum NodeKeyArg {
    /// The system call name alone.
    Name,
    /// The name plus the fd, for calls that take one: read(3), write(4).
    Fd,
    /// The name plus the code location that issued the call.
    Callsite,
}

/// Record a program (all its threads and children) into a profile.
///
/// The command's stdin, stdout and stderr pass through untouched, and
/// syscluster exits with the command's own status (128+N if signal N killed
/// it), as `time` does.
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  syscluster record -- ./copy in.dat out.dat
  syscluster record --mode aggregate -o web.json -- nginx -g 'daemon off;'
  syscluster record --backend ptrace --node-key callsite -- python3 app.py

Without --backend, BPF is used where it may be loaded and ptrace otherwise
(syscluster says so on stderr).")]
pub struct RecordArgs {
    /// Where to write the profile.
    #[arg(short, long, default_value = "syscluster.json", value_name = "FILE")]
    pub output: PathBuf,
    /// How to trace [default: bpf where permitted, else ptrace]
    #[arg(long, value_enum)]
    pub backend: Option<BackendArg>,
    /// What the BPF backend records.
    #[arg(long, value_enum, default_value = "events")]
    pub mode: ModeArg,
    /// What makes two calls the same node of the syscall graph.
    #[arg(long, value_enum, default_value = "fd")]
    pub node_key: NodeKeyArg,
    /// Do not find the code location of each call (cheaper).
    #[arg(long)]
    pub no_callsites: bool,
    /// Slots of each value profile table (seed 004's N).
    #[arg(long, default_value_t = 12, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=1024))]
    pub tnv_slots: u32,
    /// BPF ring buffer size in MiB (events mode); a power of two.
    #[arg(long, default_value_t = 64, value_name = "MIB")]
    pub ring_buffer: usize,
    /// Say nothing on stderr unless something goes wrong.
    #[arg(short, long)]
    pub quiet: bool,
    /// The command to record and its arguments (after `--` if they start with `-`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Turn a strace log into a profile.
///
/// The log should come from `strace -f -ttt -T -o LOG CMD` (-f follows
/// threads and children, -ttt gives timestamps, -T the time in the kernel);
/// logs without -ttt or -T import too, without durations.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The strace log.
    pub log: PathBuf,
    /// Where to write the profile.
    #[arg(short, long, default_value = "syscluster.json", value_name = "FILE")]
    pub output: PathBuf,
    /// What makes two calls the same node of the syscall graph (callsite
    /// needs `strace -k`, not supported: use name or fd).
    #[arg(long, value_enum, default_value = "fd")]
    pub node_key: NodeKeyArg,
    /// Skip lines that are not strace output (counted as losses) instead of
    /// stopping at the first one.
    #[arg(long)]
    pub lenient: bool,
    /// Say nothing on stderr unless something goes wrong.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum FormatArg {
    /// Tables for a terminal (80 columns).
    Text,
    /// The profile as JSON (docs/PROFILE_FORMAT.md).
    Json,
    /// The syscall graph for Graphviz: `| dot -Tsvg > graph.svg`.
    Dot,
}

/// Show a profile: top calls, edges, hot sequences, loops, code locations,
/// value profiles, I/O patterns, losses.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The profile to show.
    #[arg(default_value = "syscluster.json", value_name = "FILE")]
    pub profile: PathBuf,
    #[arg(short, long, value_enum, default_value = "text")]
    pub format: FormatArg,
    /// Rows per table (text), edges drawn (dot: at least 50).
    #[arg(long, default_value_t = 15, value_name = "N")]
    pub top: usize,
    /// Write to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Add up profiles of several runs or hosts (same --node-key).
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The profiles to merge.
    #[arg(required = true, num_args = 1.., value_name = "PROFILE")]
    pub profiles: Vec<PathBuf>,
    /// Where to write the merged profile.
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
}

/// Count a command's kernel crossings by system call and time it (wall,
/// user, system), over repeated runs: min / median / max.
///
/// Each run is timed untraced, then run again under the recorder (BPF in
/// aggregate mode, ptrace where BPF is not permitted) to count its
/// crossings, so tracing never slows the times. Compare a program with
/// itself under the runtime: `syscluster stat -- CMD` and
/// `syscluster stat -- syscluster run -- CMD`.
#[derive(Args, Debug)]
pub struct StatArgs {
    /// Runs of the command.
    #[arg(short = 'r', long = "runs", default_value_t = 1, value_name = "N")]
    pub runs: u32,
    /// Print JSON (format_version 1) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Only time the command; do not count crossings.
    #[arg(long)]
    pub no_count: bool,
    /// Count with ptrace even where BPF is permitted.
    #[arg(long)]
    pub ptrace: bool,
    /// System calls listed (the rest are summed).
    #[arg(long, default_value_t = 15, value_name = "N")]
    pub top: usize,
    /// The command and its arguments (after `--` if they start with `-`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Run an unmodified program with its short writes coalesced.
///
/// Writes shorter than BYTES to regular files are gathered in memory and
/// written with one `write`/`writev` per buffer: the crossings and most of
/// the kernel work disappear, the bytes and their order do not change.
/// Pending bytes are written before anything could observe the file or its
/// offset, within the flush interval at the latest, at every kind of exit —
/// and even when the program is killed with SIGKILL. Static, setuid and
/// raw-`syscall` programs cannot be interposed: syscluster says so and runs
/// them unchanged. The command's stdio and exit status pass through.
/// docs/RUNTIME.md has the exact rules.
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  syscluster run -- dd if=/dev/zero of=out bs=8 count=1000000
  syscluster stat -r 5 -- syscluster run -- ./logger      # crossings and time, applied")]
pub struct RunArgs {
    /// Coalesce writes shorter than BYTES (default 4096); 0 turns coalescing off.
    #[arg(long, value_name = "BYTES", num_args = 0..=1, default_missing_value = "4096", default_value_t = 4096)]
    pub coalesce_writes: usize,
    /// Write pending bytes out at the latest after MS milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5)]
    pub flush_interval: u32,
    /// Say what is interposed and, per process, what was coalesced.
    #[arg(short, long)]
    pub verbose: bool,
    /// The command and its arguments (after `--` if they start with `-`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}
