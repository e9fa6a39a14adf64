//! `syscluster kmod-gen`: a plan is untrusted input. Malformed plans are one
//! line and exit 2, and leave nothing written; a good plan writes the
//! module's source and Kbuild. (The fuzzer of its checks and of the C it
//! writes is in crates/cli; the module it writes is built and run in the
//! kernel module's guest, kmod/guest/gen.sh.)

use crate::util::*;

fn plan(clusters: &str) -> String {
    format!(
        r#"{{"plan_version": 1, "tool": "t", "created_at": 0,
  "profile": {{"command": ["copy"], "backend": "bpf", "node_key": "fd", "total_calls": 10, "duration_ns": 1}},
  "modules": [], "clusters": [{clusters}]}}"#
    )
}

fn cluster(shape: &str, calls: &str) -> String {
    format!(
        r#"{{"id": 1, "rule": "looped-multicall", "mechanism": "looped-multi-call", "shape": "{shape}", "calls": [{calls}],
  "locations": [], "parameters": {{}}, "estimated_saving_ns": 0, "share_of_run": 0, "applicable_here": true, "evidence": []}}"#
    )
}

const READ: &str = r#"{"syscall": "read", "nr": 0, "args": {"count": 4096, "fd": 3}, "results": {}}"#;
const WRITE: &str = r#"{"syscall": "write", "nr": 1, "args": {"fd": 4}, "results": {"count": 0}}"#;

#[test]
fn malformed_plans_exit_2_with_one_line() {
    let d = tmp();
    let cases: Vec<(String, &str)> = vec![
        ("{\"plan_version\": 1, ".into(), "is not JSON"),
        ("[1]".into(), "no plan_version"),
        (
            plan(&cluster("loop", &format!("{READ}, {}", WRITE.replace("\"write\"", "\"wr\\nite\"")))),
            "is not an x86_64 system call",
        ),
        (plan(&cluster("loop", &format!("{READ}, {}", WRITE.replace("\"nr\": 1", "\"nr\": 2")))), "not 2"),
        (
            plan(&cluster("loop", &format!("{READ}, {}", WRITE.replace("\"fd\": 4", "\"fd\": 99999999999")))),
            "out of range",
        ),
        (plan(&cluster("loop", &format!("{READ}, {}", WRITE.replace("\"fd\": 4", "\"buf\": 4")))), "is a pointer"),
        (plan(&cluster("sequence", &format!("{}, {READ}", WRITE))), "not before it"),
        (
            plan(&cluster(
                "loop",
                r#"{"syscall": "fork", "nr": 57, "args": {}, "results": {}}, {"syscall": "read", "nr": 0, "args": {}, "results": {}}"#,
            )),
            "refused in a multi-call",
        ),
        (plan(&cluster("loop\\\"; }", &format!("{READ}, {WRITE}"))), "unknown shape"),
    ];
    for (i, (text, what)) in cases.iter().enumerate() {
        let f = d.path().join(format!("plan{i}.json"));
        let out = d.path().join(format!("out{i}"));
        std::fs::write(&f, text).unwrap();
        let o = run(syscluster().arg("kmod-gen").arg(&f).arg("-o").arg(&out));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "case {i}: {err}");
        assert_eq!(err.lines().count(), 1, "case {i}: {err}");
        assert!(err.starts_with("syscluster: ") && err.contains(what), "case {i}: {what:?} not in {err}");
        assert!(!out.exists(), "case {i}: a refused plan wrote {}", out.display());
    }
}

#[test]
fn a_plan_gives_the_source_and_kbuild() {
    let d = tmp();
    let f = d.path().join("plan.json");
    std::fs::write(&f, plan(&cluster("loop", &format!("{READ}, {WRITE}")))).unwrap();
    let out = d.path().join("m");
    let o = run(syscluster().arg("kmod-gen").arg(&f).arg("-o").arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 cluster(s) specialized"), "{}", stderr(&o));
    for name in [
        "Kbuild",
        "mc_plan.h",
        "multicall.c",
        "mc_rules.h",
        "multicall_trace.h",
        "syscall_lists.h",
        "uapi/multicall_kmod.h",
    ] {
        assert!(out.join(name).is_file(), "no {name}");
    }
    let kbuild = std::fs::read_to_string(out.join("Kbuild")).unwrap();
    assert!(kbuild.contains("-DMC_PLAN") && kbuild.contains("obj-m := multicall.o"), "{kbuild}");
    let h = std::fs::read_to_string(out.join("mc_plan.h")).unwrap();
    assert!(h.contains("c[0].args[2] == 4096LL") && h.contains("mc_plan_run"), "{h}");
}
