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
    if have("bpf", is_root(), "BPF needs root; only ptrace tried") {
        backends.push(("bpf-events", vec!["--backend", "bpf", "--mode", "events"]));
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

/// tests/corpus/bin/gowrite, or `None` (said on stderr) where the corpus
/// was built without a Go toolchain; under CI it must be there.
fn gowrite() -> Option<std::path::PathBuf> {
    let _ = corpus("write8"); // builds the corpus
    let program = root().join("tests/corpus/bin/gowrite");
    if !program.exists() {
        need("go", "no Go toolchain: tests/corpus/bin/gowrite was not built (install golang-go)");
        return None;
    }
    Some(program)
}

#[test]
fn go_writes_are_located_in_main_go_not_the_go_runtime() {
    let Some(program) = gowrite() else { return };
    writes_located_in_own_code(&program, "gowrite/main.go", marked_line("gowrite/main.go", "GOWRITE"));
}

#[test]
fn rust_writes_are_located_in_main_rs_not_std() {
    let program = corpus("rswrite");
    writes_located_in_own_code(&program, "rswrite/main.rs", marked_line("rswrite/main.rs", "RSWRITE"));
}

/// Records `program` writing `WRITES` records with `flags`, advises with
/// `--plan-out`, and returns the plan's location of the record writes (its
/// cluster id, and the location), the plan's path and the temp dir.
fn planned_writes(
    program: &std::path::Path,
    flags: &[&str],
    d: &std::path::Path,
) -> (std::path::PathBuf, u32, syscluster_model::plan::PlanLocation, String) {
    let json = d.join("p.json");
    let plan = d.join("plan.json");
    let o = run(syscluster()
        .arg("record")
        .args(flags)
        .args(["-q", "-o"])
        .arg(&json)
        .arg("--")
        .arg(program)
        .arg(d.join("out"))
        .arg(WRITES.to_string()));
    assert!(o.status.success(), "record failed: {}", stderr(&o));
    let o = run(syscluster().arg("advise").arg(&json).arg("--plan-out").arg(&plan));
    assert!(o.status.success(), "advise failed: {}", stderr(&o));
    // Wrapped at 80 columns: words only.
    let advice = String::from_utf8_lossy(&o.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    let p = syscluster_model::plan::Plan::load(&plan).unwrap();
    let (id, loc) = p
        .clusters
        .iter()
        .filter(|c| c.rule == "coalesce-writes")
        .flat_map(|c| c.locations.iter().map(move |l| (c.id, l)))
        .find(|(_, l)| l.syscall == "write" && l.count >= WRITES)
        .unwrap_or_else(|| panic!("no coalesce-writes cluster with the record writes: {p:#?}"));
    (plan, id, loc.clone(), advice)
}

/// A plan for a Rust program is applied (issue 10, items 3 and 8): its
/// location is the user's line of main.rs, which `std` calls libc for;
/// the site the preload library matches is that call into libc, inside
/// `std` (the profile and the plan keep both). Before, the plan named only
/// main.rs's frame, which no wrapper sees, and `run --plan` applied nothing.
#[test]
fn a_rust_programs_plan_is_applied_at_stds_call_into_libc() {
    let program = corpus("rswrite");
    let line = marked_line("rswrite/main.rs", "RSWRITE");
    let mut backends = vec![("ptrace", vec!["--backend", "ptrace"])];
    if have("bpf", is_root(), "BPF needs root; only ptrace tried") {
        backends.push(("bpf-events", vec!["--backend", "bpf", "--mode", "events"]));
    }
    for (name, flags) in backends {
        let d = tmp();
        let (plan, id, loc, advice) = planned_writes(&program, &flags, d.path());
        assert!(loc.file.as_deref().is_some_and(|f| f.ends_with("rswrite/main.rs")), "{name}: {loc:?}");
        assert_eq!(loc.line, Some(line), "{name}: the user's line: {loc:?}");
        let site = loc.site.unwrap_or_else(|| panic!("{name}: no site past std: {loc:?}"));
        assert_ne!(site, loc.offset, "{name}");
        assert!(advice.contains(&format!("main.rs:{line}")), "{name}: the advice shows main.rs: {advice}");
        // The function by its Rust name; the plan keeps the symbol's own
        // (mangled) name, which the plugin matches.
        assert!(advice.contains(&format!("write main.rs:{line} (main::main)")), "{name}: demangled: {advice}");
        assert!(!advice.contains("_ZN") && !advice.contains("17h"), "{name}: a mangled name shown: {advice}");
        assert!(loc.function.as_deref().is_some_and(|f| f.starts_with("_ZN4main4main17h")), "{name}: {loc:?}");
        let out = d.path().join("out2");
        let o = run(syscluster()
            .args(["run", "-v", "--plan"])
            .arg(&plan)
            .arg("--")
            .arg(&program)
            .arg(&out)
            .arg(WRITES.to_string()));
        let err = stderr(&o);
        assert!(o.status.success(), "{name}: {err}");
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(d.path().join("out")).unwrap(), "{name}: the bytes");
        let applied = format!("plan cluster #{id} at main.rs:{line}: {WRITES} writes");
        assert!(err.contains(&applied), "{name}: `{applied}` in: {err}");
        let deferred: u64 = err
            .split("deferred=")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{name}: no deferred= in {err}"));
        assert!(deferred >= WRITES - 10, "{name}: the planned writes deferred ({deferred}): {err}");
    }
}

/// Go makes its system calls itself, without libc: no preload library
/// sees them. The plan's site is then the runtime's `syscall` instruction,
/// and both the advice and `run --plan` say it cannot be applied there
/// instead of naming a site that never matches.
#[test]
fn a_go_programs_plan_says_the_runtime_cannot_apply_it() {
    let Some(program) = gowrite() else { return };
    let line = marked_line("gowrite/main.go", "GOWRITE");
    let d = tmp();
    let (plan, _, loc, advice) = planned_writes(&program, &["--backend", "ptrace"], d.path());
    assert_eq!(loc.line, Some(line), "{loc:?}");
    let site = loc.site.unwrap_or_else(|| panic!("no site in Go's runtime: {loc:?}"));
    assert!(syscluster_model::elf::raw_syscall_at(std::path::Path::new(&loc.module), site), "{loc:?}");
    assert!(
        advice.contains(&format!(
            "at: write main.go:{line} (main.main) ×2,000 how: buffer by hand as sketched (in Go: a bufio.Writer); \
             `syscluster run` cannot: the program's runtime makes these calls with raw syscall instructions"
        )),
        "{advice}"
    );
    let o = run(syscluster()
        .args(["run", "-v", "--plan"])
        .arg(&plan)
        .arg("--")
        .arg(&program)
        .arg(d.path().join("out2"))
        .arg(WRITES.to_string()));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!("main.go:{line} is not applied: the program's language runtime makes the call itself")),
        "{err}"
    );
}
