//! The compiler plugin's remarks, read back: `syscluster cc --remarks DIR`
//! keeps LLVM's optimization records (YAML, one `*.opt.yaml` file per
//! translation unit), and `advise --remarks DIR` says for each
//! recommendation whether the compiler applied it, and if not, why
//! (docs/COMPILER.md, "Remarks").
//!
//! Only what the plugin writes is read: documents `--- !Passed`,
//! `--- !Missed` or `--- !Analysis` with top-level `Pass`, `Name`,
//! `DebugLoc: { File: …, Line: …, Column: … }`, `Function` and `Args` (a
//! list of one-key maps whose values, joined, are the message). Remarks of
//! other passes are skipped; a file that is not such YAML is refused with
//! its name and line.

use crate::advice::{CompilerVerdict, Recommendation};
use std::path::{Path, PathBuf};

/// The pass name the plugin's remarks carry.
pub const PASS: &str = "syscluster";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A region replaced.
    Passed,
    /// A region refused: the reason.
    Missed,
    /// What the pass found on the way (a call matched, a region checked).
    Analysis,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remark {
    pub kind: Kind,
    pub name: String,
    /// The source file as compiled (`tests/corpus/copy.c`) and the line.
    pub file: String,
    pub line: u32,
    pub function: String,
    pub message: String,
    /// `plan cluster #N (RULE)` at the start of the message.
    pub cluster: Option<(u32, String)>,
}

/// Parses one file's remarks (those of every pass). Errors name the line.
pub fn parse(text: &str) -> Result<Vec<Remark>, String> {
    let mut out = Vec::new();
    let mut cur: Option<(Remark, String)> = None;
    let mut in_args = false;
    // LLVM's YAML writer folds a long flow mapping over several lines
    // (`DebugLoc: { File: '/a/long/path.c', ` then `  Line: 15, … }`):
    // the lines of a `{` not yet closed are joined before they are parsed.
    let mut folded: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        if line.is_empty() {
            continue;
        }
        let joined;
        let (n, line) = match folded.take() {
            Some((first, mut acc)) => {
                acc.push(' ');
                acc.push_str(line.trim_start());
                if !flow_closed(&acc) {
                    folded = Some((first, acc));
                    continue;
                }
                joined = acc;
                (first, joined.as_str())
            }
            None if line.contains('{') && !flow_closed(line) && !line.starts_with("--- !") => {
                folded = Some((i + 1, line.to_string()));
                continue;
            }
            None => (i + 1, line),
        };
        if let Some(tag) = line.strip_prefix("--- !") {
            if let Some(done) = cur.take() {
                out.push(done);
            }
            let kind = match tag.trim() {
                "Passed" => Kind::Passed,
                "Missed" => Kind::Missed,
                "Analysis" | "AnalysisFPCommute" | "AnalysisAliasing" | "Failure" => Kind::Analysis,
                t => return Err(format!("line {n}: unknown remark kind !{t}")),
            };
            let empty = Remark {
                kind,
                name: String::new(),
                file: String::new(),
                line: 0,
                function: String::new(),
                message: String::new(),
                cluster: None,
            };
            cur = Some((empty, String::new()));
            in_args = false;
            continue;
        }
        if line == "..." {
            if let Some(done) = cur.take() {
                out.push(done);
            }
            in_args = false;
            continue;
        }
        let Some((r, pass)) = cur.as_mut() else {
            return Err(format!("line {n}: text outside a remark (expected `--- !Passed`, `!Missed` or `!Analysis`)"));
        };
        if !line.starts_with(' ') {
            let (key, value) =
                line.split_once(':').ok_or_else(|| format!("line {n}: expected `Key: value`, found {line:?}"))?;
            let value = value.trim();
            in_args = false;
            match key {
                "Pass" => *pass = scalar(value).map_err(|e| format!("line {n}: {e}"))?,
                "Name" => r.name = scalar(value).map_err(|e| format!("line {n}: {e}"))?,
                "Function" => r.function = scalar(value).map_err(|e| format!("line {n}: {e}"))?,
                "DebugLoc" => {
                    let (file, l) = debug_loc(value).map_err(|e| format!("line {n}: {e}"))?;
                    r.file = file;
                    r.line = l;
                }
                "Args" if value.is_empty() => in_args = true,
                _ => {} // Hotness, and keys of newer LLVMs
            }
            continue;
        }
        if in_args {
            // `  - String: 'text'`, `  - Callee: read`, `    DebugLoc: { … }`.
            let item = line.trim_start();
            let item = item.strip_prefix("- ").unwrap_or(item);
            let (key, value) = item
                .split_once(':')
                .ok_or_else(|| format!("line {n}: expected `Key: value` in Args, found {line:?}"))?;
            if key.trim() != "DebugLoc" {
                r.message.push_str(&scalar(value.trim()).map_err(|e| format!("line {n}: {e}"))?);
            }
        }
    }
    if let Some((first, _)) = folded {
        return Err(format!("line {first}: a `{{` that no later line closes"));
    }
    if let Some(done) = cur.take() {
        out.push(done);
    }
    Ok(out
        .into_iter()
        .map(|(mut r, pass)| {
            r.cluster = cluster_of(&r.message);
            (r, pass)
        })
        .filter_map(|(r, pass)| (pass == PASS).then_some(r))
        .collect())
}

/// Whether every `{` of a line (outside quoted strings) is closed.
fn flow_closed(line: &str) -> bool {
    let (mut depth, mut quote) = (0i32, None);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('\''), '\'') if chars.peek() == Some(&'\'') => {
                chars.next();
            }
            (Some('"'), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '{') => depth += 1,
            (None, '}') => depth -= 1,
            _ => {}
        }
    }
    depth <= 0
}

/// A YAML scalar as LLVM writes it: plain, 'single' ('' inside) or
/// "double" (with backslash escapes).
fn scalar(v: &str) -> Result<String, String> {
    if let Some(body) = v.strip_prefix('\'') {
        let body = body.strip_suffix('\'').ok_or("a single-quoted string without its closing quote")?;
        return Ok(body.replace("''", "'"));
    }
    if let Some(body) = v.strip_prefix('"') {
        let body = body.strip_suffix('"').ok_or("a double-quoted string without its closing quote")?;
        let mut s = String::new();
        let mut it = body.chars();
        while let Some(c) = it.next() {
            if c != '\\' {
                s.push(c);
                continue;
            }
            match it.next() {
                Some('n') => s.push('\n'),
                Some('t') => s.push('\t'),
                Some(c @ ('"' | '\\' | '/')) => s.push(c),
                Some(c) => {
                    s.push('\\');
                    s.push(c);
                }
                None => return Err("a double-quoted string ending in a backslash".into()),
            }
        }
        return Ok(s);
    }
    Ok(v.to_string())
}

/// `{ File: 'x.c', Line: 24, Column: 17 }` → ("x.c", 24).
fn debug_loc(v: &str) -> Result<(String, u32), String> {
    let inner = v
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .ok_or_else(|| format!("DebugLoc is not `{{ File: …, Line: … }}`: {v:?}"))?;
    let (mut file, mut line) = (None, None);
    // The file name may hold commas only when quoted: split on the keys.
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let (key, after) = rest.split_once(':').ok_or_else(|| format!("DebugLoc: expected `Key: value` in {v:?}"))?;
        let after = after.trim_start();
        let (value, next) = if after.starts_with('\'') || after.starts_with('"') {
            let q = after.chars().next().unwrap();
            let mut end = None;
            let b = after.as_bytes();
            let mut i = 1;
            while i < b.len() {
                if b[i] == q as u8 {
                    if q == '\'' && b.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    if q == '"' && b[i - 1] == b'\\' {
                        i += 1;
                        continue;
                    }
                    end = Some(i);
                    break;
                }
                i += 1;
            }
            let end = end.ok_or_else(|| format!("DebugLoc: unterminated string in {v:?}"))?;
            (&after[..=end], after[end + 1..].trim_start())
        } else {
            match after.split_once(',') {
                Some((a, b)) => (a.trim(), b),
                None => (after.trim(), ""),
            }
        };
        let next = next.trim_start();
        let next = next.strip_prefix(',').unwrap_or(next).trim_start();
        match key.trim() {
            "File" => file = Some(scalar(value)?),
            "Line" => {
                line = Some(value.parse::<u32>().map_err(|_| format!("DebugLoc: Line is not a number: {value:?}"))?)
            }
            _ => {}
        }
        rest = next;
    }
    match (file, line) {
        (Some(f), Some(l)) => Ok((f, l)),
        _ => Err(format!("DebugLoc without File and Line: {v:?}")),
    }
}

/// `plan cluster #3 (copy-offload): …` → (3, "copy-offload").
fn cluster_of(message: &str) -> Option<(u32, String)> {
    let rest = message.strip_prefix("plan cluster #")?;
    let (id, rest) = rest.split_once(' ')?;
    let rule = rest.strip_prefix('(')?.split_once(')')?.0;
    Some((id.parse().ok()?, rule.to_string()))
}

/// Every `*.opt.yaml` under `dir` (as `syscluster cc --remarks` writes
/// them), the plugin's remarks of all of them. An error when `dir` holds
/// none, or one is not remarks YAML.
pub fn load_dir(dir: &Path) -> Result<Vec<Remark>, String> {
    let mut files = Vec::new();
    collect(dir, &mut files).map_err(|e| format!("cannot read remarks directory {}: {e}", dir.display()))?;
    if files.is_empty() {
        return Err(format!(
            "no remark files (*.opt.yaml) in {}: give it to `syscluster cc --remarks DIR` first",
            dir.display()
        ));
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read(&f).map_err(|e| format!("cannot read remarks {}: {e}", f.display()))?;
        let text = String::from_utf8(text).map_err(|_| format!("remarks {}: not UTF-8 text", f.display()))?;
        out.extend(parse(&text).map_err(|e| format!("remarks {}: {e}", f.display()))?);
    }
    Ok(out)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let p = e.path();
        if e.file_type()?.is_dir() {
            collect(&p, out)?;
        } else if p.to_string_lossy().ends_with(".opt.yaml") {
            out.push(p);
        }
    }
    Ok(())
}

/// Whether two source paths name the same file: equal, or one ends with
/// the other at a `/` (a plan recorded in one checkout, compiled in
/// another, or relative against absolute).
fn same_file(a: &str, b: &str) -> bool {
    let (long, short) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    long == short || (long.ends_with(short) && long.as_bytes()[long.len() - short.len() - 1] == b'/')
}

/// What the compiler did with a recommendation, from the remarks at its
/// code locations for its rule: applied where a region of it was replaced
/// (`!Passed`); else the last refusal (`!Missed`); None when no remark
/// names one of its locations.
pub fn verdict(rec: &Recommendation, remarks: &[Remark]) -> Option<CompilerVerdict> {
    let at = |r: &Remark| {
        r.cluster.as_ref().is_none_or(|(_, rule)| *rule == rec.rule)
            && rec.locations.iter().any(|site| {
                site.location.line == Some(r.line)
                    && site.location.file.as_deref().is_some_and(|f| same_file(f, &r.file))
            })
    };
    let mine: Vec<&Remark> = remarks.iter().filter(|r| at(r)).collect();
    let pick = mine
        .iter()
        .rev()
        .find(|r| r.kind == Kind::Passed)
        .or_else(|| mine.iter().rev().find(|r| r.kind == Kind::Missed))
        .or_else(|| mine.last())?;
    let short = pick.file.rsplit('/').next().unwrap_or(&pick.file);
    Some(CompilerVerdict {
        applied: pick.kind == Kind::Passed,
        decided: pick.kind != Kind::Analysis,
        at: format!("{short}:{}", pick.line),
        remark: pick.name.clone(),
        message: pick.message.clone(),
    })
}

/// Adds the verdicts to every recommendation.
pub fn annotate(recs: &mut [Recommendation], remarks: &[Remark]) {
    for r in recs {
        r.compiler = Some(verdict(r, remarks).unwrap_or_default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COPY: &str = r#"--- !Analysis
Pass:            syscluster
Name:            Matched
DebugLoc:        { File: 'tests/corpus/copy.c', Line: 24, Column: 17 }
Function:        main
Args:
  - String:          'plan cluster #1 (copy-offload): read at copy.c:24 matched (5861 calls recorded there)'
...
--- !Missed
Pass:            syscluster
Name:            Region
DebugLoc:        { File: 'tests/corpus/copy.c', Line: 25, Column: 9 }
Function:        main
Args:
  - String:          "plan cluster #1 (copy-offload): write at copy.c:25 -> read at copy.c:24 is not a clusterable region: dominance: it's \"first\""
...
--- !Passed
Pass:            syscluster
Name:            Clustered
DebugLoc:        { File: 'tests/corpus/copy.c', Line: 25, Column: 9 }
Function:        main
Args:
  - String:          'plan cluster #1 (copy-offload): the copy loop '
  - Callee:          write
    DebugLoc:        { File: 'tests/corpus/copy.c', Line: 25, Column: 9 }
  - String:          ' runs as one looped multi-call, it''s done'
...
--- !Missed
Pass:            inline
Name:            NoDefinition
DebugLoc:        { File: 'x.c', Line: 3, Column: 1 }
Function:        main
Args:
  - Callee:          foo
...
"#;

    #[test]
    fn parses_the_plugins_remarks_and_skips_other_passes() {
        let r = parse(COPY).unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!((r[0].kind, r[0].name.as_str(), r[0].line), (Kind::Analysis, "Matched", 24));
        assert_eq!(r[0].file, "tests/corpus/copy.c");
        assert_eq!(r[0].cluster, Some((1, "copy-offload".into())));
        assert!(r[1].message.ends_with("dominance: it's \"first\""), "{}", r[1].message);
        assert_eq!(r[2].kind, Kind::Passed);
        assert_eq!(
            r[2].message,
            "plan cluster #1 (copy-offload): the copy loop write runs as one looped multi-call, it's done"
        );
    }

    #[test]
    fn bad_remarks_are_refused_with_their_line() {
        assert_eq!(
            parse("hello").unwrap_err(),
            "line 1: text outside a remark (expected `--- !Passed`, `!Missed` or `!Analysis`)"
        );
        assert!(parse("--- !Odd\n").unwrap_err().starts_with("line 1: unknown remark kind"));
        let e = parse("--- !Passed\nPass: syscluster\nDebugLoc: { File: 'a.c', Line: x }\n").unwrap_err();
        assert!(e.starts_with("line 3: DebugLoc: Line is not a number"), "{e}");
        assert!(parse("--- !Passed\nName: 'open\n").unwrap_err().starts_with("line 2: a single-quoted"));
    }

    #[test]
    fn a_debug_loc_folded_over_two_lines_is_read() {
        // As LLVM writes a long path (the plugin's NotInPlan remark on
        // /work/…/tests/corpus/selecttime.c was refused before).
        let text = "--- !Missed\nPass:            syscluster\nName:            NotInPlan\n\
DebugLoc:        { File: '/work/wt/plugaudit/tests/corpus/selecttime.c', \n                   Line: 15, Column: 0 }\n\
Function:        main\nArgs:\n  - String:          'syscluster: none of the plan''s 6 locations'\n...\n";
        let r = parse(text).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].file.as_str(), r[0].line), ("/work/wt/plugaudit/tests/corpus/selecttime.c", 15));
        assert_eq!(r[0].name, "NotInPlan");
        assert_eq!(r[0].message, "syscluster: none of the plan's 6 locations");
        let e = parse("--- !Missed\nPass: syscluster\nDebugLoc: { File: 'a.c',\n").unwrap_err();
        assert_eq!(e, "line 3: a `{` that no later line closes");
    }

    #[test]
    fn same_file_by_path_suffix() {
        assert!(same_file("/src/gzip-1.12/tests/corpus/copy.c", "tests/corpus/copy.c"));
        assert!(same_file("copy.c", "copy.c"));
        assert!(!same_file("/src/mycopy.c", "copy.c"));
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_parsed_or_refused_never_a_panic(s in "(--- !(Passed|Missed|Analysis)\n|Pass: syscluster\n|DebugLoc: \\{[ -~]{0,30}\\}\n|Args:\n|  - String: [ -~]{0,20}\n|\\.\\.\\.\n|[ -~]{0,20}\n){0,12}") {
            let _ = parse(&s);
        }
    }
}
