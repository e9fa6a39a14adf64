//! `syscluster run`'s supervisor reads a plan with the model alone (issue
//! 11 §1): it must not grow a dependency on the advisor, the recorders or
//! the report, whose code every `run` would then load.

#[test]
fn the_supervisor_depends_on_the_model_and_libc_only() {
    let toml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let mut deps = Vec::new();
    let mut inside = false;
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside && !line.is_empty() && !line.starts_with('#') {
            deps.push(line.split(['=', '.', ' ']).next().unwrap().to_string());
        }
    }
    assert_eq!(deps, ["libc", "syscluster-model"], "crates/supervisor/Cargo.toml [dependencies]");
}
