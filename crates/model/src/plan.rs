//! The plan: which clusters to apply at which code locations, by which
//! mechanism, and on what evidence. Written by `advise --plan-out`, read by
//! `syscluster run --plan` and the compiler plugin; docs/PLAN_FORMAT.md
//! describes every field. A consumer checks a plan against the files it
//! will apply it to with [`Plan::check_modules`] (same build-id, or for a
//! module without one the same code at every location, [`code_hash`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The version this build writes.
pub const PLAN_VERSION: u32 = crate::formats::PLAN_VERSION;
/// The oldest version it reads (plan_version 1: no `function_hash`).
pub const PLAN_OLDEST: u32 = crate::formats::PLAN_OLDEST;

/// The largest plan file read (a plan of 10,000 clusters is ~10 MB).
pub const PLAN_LIMIT: u64 = 256 << 20;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub plan_version: u32,
    pub tool: String,
    /// Seconds since the Unix epoch.
    pub created_at: f64,
    pub profile: PlanProfile,
    /// Every module a location names, with its build-id.
    pub modules: Vec<Module>,
    /// Best saving first.
    pub clusters: Vec<Cluster>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlanProfile {
    pub command: Vec<String>,
    pub backend: String,
    pub node_key: String,
    pub total_calls: u64,
    pub duration_ns: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Module {
    pub path: String,
    /// GNU build-id, lowercase hex; absent when the file has none or could
    /// not be read now (see `status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_id: Option<String>,
    /// `ok`, `no_build_id`, or why the file could not be read.
    pub status: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// The recommendation's rank in the advice.
    pub id: u32,
    /// The rule of the catalogue (docs/ADVICE.md).
    pub rule: String,
    /// `writev-coalescing`, `pread`, `copy_file_range`, `looped-multi-call`, …
    pub mechanism: String,
    /// `run` (one call repeated), `sequence` or `loop`.
    pub shape: String,
    /// The calls, in order, with their key arguments.
    pub calls: Vec<PlanCall>,
    /// The code that issues the calls.
    pub locations: Vec<PlanLocation>,
    /// Settings of the mechanism (buffer size, block size, batch, …).
    pub parameters: BTreeMap<String, String>,
    pub estimated_saving_ns: f64,
    pub share_of_run: f64,
    /// Whether this machine can apply it (the kmod backend may be missing).
    pub applicable_here: bool,
    pub evidence: Vec<Evidence>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlanCall {
    pub syscall: String,
    pub nr: u32,
    /// The descriptor number the node is keyed by (profiles keyed by fd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd: Option<i64>,
    /// What the node's descriptor is (profiles keyed by descriptor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub descriptor: Option<String>,
    /// Scalar arguments with a dominant value (value profile), by name.
    pub args: BTreeMap<String, i64>,
    /// Arguments that take the result of an earlier call of the cluster:
    /// argument name → index of that call in `calls`.
    pub results: BTreeMap<String, usize>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlanLocation {
    pub syscall: String,
    pub module: String,
    /// File offset of the return address in `module`.
    pub offset: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The file offset in `module` of the return address of the call into
    /// libc, when it is not `offset` (the profile's location `site`: the
    /// location is the user's code, the call is made by the language's
    /// runtime). What `syscluster run --plan` matches; see [`Self::site_offset`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<u64>,
    pub count: u64,
    /// For a module without a build-id: [`code_hash`] of the code around
    /// the site (the return address of the call into libc) when the plan
    /// was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_hash: Option<String>,
    /// [`source_hash`] of `file:line` when the plan was written: what tells
    /// the compiler plugin that the source line is still the one the plan
    /// was made from (a rebuild changes the build-id, not the source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_hash: Option<String>,
    /// [`function_hash`] of the function holding `file:line` when the plan
    /// was written (plan_version 2): what tells the compiler plugin that
    /// nothing else in the function changed either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_hash: Option<String>,
    /// [`macro_hash`] of the file's macros that function uses, defined
    /// outside it (`#define BUFSIZE 4096`): a change there changes no line of
    /// the function. Added to plan_version 2 later: absent in plans written
    /// before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub macro_hash: Option<String>,
}

/// One fact of the profile a recommendation rests on.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Evidence {
    /// `to` immediately followed `from` `weight` times.
    Edge { from: String, to: String, weight: u64 },
    /// Argument `arg` of `to` was the result of `from` in `share` of the edge.
    ResultMatch { from: String, to: String, arg: String, count: u64, share: f64 },
    /// A value profile: `value` in `share` of the `observations`.
    Value { syscall: String, arg: String, value: i64, share: f64, observations: u64 },
    /// Calls of a node.
    Calls { node: String, count: u64 },
    /// A loop of the graph.
    Loop { nodes: Vec<String>, weight: u64 },
    /// A file's I/O pattern.
    IoPattern { path: String, file_kind: String, class: String, opens: u64, reads: u64, writes: u64, bytes: u64 },
    /// Code locations of the calls.
    Placement { class: String, detail: String },
}

impl PlanLocation {
    /// Where the runtime applies the cluster: the return address of the
    /// call into libc (`site`, else `offset`).
    pub fn site_offset(&self) -> u64 {
        self.site.unwrap_or(self.offset)
    }

    /// `file:line` (the file's last component), else `function`, else
    /// `module+0xOFFSET`.
    pub fn short(&self) -> String {
        match (&self.file, self.line, self.function.as_deref().map(crate::symbol::demangle)) {
            (Some(f), Some(l), _) => {
                let base = f.rsplit('/').next().unwrap_or(f);
                format!("{base}:{l}")
            }
            (_, _, Some(func)) => format!("{func} ({})", self.at()),
            _ => self.at(),
        }
    }

    /// `module+0xOFFSET`, the module by its last component.
    pub fn at(&self) -> String {
        let base = self.module.rsplit('/').next().unwrap_or(&self.module);
        format!("{base}+{:#x}", self.offset)
    }
}

/// Bytes of code a [`code_hash`] covers on each side of a return address:
/// the call instruction before it and what follows.
pub const CODE_WINDOW: u64 = 16;

/// FNV-1a (64 bits, as 16 hex digits) of the bytes of `path` from
/// `offset - CODE_WINDOW` to `offset + CODE_WINDOW` (cut at the ends of the
/// file): what tells that the code at a location of a module without a
/// build-id is still the code the plan was made for.
pub fn code_hash(path: &Path, offset: u64) -> Result<String, String> {
    use std::os::unix::fs::FileExt;
    let f = crate::elf::open_regular("", path, crate::elf::MODULE_LIMIT)?;
    let len = f.metadata().map_err(|e| format!("cannot read {}: {e}", path.display()))?.len();
    let from = offset.saturating_sub(CODE_WINDOW).min(len);
    let to = offset.saturating_add(CODE_WINDOW).min(len);
    let mut buf = vec![0u8; (to - from) as usize];
    f.read_exact_at(&mut buf, from).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(fnv1a(&buf))
}

/// FNV-1a (64 bits) of `bytes`, as 16 lowercase hex digits.
pub fn fnv1a(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// FNV-1a (64 bits, as 16 hex digits) of line `line` (from 1) of `path`
/// without its leading and trailing blanks (spaces, tabs, CR, FF, VT); the
/// compiler plugin computes the same over the file it compiles
/// (llvm/lib/Plan.cpp, `sourceLineHash`).
pub fn source_hash(path: &Path, line: u32) -> Result<String, String> {
    let text = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let at = (line as usize).checked_sub(1).ok_or_else(|| format!("{}: line 0", path.display()))?;
    let l = text.split(|b| *b == b'\n').nth(at).ok_or_else(|| format!("{} has no line {line}", path.display()))?;
    Ok(fnv1a(trim_blanks(l)))
}

/// The function holding line `line` (from 1) of a C source: its first and
/// last lines. It is the brace block at the top level (depth 0 to 0) whose
/// lines hold `line`, from the line of the first token of its header (what
/// follows the previous top-level `;`, `}` or preprocessor line: the return
/// type, name and parameters) to the line of its closing `}`. Braces inside
/// comments, string and character literals and preprocessor lines do not
/// count. The compiler plugin scans the same way (llvm/lib/Plan.cpp,
/// `functionSpan`); docs/PLAN_FORMAT.md, `function_hash`.
pub fn function_span(text: &[u8], line: u32) -> Option<(u32, u32)> {
    #[derive(PartialEq)]
    enum St {
        Code,
        LineComment,
        BlockComment,
        Quote(u8),
        Directive,
    }
    let mut st = St::Code;
    let (mut depth, mut n) = (0u32, 1u32);
    let mut header: Option<u32> = None;
    let mut start = 0u32;
    let mut bol = true; // only blanks since the line began
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        let next = text.get(i + 1).copied();
        let was_bol = bol;
        if c == b'\\' && next == Some(b'\n') && st != St::Code {
            // A continued line: a comment, literal or directive goes on.
            n += 1;
            i += 2;
            continue;
        }
        match st {
            St::LineComment | St::Directive if c == b'\n' => st = St::Code,
            St::LineComment | St::Directive => {}
            St::BlockComment if c == b'*' && next == Some(b'/') => {
                st = St::Code;
                i += 1;
            }
            St::BlockComment => {}
            St::Quote(_) if c == b'\\' => i += 1,
            St::Quote(q) if c == q || c == b'\n' => st = St::Code,
            St::Quote(_) => {}
            St::Code => match c {
                b'/' if next == Some(b'/') => st = St::LineComment,
                b'/' if next == Some(b'*') => {
                    st = St::BlockComment;
                    i += 1;
                }
                b'#' if was_bol => {
                    st = St::Directive;
                    if depth == 0 {
                        header = None;
                    }
                }
                b' ' | b'\t' | b'\r' | b'\n' | b'\x0b' | b'\x0c' => {}
                _ => {
                    if depth == 0 && header.is_none() {
                        header = Some(n);
                    }
                    match c {
                        b'"' | b'\'' => st = St::Quote(c),
                        b'{' => {
                            if depth == 0 {
                                start = header.unwrap_or(n);
                            }
                            depth += 1;
                        }
                        b'}' if depth > 0 => {
                            depth -= 1;
                            if depth == 0 {
                                if (start..=n).contains(&line) {
                                    return Some((start, n));
                                }
                                header = None;
                            }
                        }
                        b';' if depth == 0 => header = None,
                        _ => {}
                    }
                }
            },
        }
        if text.get(i) == Some(&b'\n') {
            n += 1;
            bol = true;
        } else if !matches!(c, b' ' | b'\t') {
            bol = false;
        }
        i += 1;
        if n > line && depth == 0 && header.is_none_or(|h| h > line) {
            return None;
        }
    }
    None
}

/// FNV-1a (64 bits, as 16 hex digits) of the function holding line `line`
/// of `path` ([`function_span`]): its lines, each without its leading and
/// trailing blanks (as [`source_hash`]), joined by newlines. The compiler
/// plugin computes the same (llvm/lib/Plan.cpp, `functionHash`).
pub fn function_hash(path: &Path, line: u32) -> Result<String, String> {
    let text = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let (from, to) =
        function_span(&text, line).ok_or_else(|| format!("{}:{line} is in no function body", path.display()))?;
    let lines: Vec<&[u8]> =
        text.split(|b| *b == b'\n').skip(from as usize - 1).take((to - from + 1) as usize).map(trim_blanks).collect();
    Ok(fnv1a(&lines.join(&b'\n')))
}

/// The words of `text` that may name a macro: maximal runs of letters,
/// digits and `_` that do not begin with a digit.
fn macro_names<'a>(text: &'a [u8], out: &mut std::collections::HashSet<&'a [u8]>) {
    for w in text.split(|b| !(b.is_ascii_alphanumeric() || *b == b'_')) {
        if w.first().is_some_and(|b| !b.is_ascii_digit()) {
            out.insert(w);
        }
    }
}

/// The name a `#define` line defines (blanks allowed around the `#`, at
/// least one after `define`).
fn defined_name(line: &[u8]) -> Option<&[u8]> {
    let blank = |b: &u8| matches!(*b, b' ' | b'\t' | b'\r' | b'\x0c' | b'\x0b');
    let skip = |l: &[u8]| -> usize { l.iter().position(|b| !blank(b)).unwrap_or(l.len()) };
    let r = &line[skip(line)..];
    let r = r.strip_prefix(b"#")?;
    let r = r[skip(r)..].strip_prefix(b"define")?;
    if !r.first().is_some_and(blank) {
        return None;
    }
    let r = &r[skip(r)..];
    if !r.first().is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_') {
        return None;
    }
    let end = r.iter().position(|b| !(b.is_ascii_alphanumeric() || *b == b'_')).unwrap_or(r.len());
    Some(&r[..end])
}

/// FNV-1a (as [`function_hash`]) of the definitions, in file order, of the
/// macros defined in `text` that the function holding line `line` names,
/// directly or through another of those definitions: each `#define` with
/// its continued lines, every line without its leading and trailing blanks,
/// joined by newlines. Words in comments and literals count too (a stricter
/// check, never a looser one). None when the line is in no function body.
/// The compiler plugin computes the same (llvm/lib/Plan.cpp,
/// `macroHashOfText`); docs/PLAN_FORMAT.md, `macro_hash`.
pub fn macro_hash_of_text(text: &[u8], line: u32) -> Option<String> {
    let (from, to) = function_span(text, line)?;
    let lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
    let mut words = std::collections::HashSet::new();
    for l in lines.iter().skip(from as usize - 1).take((to - from + 1) as usize) {
        macro_names(l, &mut words);
    }
    let mut defs: Vec<(&[u8], Vec<u8>)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some(name) = defined_name(lines[i]) {
            let mut body = trim_blanks(lines[i]).to_vec();
            while body.ends_with(b"\\") && i + 1 < lines.len() {
                i += 1;
                body.push(b'\n');
                body.extend_from_slice(trim_blanks(lines[i]));
            }
            defs.push((name, body));
        }
        i += 1;
    }
    let mut used = vec![false; defs.len()];
    let mut grew = true;
    while grew {
        grew = false;
        for (k, (name, body)) in defs.iter().enumerate() {
            if !used[k] && words.contains(name) {
                used[k] = true;
                grew = true;
                macro_names(body, &mut words);
            }
        }
    }
    let chosen: Vec<&[u8]> = defs.iter().zip(&used).filter(|(_, u)| **u).map(|((_, b), _)| b.as_slice()).collect();
    Some(fnv1a(&chosen.join(&b'\n')))
}

/// [`macro_hash_of_text`] of the file `path`.
pub fn macro_hash(path: &Path, line: u32) -> Result<String, String> {
    let text = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    macro_hash_of_text(&text, line).ok_or_else(|| format!("{}:{line} is in no function body", path.display()))
}

/// `l` without its leading and trailing blanks (spaces, tabs, CR, FF, VT).
fn trim_blanks(l: &[u8]) -> &[u8] {
    let blank = |b: &u8| matches!(*b, b' ' | b'\t' | b'\r' | b'\x0c' | b'\x0b');
    let start = l.iter().position(|b| !blank(b)).unwrap_or(l.len());
    let end = l.iter().rposition(|b| !blank(b)).map_or(start, |e| e + 1);
    &l[start..end.max(start)]
}

impl Plan {
    /// Locations with a source line get its hash and their function's,
    /// when the file is readable.
    pub fn with_source_hashes(mut self) -> Plan {
        for l in self.clusters.iter_mut().flat_map(|c| c.locations.iter_mut()) {
            if let (Some(f), Some(line)) = (&l.file, l.line) {
                l.source_hash = source_hash(Path::new(f), line).ok();
                l.function_hash = function_hash(Path::new(f), line).ok();
                l.macro_hash = macro_hash(Path::new(f), line).ok();
            }
        }
        self
    }

    /// Locations in modules without a build-id get the hash of their code.
    pub fn with_code_hashes(mut self) -> Plan {
        let bare: Vec<String> = self.modules.iter().filter(|m| m.build_id.is_none()).map(|m| m.path.clone()).collect();
        for l in self.clusters.iter_mut().flat_map(|c| c.locations.iter_mut()) {
            if bare.contains(&l.module) {
                l.code_hash = code_hash(Path::new(&l.module), l.site_offset()).ok();
            }
        }
        self
    }

    /// The module of the plan that `program` is: the same file (after
    /// resolving links), or a file with the same build-id.
    pub fn module_of(&self, program: &Path) -> Option<&Module> {
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let want = canon(program);
        if let Some(m) = self.modules.iter().find(|m| canon(Path::new(&m.path)) == want) {
            return Some(m);
        }
        let id = crate::elf::build_id(&want).ok().flatten()?;
        self.modules.iter().find(|m| m.build_id.as_deref() == Some(id.as_str()))
    }

    /// Refuses a stale plan: one naming a module whose build-id is not the
    /// one recorded, that cannot be read, or (without a build-id) whose code
    /// at a location differs. `name` is the plan's file, for the message.
    pub fn check_modules(&self, name: &str) -> Result<(), String> {
        const AGAIN: &str = "record the program again and re-run `syscluster advise --plan-out`";
        for m in &self.modules {
            let path = Path::new(&m.path);
            let now = crate::elf::build_id(path).map_err(|e| format!("stale plan {name}: {e}; {AGAIN}"))?;
            match (&m.build_id, now) {
                (Some(was), Some(now)) if *was == now => {}
                (Some(was), Some(now)) => {
                    return Err(format!(
                        "stale plan {name}: {} has build-id {now} now, the plan was made for build-id {was} \
                         (the file was rebuilt or replaced); {AGAIN}",
                        m.path
                    ))
                }
                (Some(was), None) => {
                    return Err(format!(
                        "stale plan {name}: {} has no build-id now, the plan was made for build-id {was}; {AGAIN}",
                        m.path
                    ))
                }
                (None, _) => {
                    for l in self.clusters.iter().flat_map(|c| &c.locations).filter(|l| l.module == m.path) {
                        let Some(was) = &l.code_hash else {
                            return Err(format!(
                                "plan {name} gives neither a build-id nor code hashes for {}: it cannot be \
                                 checked against the file; re-run `syscluster advise --plan-out`",
                                m.path
                            ));
                        };
                        let now =
                            code_hash(path, l.site_offset()).map_err(|e| format!("stale plan {name}: {e}; {AGAIN}"))?;
                        if now != *was {
                            return Err(format!(
                                "stale plan {name}: the code of {} at offset {:#x} ({}) is not the code \
                                 the plan was made for; {AGAIN}",
                                m.path,
                                l.site_offset(),
                                l.short()
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    pub fn to_json(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).expect("a plan always serializes");
        v.push(b'\n');
        v
    }

    /// Reads and checks a plan file.
    pub fn load(path: &Path) -> Result<Plan, String> {
        let name = path.display();
        let bytes = crate::elf::read_regular("plan ", path, PLAN_LIMIT)?;
        let v: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| format!("plan {name} is not JSON: {e}"))?;
        match v.get("plan_version").and_then(|x| x.as_u64()) {
            None => return Err(format!("{name} is not a syscluster plan: no plan_version")),
            Some(n) if !(PLAN_OLDEST as u64..=PLAN_VERSION as u64).contains(&n) => {
                return Err(format!(
                    "plan {name} has plan_version {n}; this syscluster reads {PLAN_OLDEST} to {PLAN_VERSION}"
                ))
            }
            Some(_) => {}
        }
        let plan: Plan = serde_json::from_value(v).map_err(|e| format!("corrupt plan {name}: {e}"))?;
        for c in &plan.clusters {
            if c.calls.is_empty() {
                return Err(format!("corrupt plan {name}: cluster {} has no calls", c.id));
            }
            for call in &c.calls {
                if let Some((arg, &k)) = call.results.iter().find(|(_, &k)| k >= c.calls.len()) {
                    return Err(format!(
                        "corrupt plan {name}: cluster {}: {}.{arg} refers to call {k}, which does not exist",
                        c.id, call.syscall
                    ));
                }
            }
        }
        Ok(plan)
    }
}

impl Module {
    /// The module at `path`, with its build-id as the file says now.
    pub fn of(path: &str) -> Module {
        match crate::elf::build_id(Path::new(path)) {
            Ok(Some(id)) => Module { path: path.into(), build_id: Some(id), status: "ok".into() },
            Ok(None) => Module { path: path.into(), build_id: None, status: "no_build_id".into() },
            Err(e) => Module { path: path.into(), build_id: None, status: e },
        }
    }
}

#[cfg(test)]
mod function_span_tests {
    use super::*;
    use proptest::prelude::*;

    const SRC: &str = "#include <unistd.h>\n\
        /* a comment { */\n\
        static int\n\
        helper(int fd)\n\
        {\n\
            const char *s = \"}{\"; char c = '}';\n\
            // a } in a comment\n\
            if (fd) { return write(fd, s, 1); }\n\
            return c;\n\
        }\n\
        struct s { int a; };\n\
        int main(void) { return helper(1); }\n";

    #[test]
    fn the_span_is_the_function_with_its_header() {
        let t = SRC.as_bytes();
        // From `static int` (the header's first token) to the closing brace.
        for line in 3..=10 {
            assert_eq!(function_span(t, line), Some((3, 10)), "line {line}");
        }
        assert_eq!(function_span(t, 12), Some((12, 12)));
        assert_eq!(function_span(t, 1), None, "a preprocessor line");
        assert_eq!(function_span(t, 2), None, "a comment between functions");
        assert_eq!(function_span(t, 40), None);
    }

    #[test]
    fn the_hash_changes_with_the_function_only() {
        let dir = std::env::temp_dir().join(format!("sc-function-hash-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let hash = |text: &str| {
            let p = dir.join("f.c");
            std::fs::write(&p, text).unwrap();
            function_hash(&p, 8).unwrap()
        };
        let h = hash(SRC);
        assert_eq!(h, hash(&SRC.replace("    return c;", "\treturn c;   ")), "blanks at the ends of lines");
        assert_eq!(h, hash(&SRC.replace("int main(void) { return helper(1); }", "int main(void) { return 0; }")));
        assert_eq!(h, hash(&SRC.replace("a comment {", "another comment")));
        assert_ne!(h, hash(&SRC.replace("return c;", "return c + 1;")), "a line of the body");
        assert_ne!(h, hash(&SRC.replace("helper(int fd)", "helper(long fd)")), "the header");
        assert_ne!(h, hash(&SRC.replace("static int", "int")), "the return type");
        let p = dir.join("f.c");
        assert!(function_hash(&p, 1).unwrap_err().contains("in no function body"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// macro_hash covers the file's macros the function uses, through other
    /// macros too, and nothing else.
    #[test]
    fn macro_hash_follows_the_function_s_macros() {
        let text = |size: &str, unused: &str| {
            format!(
                "#define KB 1024\n#  define BUFSIZE ({size} * KB) \\\n   + 0\n#define UNUSED {unused}\n\
                 int main(void)\n{{\n    char buf[BUFSIZE];\n    return 0;\n}}\nint f(void) {{ return UNUSED; }}\n"
            )
        };
        let base = text("4", "1");
        let h = macro_hash_of_text(base.as_bytes(), 7).unwrap();
        assert_eq!(h, fnv1a(b"#define KB 1024\n#  define BUFSIZE (4 * KB) \\\n+ 0"), "BUFSIZE and, through it, KB");
        assert_ne!(macro_hash_of_text(text("8", "1").as_bytes(), 7).unwrap(), h, "BUFSIZE changed");
        assert_eq!(macro_hash_of_text(text("4", "2").as_bytes(), 7).unwrap(), h, "a macro main does not use");
        assert_eq!(macro_hash_of_text(base.as_bytes(), 1), None, "no function");
        assert_eq!(macro_hash_of_text(b"int f(void)\n{\n  return 9KB;\n}\n#define KB 1\n", 2), Some(fnv1a(b"")));
    }

    #[test]
    fn continued_lines_and_escapes() {
        let t = b"#define X { \\\n }\nint f(void)\n{\n  char *s = \"\\\"{\"; /* { \n } */ return '\\'';\n}\n";
        assert_eq!(function_span(t, 5), Some((3, 7)));
        assert_eq!(function_span(t, 2), None, "a continued directive");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Any bytes: no panic, and a span holds the line asked for.
        #[test]
        fn never_panics(text in proptest::collection::vec(
            prop_oneof![Just(b'{'), Just(b'}'), Just(b'"'), Just(b'\''), Just(b'/'), Just(b'*'),
                        Just(b'\\'), Just(b'\n'), Just(b'#'), Just(b';'), Just(b' '), Just(b'a'), any::<u8>()],
            0..300), line in 0u32..40) {
            if let Some((a, b)) = function_span(&text, line) {
                prop_assert!(a <= line && line <= b);
            }
        }

        /// Braces inside comments and literals, inserted in a function's
        /// body, leave its span as it is.
        #[test]
        fn braces_in_literals_do_not_count(noise in "[{}();a-z ]{0,20}", kind in 0usize..4) {
            let wrapped = match kind {
                0 => format!("/*{}*/", noise.replace("*/", "")),
                1 => format!("// {noise}\n"),
                2 => format!("\"{noise}\";"),
                _ => "'{';".to_string(),
            };
            let text = format!("int g;\nint f(void)\n{{\n  {wrapped}\n  return 0;\n}}\nint h;\n");
            let end = text.lines().position(|l| l == "}").unwrap() as u32 + 1;
            prop_assert_eq!(function_span(text.as_bytes(), 3), Some((2, end)));
        }
    }
}
