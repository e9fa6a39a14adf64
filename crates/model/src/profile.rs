//! The profile: syscall graph, value profiles, I/O patterns, sequences and
//! losses of one or more runs. Its JSON form is documented in
//! `docs/PROFILE_FORMAT.md`; every field here appears there.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// The version this build writes and the newest it reads. Version 2 added
/// the `descriptor` node key (what a descriptor is, not its number) and made
/// it the default; version 1 profiles load unchanged (their keys are `fd`,
/// `name` or `callsite`). Version 3 added a location's `site` (the call
/// into libc, when the location is past a language's runtime); version 1
/// and 2 profiles load unchanged (their locations have none).
pub const FORMAT_VERSION: u32 = crate::formats::PROFILE_VERSION;

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub format_version: u32,
    pub meta: Meta,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    #[serde(default)]
    pub value_profiles: Vec<ValueProfile>,
    #[serde(default)]
    pub io_patterns: Vec<IoPattern>,
    #[serde(default)]
    pub sequences: Sequences,
    #[serde(default)]
    pub lost_events: LostEvents,
}

/// How graph nodes are keyed (seed 000 §3.1: a syscall plus selected arguments).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum NodeKeyMode {
    /// The syscall name alone.
    Name,
    /// The name plus the fd number, for calls that take one.
    Fd,
    /// The name plus what the descriptor is (a file by path, the listening
    /// socket, a connection accepted from it, a pipe, …), for calls that
    /// take one: a server's request loop is one loop whatever the number of
    /// connections (and a loop over files whatever the files: `many files`).
    #[default]
    Descriptor,
    /// The name plus the code location that issued the call.
    Callsite,
}

impl NodeKeyMode {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKeyMode::Name => "name",
            NodeKeyMode::Fd => "fd",
            NodeKeyMode::Descriptor => "descriptor",
            NodeKeyMode::Callsite => "callsite",
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// The program that wrote the profile, with its version.
    pub tool: String,
    /// The recorded command and its arguments.
    pub command: Vec<String>,
    /// Machine architecture; profiles of different architectures do not merge.
    pub arch: String,
    /// Kernel release and version string.
    pub kernel: String,
    /// CPU model name and count.
    pub cpu: String,
    pub hostname: String,
    /// `bpf`, `ptrace`, `strace` (imported log) or `merged`.
    pub backend: String,
    /// `aggregate`, `events` (bpf), `trace` (ptrace, strace).
    pub mode: String,
    pub node_key: NodeKeyMode,
    /// Wall-clock start, seconds since the Unix epoch.
    pub started_at: f64,
    /// Wall time of the recording in nanoseconds.
    pub duration_ns: u64,
    /// CPU time (user + system) of the recorded command and the children
    /// it waited for, ns, as the kernel accounted it: under BPF, the
    /// recorder's programs run in the command's context and are in it, its
    /// reading of the events is not. Absent where not measured (ptrace,
    /// strace, older profiles, or merged with one of those).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ns: Option<u64>,
    /// How the command ended, when it ran under the recorder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<ExitStatus>,
    /// Threads of the command still running when the recording ended:
    /// detached ones (a daemon's) that `record` was not asked to follow,
    /// or all that were left when it was stopped. They ran on untraced.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub left_running: u64,
    /// All system calls counted (the sum of node counts).
    pub total_calls: u64,
    pub processes: u64,
    pub threads: u64,
    /// How many runs were merged into this profile (1 for a recording).
    pub runs: u64,
    /// Which optional sections the backend could fill.
    pub collected: Collected,
}

/// The sections a backend fills; absent data is then known to be absent,
/// not zero.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Collected {
    pub kernel_time: bool,
    /// Each node's `blocked_ns`: the part of its kernel time spent off the
    /// CPU, waiting (absent in profiles written before it existed).
    #[serde(default)]
    pub blocked_time: bool,
    pub callsites: bool,
    pub value_profiles: bool,
    pub io_patterns: bool,
    pub result_matches: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ExitStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

/// A node of the syscall graph: a system call plus its key arguments.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Node {
    pub id: u32,
    /// The call's name, e.g. "write".
    pub syscall: String,
    pub nr: u32,
    /// The key arguments beyond the name.
    #[serde(default, skip_serializing_if = "NodeKey::is_empty")]
    pub key: NodeKey,
    pub count: u64,
    /// Calls that returned a negative value.
    pub errors: u64,
    /// Total time in the kernel, nanoseconds (0 where not collected).
    pub kernel_ns: u64,
    /// The part of `kernel_ns` the calls spent off the CPU: blocked (waiting
    /// for a child, a descriptor, a lock, a timer) or preempted. Time
    /// blocked is not time working: see [`Node::working_ns`]. 0 where not
    /// collected (`meta.collected.blocked_time`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub blocked_ns: u64,
    /// The code locations that issued the calls, most frequent first.
    #[serde(default)]
    pub callsites: Vec<Callsite>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Node {
    /// Time the calls kept the CPU busy in the kernel: `kernel_ns` less the
    /// time they were blocked. Equal to `kernel_ns` where blocking was not
    /// measured.
    pub fn working_ns(&self) -> u64 {
        self.kernel_ns.saturating_sub(self.blocked_ns)
    }
}

/// The descriptor of a node folding a call made in passing on many files
/// (docs/PROFILE_FORMAT.md, "The `descriptor` key").
pub const MANY_FILES_DESCRIPTOR: &str = "many files";

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(deny_unknown_fields)]
pub struct NodeKey {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd: Option<i64>,
    /// What the descriptor is (`node_key` `descriptor`): `file /etc/hosts`,
    /// `listen tcp 127.0.0.1:8080`, `accepted tcp 127.0.0.1:8080`, `pipe
    /// read end`, `epoll`, `stdout`, … (docs/PROFILE_FORMAT.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub descriptor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callsite: Option<Location>,
}

impl NodeKey {
    pub fn is_empty(&self) -> bool {
        self.fd.is_none() && self.descriptor.is_none() && self.callsite.is_none()
    }

    /// Whether the node is keyed by a descriptor (its number or what it is).
    pub fn has_descriptor(&self) -> bool {
        self.fd.is_some() || self.descriptor.is_some()
    }

    /// Whether two nodes are keyed by the same descriptor (the same number,
    /// or the same kind of descriptor). Two nodes without a descriptor in
    /// their keys (keyed by name) count as the same: the key cannot tell.
    pub fn same_descriptor(&self, other: &NodeKey) -> bool {
        self.fd == other.fd && self.descriptor == other.descriptor
    }

    /// The kind of file behind the node's descriptor, from what it is
    /// (`node_key` `descriptor`), in the words of the I/O patterns' `kind`:
    /// `file` (`file PATH`, `temp file in DIR`, `many files`), `device`
    /// (`file /dev/…`), `socket` (`socket`, `listen`, `accepted`,
    /// `connected`, `socketpair`), `pipe`, or `other` (`epoll`, `eventfd`,
    /// …). None when the key cannot say: keyed by number, or a descriptor
    /// the recording did not see made (`stdin`, `inherited fd N`, …).
    pub fn descriptor_kind(&self) -> Option<&'static str> {
        let d = self.descriptor.as_deref()?;
        let word = d.split(' ').next().unwrap_or(d);
        Some(match word {
            "many" if d == MANY_FILES_DESCRIPTOR => "file",
            "file" if d.starts_with("file /dev/") => "device",
            "file" | "temp" => "file",
            "socket" | "listen" | "accepted" | "connected" | "socketpair" => "socket",
            "pipe" => "pipe",
            "stdin" | "stdout" | "stderr" | "inherited" => return None,
            _ => "other",
        })
    }

    /// The descriptor as a label: `3`, `file /etc/hosts`.
    pub fn descriptor_label(&self) -> Option<String> {
        match (&self.fd, &self.descriptor) {
            (Some(fd), _) => Some(fd.to_string()),
            (None, Some(d)) => Some(d.clone()),
            _ => None,
        }
    }
}

/// A code location in the traced program.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(deny_unknown_fields)]
pub struct Location {
    /// Path of the mapped file (executable or shared library).
    pub module: String,
    /// Offset of the return address in that file.
    pub offset: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The file offset in `module` of the return address of the call into
    /// libc — the frame a preload library's wrapper sees, where `syscluster
    /// run --plan` applies a cluster — when it is not `offset`: the location
    /// was found past the language's runtime (Rust's `std`, Go's runtime),
    /// whose code makes the call. Absent when the location makes the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<u64>,
}

impl Location {
    /// The file offset of the return address of the call into libc: where
    /// the runtime applies a plan (`site`, else `offset`).
    pub fn site_offset(&self) -> u64 {
        self.site.unwrap_or(self.offset)
    }

    /// The function's name as a user reads it: demangled (Rust, C++).
    /// `function` keeps the symbol's own name, which plans match.
    pub fn function_name(&self) -> Option<Cow<'_, str>> {
        self.function.as_deref().map(crate::symbol::demangle)
    }

    /// `file:line` where debug info exists, else `function+0x..`, else
    /// `module+0x..`.
    pub fn short(&self) -> String {
        let base = self.module.rsplit('/').next().unwrap_or(&self.module);
        match (&self.file, self.line, self.function_name()) {
            (Some(f), Some(l), _) => format!("{}:{}", f.rsplit('/').next().unwrap_or(f), l),
            (_, _, Some(func)) => format!("{func} ({base}+{:#x})", self.offset),
            _ => format!("{base}+{:#x}", self.offset),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.function_name(), &self.file, self.line) {
            (Some(func), Some(file), Some(line)) => write!(f, "{func} at {file}:{line}"),
            _ => f.write_str(&self.short()),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Callsite {
    pub location: Location,
    pub count: u64,
}

/// `to` immediately followed `from` in the same thread `weight` times.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Edge {
    pub from: u32,
    pub to: u32,
    pub weight: u64,
    /// How often an argument of `to` equalled the result of `from` (the data
    /// dependencies of seed 000 §3.2, e.g. `write(out, buf, n)` after
    /// `n = read(...)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub result_matches: Vec<ResultMatch>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ResultMatch {
    /// Argument index (0-based) of the `to` call.
    pub arg: u8,
    pub count: u64,
}

/// The most frequent values of one argument (or the result) of one call: a
/// TNV table as seed 004 §3.3.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ValueProfile {
    pub syscall: String,
    /// Argument name from the syscall table, or "result".
    pub arg: String,
    /// Argument index, or -1 for the result.
    pub position: i8,
    /// Values seen in all.
    pub observations: u64,
    /// Observations of values the table could not hold (evicted or never
    /// admitted).
    pub not_held: u64,
    /// Slots of the table (N).
    pub slots: u32,
    /// The held values, most frequent first.
    pub top: Vec<ValueCount>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ValueCount {
    pub value: i64,
    pub count: u64,
    /// count / observations.
    pub share: f64,
}

/// Per-file I/O behaviour (seed 001 §3, table 3).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IoPattern {
    /// Path as opened, or `<fd N>` for descriptors inherited or of unknown origin.
    pub path: String,
    /// `file`, `pipe`, `socket`, `tty`, `unknown`.
    pub kind: String,
    pub opens: u64,
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub seeks: u64,
    /// Transfer sizes of reads and writes, log2 buckets.
    pub size_histogram: Vec<SizeBucket>,
    /// Share of reads and writes that started where the previous one on the
    /// same open file ended.
    pub sequential_share: f64,
    /// A pattern class, see docs/PROFILE_FORMAT.md.
    pub class: String,
}

/// Transfers of `min..=max` bytes.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SizeBucket {
    pub min: u64,
    pub max: u64,
    pub reads: u64,
    pub writes: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Sequences {
    /// Chains formed greedily over edges in descending weight (seed 002 §2.1).
    pub hot_paths: Vec<Sequence>,
    /// Cycles of the graph that repeat.
    pub loops: Vec<Sequence>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Sequence {
    /// Node ids in order.
    pub nodes: Vec<u32>,
    /// The lightest edge of the sequence: how many times at most it ran whole.
    pub weight: u64,
    /// Crossings inside the sequence: weight × number of calls.
    pub crossings: u64,
    /// crossings / all calls.
    pub share: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LostEvents {
    /// Calls lost whole (their edges are missing from the graph).
    pub total: u64,
    /// Every cause with its count, including details lost from calls that were
    /// counted (such as a code location the unwinder could not find).
    pub by_cause: BTreeMap<String, u64>,
}

impl LostEvents {
    pub fn add(&mut self, cause: crate::event::LossCause, n: u64) {
        if n == 0 {
            return;
        }
        *self.by_cause.entry(cause.as_str().to_string()).or_insert(0) += n;
        if cause.loses_calls() {
            self.total += n;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_cause.values().all(|&n| n == 0)
    }
}

/// Why a profile could not be read.
#[derive(Debug)]
pub enum ProfileError {
    Io(String, std::io::Error),
    NotAProfile(String, String),
    FutureVersion(String, u64),
    Corrupt(String, String),
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProfileError::Io(p, e) => write!(f, "cannot read profile {p}: {e}"),
            ProfileError::NotAProfile(p, why) => write!(f, "{p} is not a syscluster profile: {why}"),
            ProfileError::FutureVersion(p, v) => write!(
                f,
                "profile {p} has format_version {v}, newer than the {FORMAT_VERSION} this syscluster reads; upgrade syscluster"
            ),
            ProfileError::Corrupt(p, why) => write!(f, "corrupt profile {p}: {why}"),
        }
    }
}

impl std::error::Error for ProfileError {}

impl Profile {
    /// Reads and validates a profile file.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| ProfileError::Io(name.clone(), e))?;
        Profile::from_slice(&bytes, &name)
    }

    /// Parses and validates a profile; `name` names it in errors.
    pub fn from_slice(bytes: &[u8], name: &str) -> Result<Profile, ProfileError> {
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            let why = if bytes.iter().all(|b| b.is_ascii_whitespace()) {
                "the file is empty"
            } else {
                "a JSON object is expected"
            };
            // Not even JSON? Say so, as for any other syntax error.
            if serde_json::from_slice::<serde_json::Value>(bytes).is_err()
                && !bytes.iter().all(|b| b.is_ascii_whitespace())
            {
                return Err(ProfileError::Corrupt(name.to_string(), "invalid JSON: not a JSON document".into()));
            }
            return Err(ProfileError::NotAProfile(name.to_string(), why.into()));
        }
        #[derive(Deserialize)]
        struct Probe {
            format_version: Option<serde_json::Value>,
        }
        let probe: Probe = serde_json::from_slice(bytes).map_err(|e| {
            if e.is_syntax() || e.is_eof() {
                ProfileError::Corrupt(name.to_string(), format!("invalid JSON: {e}"))
            } else {
                ProfileError::NotAProfile(name.to_string(), e.to_string())
            }
        })?;
        let version = match probe.format_version {
            None => return Err(ProfileError::NotAProfile(name.to_string(), "no format_version field".into())),
            Some(v) => v.as_u64().ok_or_else(|| {
                ProfileError::Corrupt(name.to_string(), format!("format_version is {v}, not a positive integer"))
            })?,
        };
        if version > FORMAT_VERSION as u64 {
            return Err(ProfileError::FutureVersion(name.to_string(), version));
        }
        if version == 0 {
            return Err(ProfileError::Corrupt(name.to_string(), "format_version 0 does not exist".into()));
        }
        let profile: Profile =
            serde_json::from_slice(bytes).map_err(|e| ProfileError::Corrupt(name.to_string(), e.to_string()))?;
        if version < 3 && profile.nodes.iter().flat_map(|n| &n.callsites).any(|c| c.location.site.is_some()) {
            return Err(ProfileError::Corrupt(
                name.to_string(),
                format!("a location's site does not exist in format_version {version}"),
            ));
        }
        if version < 2 && profile.meta.node_key == NodeKeyMode::Descriptor {
            return Err(ProfileError::Corrupt(
                name.to_string(),
                "node_key descriptor does not exist in format_version 1".into(),
            ));
        }
        profile.validate().map_err(|why| ProfileError::Corrupt(name.to_string(), why))?;
        Ok(profile)
    }

    /// Checks the invariants the analyses rely on.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.nodes.len();
        for (i, node) in self.nodes.iter().enumerate() {
            if node.id as usize != i {
                return Err(format!("node {i} has id {} (ids must be 0..{n} in order)", node.id));
            }
            if node.errors > node.count {
                return Err(format!("node {i} has more errors ({}) than calls ({})", node.errors, node.count));
            }
            let sites: u64 = node.callsites.iter().map(|c| c.count).fold(0u64, u64::saturating_add);
            if sites > node.count {
                return Err(format!("node {i} has more callsite counts ({sites}) than calls ({})", node.count));
            }
        }
        let mut seen = std::collections::HashSet::new();
        for e in &self.edges {
            if e.from as usize >= n || e.to as usize >= n {
                return Err(format!("edge {} -> {} names a node that does not exist ({n} nodes)", e.from, e.to));
            }
            if !seen.insert((e.from, e.to)) {
                return Err(format!("edge {} -> {} appears twice", e.from, e.to));
            }
            if e.weight > self.nodes[e.from as usize].count || e.weight > self.nodes[e.to as usize].count {
                return Err(format!("edge {} -> {} is heavier ({}) than one of its nodes", e.from, e.to, e.weight));
            }
        }
        for s in self.sequences.hot_paths.iter().chain(&self.sequences.loops) {
            if let Some(bad) = s.nodes.iter().find(|&&id| id as usize >= n) {
                return Err(format!("a sequence names node {bad}, which does not exist"));
            }
        }
        for v in &self.value_profiles {
            let held: u64 = v.top.iter().map(|t| t.count).fold(0u64, u64::saturating_add);
            if held.saturating_add(v.not_held) != v.observations {
                return Err(format!(
                    "value profile {}.{}: held ({held}) + not held ({}) != observations ({})",
                    v.syscall, v.arg, v.not_held, v.observations
                ));
            }
        }
        Ok(())
    }

    /// Writes the profile as pretty JSON, atomically: the file is either the
    /// old one or the complete new one, never a truncated mix.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        write_atomically(path, &json)
    }

    /// The node with id `id`.
    pub fn node(&self, id: u32) -> &Node {
        &self.nodes[id as usize]
    }

    /// A node's label: `write(3)`, `read(file /tmp/in)`, `read`,
    /// `write@copy.c:14`.
    pub fn label(&self, id: u32) -> String {
        let n = self.node(id);
        match (n.key.descriptor_label(), &n.key.callsite) {
            (Some(d), _) => format!("{}({d})", n.syscall),
            (None, Some(loc)) => format!("{}@{}", n.syscall, loc.short()),
            (None, None) => n.syscall.clone(),
        }
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory
/// and a rename, so a full disk or a crash never leaves a truncated file.
/// A path that names something other than a regular file (`/dev/null`, a
/// FIFO, `/dev/stdout`) is written in place: renaming over it would replace
/// the device. A symbolic link is followed, not replaced.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    if let Ok(md) = std::fs::metadata(path) {
        if !md.file_type().is_file() {
            let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
            return f.write_all(bytes).and_then(|_| f.flush());
        }
    }
    let resolved;
    let path = match std::fs::canonicalize(path) {
        Ok(p) if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) => {
            resolved = p;
            resolved.as_path()
        }
        _ => path,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let file_name = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{file_name}.tmp{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::write_atomically;

    #[test]
    fn special_files_are_written_in_place_not_replaced() {
        // A FIFO stands for /dev/null and its kind: renaming over it would
        // replace it with a regular file.
        use std::os::unix::fs::FileTypeExt;
        let d = std::env::temp_dir().join(format!("syscluster-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
        // A reader opened first (non-blocking), so that the write does not wait.
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let mut reader = std::fs::OpenOptions::new().read(true).custom_flags(0o4000).open(&fifo).unwrap();
        write_atomically(&fifo, b"profile").unwrap();
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
        let mut got = Vec::new();
        let _ = reader.read_to_end(&mut got);
        assert_eq!(got, b"profile");
        std::fs::remove_dir_all(&d).unwrap();
    }

    extern "C" {
        #[link_name = "mkfifo"]
        fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
    }

    #[test]
    fn symlinks_are_followed() {
        let d = std::env::temp_dir().join(format!("syscluster-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let target = d.join("target.json");
        std::fs::write(&target, b"old").unwrap();
        let link = d.join("link.json");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomically(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
