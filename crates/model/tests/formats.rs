//! The plan format's fixtures (tests/fixtures/formats/plan), which the
//! compiler plugin's reader is tested on too (llvm/test/plan-formats.c):
//! each file either loads or fails with the one line its .expect gives
//! (`@PATH@` for the file's path).  `UPDATE_FIXTURES=1` rewrites the .expect
//! files from what the reader says now.

use std::path::Path;
use syscluster_model::plan::Plan;

#[test]
fn plan_fixtures() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/formats/plan");
    let update = std::env::var_os("UPDATE_FIXTURES").is_some_and(|v| v == "1");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{} fixtures in {}", files.len(), dir.display());
    let mut wrong = Vec::new();
    for p in &files {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let got = match Plan::load(p) {
            Ok(plan) => {
                assert!(!plan.clusters.is_empty(), "{name}: a valid fixture holds a cluster");
                "valid".to_string()
            }
            Err(e) => e.replace(&p.display().to_string(), "@PATH@"),
        };
        assert!(!got.contains('\n'), "{name}: the error is one line: {got}");
        assert_eq!(name.starts_with("valid"), got == "valid", "{name}: {got}");
        let expect_path = p.with_extension("expect");
        if update {
            std::fs::write(&expect_path, format!("{got}\n")).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&expect_path)
            .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_FIXTURES=1 writes it)", expect_path.display()));
        if got != want.trim_end() {
            wrong.push(format!("{name}: got {got:?}, want {:?}", want.trim_end()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// valid-current.json's `function_hash` is that of the function holding
/// line 23 of tests/corpus/write8.c (the fixture's /fixture/write8.c), as
/// llvm/test/make-plan.py computes it too: the Rust scanner and the tests'
/// agree (and llvm/test/stale-function.c, the tests' and the plugin's).
#[test]
fn function_hash_of_the_fixture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let plan = Plan::load(&root.join("tests/fixtures/formats/plan/valid-current.json")).unwrap();
    let l = &plan.clusters[0].locations[0];
    let now = syscluster_model::plan::function_hash(&root.join("tests/corpus/write8.c"), l.line.unwrap()).unwrap();
    assert_eq!(l.function_hash.as_deref(), Some(now.as_str()));
}

/// function-spans.py's texts (`gen` or `gen-macros`, 400 of them) and what
/// make-plan.py's scan prints for every line of each (`spans` or `macros`),
/// against what `ours` gives for the text and the line, printed alike.
/// Returns the lines compared.
fn compare_with_make_plan(gen: &str, seed: &str, print: &str, ours: impl Fn(&[u8], u32) -> String) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = root.join("llvm/test/function-spans.py");
    let d = tempfile::tempdir().unwrap();
    let texts = d.path().join("texts");
    let py = |args: &[&std::ffi::OsStr]| {
        let o = std::process::Command::new("python3").arg(&script).args(args).output().expect("python3");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    py(&[gen.as_ref(), texts.as_os_str(), "400".as_ref(), seed.as_ref()]);
    let mut files: Vec<_> = std::fs::read_dir(&texts).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut args: Vec<&std::ffi::OsStr> = vec![print.as_ref()];
    args.extend(files.iter().map(|f| f.as_os_str()));
    let want = py(&args);
    let mut got = String::new();
    for f in &files {
        let text = std::fs::read(f).unwrap();
        let lines = text.iter().filter(|b| **b == b'\n').count() as u32 + 3;
        for line in 0..lines {
            got.push_str(&format!("{} {line} {}\n", f.display(), ours(&text, line)));
        }
    }
    for (w, g) in want.lines().zip(got.lines()) {
        assert_eq!(w, g);
    }
    assert_eq!(want.lines().count(), got.lines().count());
    want
}

/// The Rust scan finds the same function spans as make-plan.py's on every
/// line of 400 random texts (llvm/test/function-spans.py), as the plugin's
/// does (lit function-span.c): the three implementations agree.
#[test]
fn function_span_agrees_with_make_plan() {
    let want = compare_with_make_plan("gen", "12", "spans", |text, line| {
        match syscluster_model::plan::function_span(text, line) {
            Some((a, b)) => format!("{a} {b}"),
            None => "-".into(),
        }
    });
    assert!(want.lines().filter(|l| !l.ends_with(" -")).count() > 100, "too few spans to compare");
}

/// The Rust macro_hash scan gives make-plan.py's hash on every line of 400
/// random texts of functions and `#define`s (llvm/test/function-spans.py
/// gen-macros), as the plugin's does (lit function-span.c).
#[test]
fn macro_hash_agrees_with_make_plan() {
    let want = compare_with_make_plan("gen-macros", "7", "macros", |text, line| {
        syscluster_model::plan::macro_hash_of_text(text, line).unwrap_or_else(|| "-".into())
    });
    let empty = syscluster_model::plan::fnv1a(b"");
    assert!(
        want.lines().filter(|l| !l.ends_with(" -") && !l.ends_with(&empty)).count() > 100,
        "too few functions using macros to compare"
    );
}
