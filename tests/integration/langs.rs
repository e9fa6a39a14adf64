//! Code locations past a language's runtime (issue 10, item 8): a Go
//! program writing through `os.File.Write` and a Rust program writing
//! through `std::fs::File` have each write located at the line of their
//! own code that wrote (main.go / main.rs), not in Go's runtime or syscall
//! package nor in Rust's std — with each recorder that keeps locations.

use crate::util::*;
use syscluster_model::Profile;

const WRITES: u64 = 2000;

/// The 1-based line of `tests/corpus/<source>` holding `marker`.
fn marked_line(source: &str, marker: &str) -> u32 {
    let text = std::fs::read_to_string(root().join("tests/corpus").join(source)).unwrap();
    let lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(marker) && !l.trim_start().starts_with("//"))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(lines.len(), 1, "{source}: one line marked {marker}");
    lines[0] as u32
}

/// Records `program` writing `WRITES` records with each recorder and checks
/// that every write to the output file is located at `file`:`line`.
fn writes_located_in_own_code(program: &std::path::Path, file: &str, line: u32) {
    let d = tmp();
    let out = d.path().join("out");
    let mut backends = vec![("ptrace", vec!["--backend", "ptrace"])];
    if is_root() {
        backends.push(("bpf-events", vec!["--backend", "bpf", "--mode", "events"]));
    } else {
        eprintln!("BPF needs root; only ptrace tried");
    }
    for (name, flags) in backends {
        let json = d.path().join(format!("{name}.json"));
        let o = run(syscluster()
            .arg("record")
            .args(&flags)
            .args(["-q", "-o"])
            .arg(&json)
            .arg("--")
            .arg(program)
            .arg(&out)
            .arg(WRITES.to_string()));
        assert!(o.status.success(), "{name}: record failed: {}", stderr(&o));
        assert_eq!(std::fs::metadata(&out).unwrap().len(), 8 * WRITES, "{name}: the program's output");
        let p = Profile::load(&json).unwrap();
        let writes: Vec<_> = p.nodes.iter().filter(|n| n.syscall == "write" && n.count >= WRITES).collect();
        assert_eq!(
            writes.len(),
            1,
            "{name}: one node for the record writes: {:?}",
            p.nodes.iter().map(|n| (&n.syscall, n.count)).collect::<Vec<_>>()
        );
        let sites = &writes[0].callsites;
        let located: u64 = sites
            .iter()
            .filter(|c| c.location.file.as_deref().is_some_and(|f| f.ends_with(file)) && c.location.line == Some(line))
            .map(|c| c.count)
            .sum();
        assert_eq!(located, WRITES, "{name}: every write located at {file}:{line}; locations: {sites:#?}");
    }
}

#[test]
fn go_writes_are_located_in_main_go_not_the_go_runtime() {
    let _ = corpus("write8"); // builds the corpus
    let program = root().join("tests/corpus/bin/gowrite");
    if !program.exists() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "no Go toolchain: tests/corpus/bin/gowrite was not built (install golang-go)"
        );
        eprintln!("skipping: no Go toolchain (tests/corpus/bin/gowrite not built)");
        return;
    }
    writes_located_in_own_code(&program, "gowrite/main.go", marked_line("gowrite/main.go", "GOWRITE"));
}

#[test]
fn rust_writes_are_located_in_main_rs_not_std() {
    let program = corpus("rswrite");
    writes_located_in_own_code(&program, "rswrite/main.rs", marked_line("rswrite/main.rs", "RSWRITE"));
}
