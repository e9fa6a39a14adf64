//! Every flag of every subcommand, defined once with its documentation:
//! `--help` is generated from here.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;

const ABOUT: &str = "Profile-directed system call clustering: find the sequences of system calls \
that cost a program its time, and remove the crossings.";

const AFTER: &str = "\
A typical session:
  syscluster record -- ./copy in out        # profile (all threads and children) → syscluster.json
  syscluster report                         # calls, edges, hot sequences, loops, code locations, …
  syscluster advise                         # ranked rewrites: where, what, what each saves here
  syscluster run -- ./logger                # unmodified binary, short writes coalesced
  syscluster stat -r 5 -- ./copy in out     # crossings by call and times, before and after
  syscluster advise --plan-out plan.json; syscluster cc --plan plan.json -O2 -g -o copy copy.c
  syscluster verify -- ./copy in out ::: ./copy-sc in out   # same bytes, stderr, exit, files?

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
    Calibrate(CalibrateArgs),
    Advise(AdviseArgs),
    Stat(StatArgs),
    Run(RunArgs),
    Cc(CcArgs),
    Verify(VerifyArgs),
    KmodGen(KmodGenArgs),
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
    /// The name plus the fd number, for calls that take one: read(3),
    /// write(4).
    Fd,
    /// The name plus what the descriptor is, for calls that take one:
    /// read(file /etc/hosts), read(accepted tcp 127.0.0.1:8080), write(stdout).
    /// A server's request loop is one loop whatever the number of
    /// connections; calls made in passing on many files are one node,
    /// read(many files). Aggregate mode records fd numbers instead.
    Descriptor,
    /// The name plus the code location that issued the call.
    Callsite,
}

/// Record a program (all its threads and children) into a profile.
///
/// The command's stdin, stdout and stderr pass through untouched, and
/// syscluster exits with the command's own status (128+N if signal N killed
/// it), as `time` does.
///
/// Stopping: Ctrl-C reaches the command from the terminal; SIGTERM, SIGHUP
/// (and SIGINT, SIGQUIT sent to syscluster alone) are passed on to it. The
/// command decides what they do; the recording goes on until it has ended —
/// its shutdown included — and the profile is always written, complete.
/// A command that ignores the signal runs on and is recorded to its end.
/// One that comes while syscluster gets ready (loading BPF programs takes
/// a second or two) stops it before the command starts: it says so and
/// exits with 128+N.
///
/// Daemons: tasks that leave the command's session (setsid) are not waited
/// for. The recording ends when the command and the tasks still in its
/// session have ended; detached ones run on untraced, and the profile
/// (`left_running`) and stderr say how many. With --follow-detached they are
/// recorded too, until they end or syscluster is interrupted (Ctrl-C,
/// SIGTERM) after the command has ended.
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  syscluster record -- ./copy in.dat out.dat
  syscluster record --mode aggregate -o web.json -- nginx -g 'daemon off;'
  syscluster record --backend ptrace --node-key callsite -- python3 app.py
  syscluster record --follow-detached -- service-that-daemonizes   # Ctrl-C to stop

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
    #[arg(long, value_enum, default_value = "descriptor")]
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
    /// Keep recording the command's detached tasks (daemons that called
    /// setsid) after it ended, until they end or syscluster is interrupted.
    #[arg(long)]
    pub follow_detached: bool,
    /// Say nothing on stderr unless something goes wrong.
    #[arg(short, long)]
    pub quiet: bool,
    /// The command to record and its arguments. Flags before the command (or before `--`) are
    /// syscluster's: a mistyped one is an error, never the command.
    #[arg(trailing_var_arg = true, required = true, value_name = "CMD")]
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
    /// needs `strace -k`, not supported: use descriptor, fd or name).
    #[arg(long, value_enum, default_value = "descriptor")]
    pub node_key: NodeKeyArg,
    /// Skip lines that are not strace output, and a last line cut short (the
    /// log ends without a newline), counting them as losses, instead of
    /// stopping at the first one.
    #[arg(long)]
    pub lenient: bool,
    /// Say nothing on stderr unless something goes wrong.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum FormatArg {
    /// Tables for a terminal ($COLUMNS or 80 columns wide; --wide: no cut).
    Text,
    /// The profile as JSON (docs/PROFILE_FORMAT.md).
    Json,
    /// The syscall graph for Graphviz: `| dot -Tsvg > graph.svg`.
    Dot,
    /// One self-contained HTML page: the interactive syscall graph, hot
    /// sequences, I/O patterns and the advisor's recommendations.
    Html,
    /// Folded stacks (`module;function (file:line);syscall count`) for
    /// FlameGraph's flamegraph.pl and speedscope.
    Folded,
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
    /// Text: cut no row (long sequences, paths, locations) [default: cut at
    /// $COLUMNS, or 80 columns].
    #[arg(short, long)]
    pub wide: bool,
}

/// Add up profiles of several runs or hosts. Profiles keyed differently
/// (--node-key, e.g. a format_version 1 profile keyed by fd with one keyed by
/// descriptor) are merged by system call name.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The profiles to merge.
    #[arg(required = true, num_args = 1.., value_name = "PROFILE")]
    pub profiles: Vec<PathBuf>,
    /// Where to write the merged profile.
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
}

/// Measure this machine once: what a crossing costs against a function call
/// (seed 000 table 1), what the calls the advisor rewrites cost by size,
/// libmulticall's backends by batch size (when its mc-calibrate is built),
/// and what each recorder (BPF events, BPF aggregate, ptrace) adds per
/// recorded call and per run. The result is cached and `advise` uses it
/// (shares are then of the untraced run).
#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Where to store the calibration [default: $XDG_CACHE_HOME/syscluster/calibration.json].
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Batches timed per figure (the median is kept).
    #[arg(long, default_value_t = 9, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub samples: u32,
    /// A directory on the file system whose write and read costs to measure
    /// (scratch files are made and removed there) [default: the cache directory].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// libmulticall's mc-calibrate [default: $SYSCLUSTER_MC_CALIBRATE (`none`:
    /// skip it), or libmulticall/build/mc-calibrate above syscluster's own
    /// directory].
    #[arg(long, value_name = "PATH")]
    pub mc_calibrate: Option<PathBuf>,
    /// Print the stored calibration as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// A quicker, noisier calibration: 3 samples, and mc-calibrate --quick.
    #[arg(long)]
    pub quick: bool,
    /// Print the table of measurements (what each fills, needs, times) and
    /// measure nothing.
    #[arg(long)]
    pub list: bool,
    /// Say nothing on stderr unless something goes wrong.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum AdviseFormatArg {
    /// Ranked recommendations for a terminal.
    Text,
    /// The advice as JSON (docs/ADVICE.md).
    Json,
    /// One self-contained HTML page with the interactive syscall graph.
    Html,
}

/// Recommend concrete rewrites, ranked by the time each saves on this
/// machine: where in the code, what to change, and the evidence.
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  syscluster calibrate                         # once per machine
  syscluster record -- ./copy in out
  syscluster advise                            # ranked recommendations
  syscluster advise --format html -o advice.html --plan-out plan.json")]
pub struct AdviseArgs {
    /// The profile to advise on.
    #[arg(default_value = "syscluster.json", value_name = "FILE")]
    pub profile: PathBuf,
    #[arg(short, long, value_enum, default_value = "text")]
    pub format: AdviseFormatArg,
    /// Write to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the plan (docs/PLAN_FORMAT.md) for `syscluster run --plan`.
    #[arg(long, value_name = "PLAN")]
    pub plan_out: Option<PathBuf>,
    /// Say for each recommendation whether the compiler applied it, from the
    /// remarks `syscluster cc --plan PLAN --remarks DIR` kept (docs/COMPILER.md).
    #[arg(long, value_name = "DIR")]
    pub remarks: Option<PathBuf>,
    /// The calibration to use [default: $XDG_CACHE_HOME/syscluster/calibration.json].
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Measure this machine now if the calibration is missing or stale.
    #[arg(long, conflicts_with = "no_calibration")]
    pub recalibrate: bool,
    /// Ignore any calibration: price calls from the profile's own kernel times.
    #[arg(long)]
    pub no_calibration: bool,
    /// Advise for the host this description (docs/ADVICE.md) says, not this
    /// machine: which backends and clocks it offers, and the identity its
    /// calibration must have. With it, advice depends on files alone.
    #[arg(long, value_name = "FILE", conflicts_with = "recalibrate")]
    pub host: Option<PathBuf>,
    /// Also write the description of the host advised for (this machine's,
    /// unless --host) to FILE, for `--host` elsewhere.
    #[arg(long, value_name = "FILE")]
    pub host_out: Option<PathBuf>,
    /// A pattern must repeat at least N times to be advised on.
    #[arg(long, default_value_t = 32, value_name = "N")]
    pub min_repeats: u64,
    /// Say nothing on stderr unless something goes wrong.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Count a command's kernel crossings by system call and time it (wall,
/// user, system), over repeated runs: min / median / max.
///
/// Each run is timed untraced, then run again under the recorder (BPF in
/// aggregate mode, ptrace where BPF is not permitted) to count its
/// crossings, so tracing never slows the times. Compare a program with
/// itself under the runtime: `syscluster stat -- CMD` and
/// `syscluster stat -- syscluster run -- CMD`. The command shares stat's
/// stdout: when its reader goes away (`stat -- yes | head -1`), stat dies
/// of SIGPIPE as the command does, writing nothing more.
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
    /// The command and its arguments. Flags before the command (or before `--`) are
    /// syscluster's: a mistyped one is an error, never the command.
    #[arg(trailing_var_arg = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Run an unmodified program with its short writes coalesced, or with the
/// clusters of a plan applied at their code locations.
///
/// Writes shorter than BYTES to regular files are gathered in memory and
/// written with one `write`/`writev` per buffer: the crossings and most of
/// the kernel work disappear, the bytes and their order do not change.
/// Pending bytes are written before anything could observe the file or its
/// offset, otherwise within the flush interval (a target: a heavily loaded
/// machine can delay it), at every kind of exit — and even when the program
/// is killed with SIGKILL. Static, setuid and
/// raw-`syscall` programs cannot be interposed: syscluster says so and runs
/// them unchanged. The command's stdio and exit status pass through.
/// docs/RUNTIME.md has the exact rules. Start-up: the `syscluster` binary runs
/// this itself, without loading the rest of the CLI (docs/RUNTIME.md, "Start-up").
/// The search for raw `syscall` instructions keeps its verdict per library
/// file in $XDG_CACHE_HOME/syscluster/scan-1 (~/.cache/syscluster/scan-1);
/// deleting it clears it, SYSCLUSTER_SCAN_CACHE=0 turns it off
/// (docs/RUNTIME.md, "The scan cache").
///
/// With --plan (written by `syscluster advise --plan-out`), only the calls
/// made from the plan's code locations change: short writes there are
/// coalesced, clocks read through `syscall()` there come from the vDSO,
/// `getpid`/`gettid` there from a cache, `lseek`+`read` there become one
/// `pread`. Clusters the runtime cannot apply without changing what the
/// program does are listed once on stderr with the reason. A plan that is
/// invalid, made for another program, or stale (a module rebuilt since)
/// is refused before the program runs. --plan alone coalesces no other
/// write; with --coalesce-writes every short write is coalesced as well,
/// and BYTES also sets the size below which the plan's writes are deferred.
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  syscluster run -- dd if=/dev/zero of=out bs=8 count=1000000
  syscluster stat -r 5 -- syscluster run -- ./logger      # crossings and time, applied
  syscluster record -- ./prog; syscluster advise --plan-out plan.json
  syscluster run --plan plan.json -v -- ./prog           # the plan's clusters, and where")]
pub struct RunArgs {
    /// Coalesce writes shorter than BYTES (default 4096); 0 turns coalescing off [default: 4096, none
    /// with --plan].
    #[arg(long, value_name = "BYTES", num_args = 0..=1, default_missing_value = "4096")]
    pub coalesce_writes: Option<usize>,
    /// Apply the clusters of PLAN (from `syscluster advise --plan-out`) at their code locations.
    #[arg(long, value_name = "PLAN")]
    pub plan: Option<PathBuf>,
    /// Write pending bytes out at the latest after MS milliseconds. Also what a kill of the whole
    /// cgroup (cgroup.kill) or PID namespace can lose: at most the bytes acknowledged within the last
    /// MS milliseconds, one buffer per file (a namespace's PID 1 defers nothing).
    #[arg(long, value_name = "MS", default_value_t = 5)]
    pub flush_interval: u32,
    /// Say what is interposed and, per process, what was coalesced.
    #[arg(short, long)]
    pub verbose: bool,
    /// The command and its arguments. Flags before the command (or before `--`) are
    /// syscluster's: a mistyped one is an error, never the command.
    #[arg(trailing_var_arg = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// A drop-in C compiler: clang-19 with the syscluster pass plugin, which
/// turns the plan's clusters into multi-calls where it proves the program
/// unchanged, and libmulticall linked statically when it links.
///
/// syscluster's options come first; every other argument goes to clang
/// untouched, so `CC="syscluster cc --plan plan.json"` builds autotools and
/// Makefile projects unchanged. Without --plan it runs clang exactly as
/// clang alone would. The plan's locations are source lines: compile with
/// -g. Each cluster matched, made or refused is explained as a remark:
/// add -Rpass=syscluster -Rpass-missed=syscluster -Rpass-analysis=syscluster
/// to see them, or --remarks DIR to keep them. docs/COMPILER.md has the
/// details.
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  syscluster record -- ./copy in out && syscluster advise --plan-out plan.json
  syscluster cc --plan plan.json -O2 -g -o copy copy.c
  syscluster cc --plan plan.json -O2 -g -c copy.c -Rpass=syscluster -Rpass-missed=syscluster
  CC=\"syscluster cc --plan $PWD/plan.json --remarks $PWD/remarks\" ./configure && make

The compiler is clang-19 (SYSCLUSTER_CLANG overrides it).")]
pub struct CcArgs {
    /// Apply the clusters of PLAN (from `syscluster advise --plan-out`).
    #[arg(long, value_name = "PLAN")]
    pub plan: Option<PathBuf>,
    /// Keep the pass's remarks in DIR, one YAML file per translation unit
    /// (safe under make -j); needs --plan.
    #[arg(long, value_name = "DIR")]
    pub remarks: Option<PathBuf>,
    /// libmulticall's calibration of the host the program is for (default:
    /// the file the library reads, from `syscluster calibrate`). A region is
    /// replaced only where it shows a gain for the profile's call counts.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Replace the regions the calibration shows no gain for, and use the
    /// multi-call however short the copy: for hosts with the kernel module,
    /// where each becomes one crossing.
    #[arg(long)]
    pub assume_gain: bool,
    /// clang's arguments, passed through untouched.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "CLANG-ARGS")]
    pub args: Vec<OsString>,
}

/// Check that a rewritten program does what the original did: byte for
/// byte, under the same faults, with its crossings and times side by side.
///
/// Each variant runs in its own scratch copy of the current directory (or
/// of --dir), at the same path, with stdin from /dev/null. verify compares
/// what each did: stdout, stderr, exit status (or killing signal), and every
/// file created, changed or deleted in its copy (contents, type, permission
/// bits). With --runs N they run interleaved, original then candidate, N
/// times, each time in a fresh copy. Each run is timed untraced and run once
/// more under the recorder to count its crossings, as `syscluster stat`
/// does; those runs are compared too.
///
/// Faults. --inject CALL:ERRNO@K makes the K-th CALL the program issues fail
/// with ERRNO (its number or its name) in both variants, under ptrace
/// (times are then traced times). CALL:short@K lets it do half the bytes it
/// asked for, CALL:short=N@K at most N. Calls are counted across all threads
/// and processes from the command's exec. A multi-call (libmulticall) is
/// forced to its direct backend (MULTICALL_BACKEND=direct in both
/// variants), which issues every call of the multi-call as its own system
/// call in the source's order: the K-th write is the K-th write the source
/// makes, whichever calls it merged. docs/VERIFY.md says why.
///
/// With --run the candidate is the same command under `syscluster run`,
/// which changes which calls reach the kernel: a K-th call no longer means
/// the same thing, so --inject is refused there. Faults come from the
/// environment instead: --fs-limit SIZE puts every scratch copy on a tmpfs
/// of SIZE bytes (root), so that ENOSPC falls at the same byte in both.
///
/// Exit status: 0 nothing differs, 1 something differs (the first
/// differences are shown: which file or stream, the first differing byte,
/// its context), 2 verify itself could not run.
#[derive(Args, Debug)]
#[command(
    override_usage = "syscluster verify [OPTIONS] -- ORIGINAL… ::: CANDIDATE…\n       \
syscluster verify --run [--plan PLAN] [OPTIONS] -- CMD…",
    after_help = "\
Examples:
  syscluster verify -- ./write8 out 1000 ::: ./write8_coalesced out 1000
  syscluster verify -r 5 -- ./copy in out ::: ./copy-multicall in out
  syscluster verify --inject write:ENOSPC@3 -- ./copy in out ::: ./copy-multicall in out
  syscluster verify --inject write:short@1 --inject openat:EACCES@2 -- ./a ::: ./b
  syscluster verify --run -- ./logger                   # plain against syscluster run
  syscluster verify --run --plan plan.json --fs-limit 64K -- ./logger

Arguments after `--` are the ORIGINAL command, then `:::`, then the CANDIDATE."
)]
pub struct VerifyArgs {
    /// Runs of each variant, interleaved (original, candidate, original, …).
    #[arg(short = 'r', long = "runs", default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Make the K-th CALL fail with ERRNO (or return short) in both
    /// variants: CALL:ERRNO@K, CALL:short@K, CALL:short=N@K. Repeatable.
    #[arg(long, value_name = "CALL:ERRNO@K")]
    pub inject: Vec<String>,
    /// The candidate is the command under `syscluster run` (no `:::`).
    #[arg(long)]
    pub run: bool,
    /// With --run: apply this plan (`syscluster run --plan`).
    #[arg(long, value_name = "PLAN", requires = "run")]
    pub plan: Option<PathBuf>,
    /// Put each scratch copy on a tmpfs of SIZE bytes (suffixes K, M, G:
    /// powers of 1024), so that writes fail with ENOSPC at the same byte.
    #[arg(long, value_name = "SIZE")]
    pub fs_limit: Option<String>,
    /// Copy DIR instead of the current directory (at most 256 MiB).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Only compare and time; do not count crossings.
    #[arg(long)]
    pub no_count: bool,
    /// Count crossings with ptrace even where BPF is permitted.
    #[arg(long)]
    pub ptrace: bool,
    /// Keep the scratch copies (their directory is printed).
    #[arg(long)]
    pub keep: bool,
    /// `ORIGINAL… ::: CANDIDATE…`, or with --run the one command.
    #[arg(trailing_var_arg = true, required = true, allow_hyphen_values = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Write the C source of a multicall.ko specialized to a plan's clusters
/// (docs/KMOD.md, "kmod-gen"): for each cluster of two calls or more, a
/// guard that recognizes it in a multi-call (its calls, references and the
/// constants of its value profile) and straight-line code with those
/// constants folded; every other program runs the module's generic path.
/// The plan is untrusted: names are checked against the syscall table,
/// numbers range-checked, and no string of it reaches the C. A malformed
/// plan is a one-line error and exit 2. Build the result with Kbuild:
/// make -C /lib/modules/$(uname -r)/build M=DIR modules.
#[derive(Args, Debug)]
pub struct KmodGenArgs {
    /// The plan (syscluster advise --plan-out).
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,
    /// The directory to write the module's source and Kbuild into.
    #[arg(short, long, value_name = "DIR", default_value = "multicall-plan")]
    pub output: PathBuf,
}
