//! The plan line format's fixtures (tests/fixtures/formats/plan-line): for
//! each valid-NAME.json plan, what the supervisor writes for the library
//! must be valid-NAME.lines byte for byte — the same files the library's
//! parser is tested on (preload/test/planline.c), so that the writer and
//! the reader agree through them.  `UPDATE_FIXTURES=1` rewrites the .lines
//! files from what the writer writes now.

use std::path::Path;
use syscluster_model::plan::Plan;
use syscluster_supervisor::plan::decide;

/// The threshold the fixtures' planned writes are deferred below.
const THRESHOLD: usize = 4096;

#[test]
fn the_writer_writes_the_valid_fixtures() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/formats/plan-line");
    let update = std::env::var_os("UPDATE_FIXTURES").is_some_and(|v| v == "1");
    let mut plans: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    plans.sort();
    assert!(plans.len() >= 2, "{} plans in {}", plans.len(), dir.display());
    let mut wrong = Vec::new();
    for p in &plans {
        let plan = Plan::load(p).unwrap_or_else(|e| panic!("{e}"));
        let spec = decide(&plan, THRESHOLD).spec;
        assert!(spec.starts_with(syscluster_model::formats::PLAN_LINE_HEADER), "{}: {spec}", p.display());
        let lines = p.with_extension("lines");
        if update {
            std::fs::write(&lines, &spec).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&lines)
            .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_FIXTURES=1 writes it)", lines.display()));
        if spec != want {
            wrong.push(format!("{}: the writer wrote\n{spec}\nwant\n{want}", p.display()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Every .lines file that is valid comes from a plan here: none is kept by hand.
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("valid-") && name.ends_with(".lines") {
            assert!(p.with_extension("json").exists(), "{name} has no plan it is written from");
        }
    }
}
