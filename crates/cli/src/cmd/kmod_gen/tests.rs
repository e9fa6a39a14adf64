//! kmod-gen's checks of a plan, and a fuzzer: random and malformed plans are
//! refused with one line, or give C that compiles (-Werror).

use super::*;
use serde_json::{json, Value};
use std::process::Command;

fn plan_of(clusters: Value) -> Plan {
    serde_json::from_value(json!({
        "plan_version": 1, "tool": "test", "created_at": 0.0,
        "profile": { "command": ["x"], "backend": "bpf", "node_key": "fd", "total_calls": 1, "duration_ns": 1 },
        "modules": [], "clusters": clusters
    }))
    .expect("a plan")
}

fn cluster(shape: &str, calls: Value) -> Value {
    json!({ "id": 1, "rule": "r\n\"*/ evil", "mechanism": "m", "shape": shape, "calls": calls, "locations": [],
            "parameters": {}, "estimated_saving_ns": 0.0, "share_of_run": 0.0, "applicable_here": true,
            "evidence": [] })
}

fn copy_calls() -> Value {
    json!([{ "syscall": "read", "nr": 0, "args": { "count": 4096, "fd": 3 }, "results": {} },
           { "syscall": "write", "nr": 1, "args": { "fd": 4 }, "results": { "count": 0 } }])
}

#[test]
fn the_copy_loop_is_guarded_and_folded() {
    let g = generate(&plan_of(json!([cluster("loop", copy_calls()), cluster("loop", copy_calls())]))).unwrap();
    assert_eq!(g.clusters, 1, "the same calls twice are one cluster");
    let h = &g.header;
    // Rotation 0 (read, write) and 1 (write, read: the reference is loop-carried).
    assert!(h.contains("c[0].nr == 0 /* read */") && h.contains("c[0].args[2] == 4096LL"), "{h}");
    assert!(h.contains("c[1].nr == 1 /* write */ && c[1].args[0] == 4LL") || h.contains("c[1].ref[2] == 1"), "{h}");
    assert!(h.contains("mc_plan_0_1_fits") && h.contains("c[0].ref[2] == 2"), "{h}");
    assert!(h.contains("r = step(p, 1, true, &first, 0 /* read */, 3LL, c[1].args[1], 4096LL"), "{h}");
    assert!(!h.contains("evil"), "no string of the plan reaches the C");
}

#[test]
fn malformed_plans_are_refused() {
    let cases: Vec<(Value, &str)> = vec![
        (
            cluster(
                "loop",
                json!([{ "syscall": "nosuch", "nr": 0, "args": {}, "results": {} }, { "syscall": "read", "nr": 0, "args": {}, "results": {} }]),
            ),
            "is not an x86_64 system call",
        ),
        (
            cluster(
                "loop",
                json!([{ "syscall": "read", "nr": 1, "args": {}, "results": {} }, { "syscall": "read", "nr": 0, "args": {}, "results": {} }]),
            ),
            "read is number 0, not 1",
        ),
        (
            cluster(
                "sequence",
                json!([{ "syscall": "read", "nr": 0, "args": {}, "results": {} }, { "syscall": "execve", "nr": 59, "args": {}, "results": {} }]),
            ),
            "refused in a multi-call",
        ),
        (
            cluster(
                "loop",
                json!([{ "syscall": "read", "nr": 0, "args": { "buf": 5 }, "results": {} }, { "syscall": "read", "nr": 0, "args": {}, "results": {} }]),
            ),
            "is a pointer",
        ),
        (
            cluster(
                "loop",
                json!([{ "syscall": "read", "nr": 0, "args": { "fd": -3 }, "results": {} }, { "syscall": "read", "nr": 0, "args": {}, "results": {} }]),
            ),
            "out of range",
        ),
        (
            cluster(
                "loop",
                json!([{ "syscall": "read", "nr": 0, "args": { "count": -1 }, "results": {} }, { "syscall": "read", "nr": 0, "args": {}, "results": {} }]),
            ),
            "out of range",
        ),
        (
            cluster(
                "loop",
                json!([{ "syscall": "read", "nr": 0, "args": { "flags\n": 1 }, "results": {} }, { "syscall": "read", "nr": 0, "args": {}, "results": {} }]),
            ),
            "has no argument",
        ),
        (
            cluster(
                "sequence",
                json!([{ "syscall": "read", "nr": 0, "args": {}, "results": { "count": 1 } }, { "syscall": "read", "nr": 0, "args": {}, "results": {} }]),
            ),
            "not before it",
        ),
        (
            cluster(
                "loop",
                json!([{ "syscall": "read", "nr": 0, "args": {}, "results": { "count": 7 } }, { "syscall": "read", "nr": 0, "args": {}, "results": {} }]),
            ),
            "not before it",
        ),
        (
            cluster(
                "loop",
                json!([{ "syscall": "read", "nr": 0, "args": { "count": 1 }, "results": { "count": 1 } }, { "syscall": "read", "nr": 0, "args": {}, "results": {} }]),
            ),
            "both a constant and a result",
        ),
        (cluster("spiral", copy_calls()), "unknown shape"),
        (
            cluster(
                "sequence",
                json!([{ "syscall": "prctl", "nr": 157, "args": {}, "results": {} }, { "syscall": "read", "nr": 0, "args": {}, "results": {} }]),
            ),
            "when its argument 0 is 22",
        ),
        (
            cluster(
                "sequence",
                Value::Array(vec![json!({ "syscall": "getpid", "nr": 39, "args": {}, "results": {} }); 17]),
            ),
            "at most 16",
        ),
    ];
    for (c, want) in cases {
        let e = generate(&plan_of(json!([c]))).err().unwrap_or_else(|| panic!("accepted; wanted {want}"));
        assert!(e.contains(want), "{e:?} lacks {want:?}");
        assert!(!e.contains('\n'), "{e:?}");
    }
    // A run (one call repeated) is left to the generic path, not an error.
    let g = generate(&plan_of(json!([cluster(
        "run",
        json!([{ "syscall": "write", "nr": 1, "args": {}, "results": {} }])
    )])))
    .unwrap();
    assert_eq!((g.clusters, g.skipped.len()), (0, 1));
}

/// What mc_plan.h expects of multicall.c, for a compile in user space.
const PRELUDE: &str = r#"
#include <stdbool.h>
#include <errno.h>
#include "uapi/multicall_kmod.h"
#define fallthrough __attribute__((__fallthrough__))
struct mc_prog { struct mc_kmod_run hdr; struct mc_kmod_call *c; void *uc; unsigned int n; bool resume_block; };
long step(struct mc_prog *p, unsigned int i, bool put, bool *first, long nr, long a0, long a1, long a2,
               long a3, long a4, long a5);
long mc_spec_stop(struct mc_prog *p, unsigned int b);
unsigned int loop_start(struct mc_prog *p);
long entry(struct mc_prog *p, bool loop, bool *taken);
#include "mc_plan.h"
long entry(struct mc_prog *p, bool loop, bool *taken) { return mc_plan_run(p, loop, taken); }
"#;

/// Compiles headers with gcc, all in one directory each; true when all compile.
fn compiles(dir: &Path, headers: &[String]) -> Result<(), String> {
    let kmod = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kmod");
    for (i, h) in headers.iter().enumerate() {
        let d = dir.join(format!("h{i}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("mc_plan.h"), h).unwrap();
        std::fs::write(d.join("t.c"), PRELUDE).unwrap();
        let o = Command::new("gcc")
            .args(["-std=gnu11", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-Wimplicit-fallthrough"])
            .arg("-I")
            .arg(&kmod)
            .arg("-I")
            .arg(&d)
            .arg(d.join("t.c"))
            .output()
            .map_err(|e| format!("gcc: {e}"))?;
        if !o.status.success() {
            return Err(format!("{}\n{h}", String::from_utf8_lossy(&o.stderr)));
        }
    }
    Ok(())
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random call: mostly real calls with real argument names and values
/// near the edges, sometimes junk.
fn random_call(r: &mut Rng, n: usize) -> Value {
    let nr = if r.below(10) == 0 { 400 + r.below(100) as u32 } else { r.below(335) as u32 };
    let info = syscalls::by_nr(nr);
    let name = match (info, r.below(20)) {
        (_, 0) => "read\"; }*/".to_string(),
        (Some(i), _) => i.name.to_string(),
        (None, _) => format!("sys{nr}"),
    };
    let wrong_nr = if r.below(20) == 0 { nr + 1 } else { nr };
    let mut args = serde_json::Map::new();
    let mut results = serde_json::Map::new();
    let values = [0, 1, 3, 4096, -1, -100, i64::MAX, i64::MIN, i64::from(i32::MAX) + 1, 22];
    if let Some(i) = info {
        for a in i.args {
            match r.below(4) {
                0 => {
                    args.insert(a.name.into(), json!(values[r.below(values.len() as u64) as usize]));
                }
                1 => {
                    results.insert(a.name.into(), json!(r.below(n as u64 + 1)));
                }
                _ => {}
            }
        }
    }
    if r.below(30) == 0 {
        args.insert("*/ bogus".into(), json!(1));
    }
    json!({ "syscall": name, "nr": wrong_nr, "args": args, "results": results })
}

#[test]
fn fuzz_plans() {
    let dir = tempfile_dir();
    let mut r = Rng(0x5eed_cafe_f00d_1234);
    let (mut refused, mut headers) = (0, Vec::new());
    for _ in 0..3000 {
        let nclusters = 1 + r.below(3) as usize;
        let mut cs = Vec::new();
        for _ in 0..nclusters {
            let n = 1 + r.below(5) as usize;
            let calls: Vec<Value> = (0..n).map(|_| random_call(&mut r, n)).collect();
            let shape = ["loop", "sequence", "run", "loop\u{0}"][r.below(4) as usize];
            cs.push(cluster(shape, Value::Array(calls)));
        }
        let Ok(plan) = serde_json::from_value::<Plan>(json!({
            "plan_version": 1, "tool": "t", "created_at": 0.0,
            "profile": { "command": [], "backend": "bpf", "node_key": "fd", "total_calls": 1, "duration_ns": 1 },
            "modules": [], "clusters": cs }))
        else {
            continue;
        };
        match generate(&plan) {
            Err(e) => {
                assert!(!e.contains('\n') && !e.is_empty(), "{e:?}");
                refused += 1;
            }
            Ok(g) => {
                assert!(!g.header.contains("bogus") && !g.header.contains("evil"), "a string of the plan in the C");
                if g.clusters > 0 && headers.len() < 40 {
                    headers.push(g.header);
                }
            }
        }
    }
    assert!(refused > 100, "only {refused} plans refused: the fuzzer does not reach the checks");
    assert!(
        headers.len() >= 20,
        "only {} plans generated code: the fuzzer does not reach the generator",
        headers.len()
    );
    compiles(dir.path(), &headers).unwrap();
}

fn tempfile_dir() -> TempDir {
    let p = std::env::temp_dir().join(format!("kmod-gen-test-{}", std::process::id()));
    std::fs::create_dir_all(&p).unwrap();
    TempDir(p)
}

struct TempDir(std::path::PathBuf);
impl TempDir {
    fn path(&self) -> &Path {
        &self.0
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
