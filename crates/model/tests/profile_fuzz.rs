//! Fuzzing the profile loader (proptest): arbitrary bytes and mutations of a
//! valid profile are either loaded (and then valid) or refused with an
//! error, never a panic.

use proptest::prelude::*;
use serde_json::{json, Value};
use syscluster_model::Profile;

fn valid() -> Value {
    json!({
        "format_version": 1,
        "meta": {"tool": "t", "command": ["x"], "arch": "x86_64", "kernel": "", "cpu": "", "hostname": "", "backend": "strace",
                 "mode": "trace", "node_key": "fd", "started_at": 0.0, "duration_ns": 5, "total_calls": 3, "processes": 1,
                 "threads": 1, "runs": 1,
                 "collected": {"kernel_time": true, "callsites": false, "value_profiles": true, "io_patterns": true, "result_matches": true}},
        "nodes": [
            {"id": 0, "syscall": "read", "nr": 0, "key": {"fd": 3}, "count": 2, "errors": 0, "kernel_ns": 10, "callsites": []},
            {"id": 1, "syscall": "write", "nr": 1, "key": {"fd": 4}, "count": 1, "errors": 0, "kernel_ns": 10,
             "callsites": [{"location": {"module": "/bin/x", "offset": 16, "function": "main", "file": "x.c", "line": 3}, "count": 1}]}
        ],
        "edges": [{"from": 0, "to": 1, "weight": 1, "result_matches": [{"arg": 2, "count": 1}]}, {"from": 1, "to": 0, "weight": 1}],
        "value_profiles": [{"syscall": "read", "arg": "count", "position": 2, "observations": 2, "not_held": 0, "slots": 12,
                            "top": [{"value": 4096, "count": 2, "share": 1.0}]}],
        "io_patterns": [{"path": "/a", "kind": "file", "opens": 1, "reads": 2, "writes": 0, "bytes_read": 10, "bytes_written": 0,
                         "seeks": 0, "size_histogram": [{"min": 4, "max": 7, "reads": 2, "writes": 0}], "sequential_share": 1.0, "class": "x"}],
        "sequences": {"hot_paths": [{"nodes": [0, 1], "weight": 1, "crossings": 2, "share": 0.6}], "loops": []},
        "lost_events": {"total": 0, "by_cause": {}}
    })
}

/// Replaces the value at a random place of `v` with `new`.
fn mutate(v: &mut Value, path: &[usize], new: Value) {
    let Some((&i, rest)) = path.split_first() else {
        *v = new;
        return;
    };
    match v {
        Value::Object(m) if !m.is_empty() => {
            let k = m.keys().nth(i % m.len()).unwrap().clone();
            mutate(m.get_mut(&k).unwrap(), rest, new)
        }
        Value::Array(a) if !a.is_empty() => {
            let n = a.len();
            mutate(&mut a[i % n], rest, new)
        }
        _ => *v = new,
    }
}

fn any_json() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        (-1e300f64..1e300).prop_map(|f| json!(f)),
        ".{0,8}".prop_map(Value::String),
        Just(json!([])),
        Just(json!({})),
    ]
}

#[test]
fn the_seed_profile_is_valid() {
    Profile::from_slice(&serde_json::to_vec(&valid()).unwrap(), "seed").expect("valid");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = Profile::from_slice(&bytes, "fuzz");
    }

    #[test]
    fn mutations_never_panic(path in prop::collection::vec(any::<usize>(), 1..6), new in any_json(), cut in any::<prop::sample::Index>()) {
        let mut v = valid();
        mutate(&mut v, &path, new);
        let bytes = serde_json::to_vec(&v).unwrap();
        if let Ok(p) = Profile::from_slice(&bytes, "fuzz") {
            prop_assert!(p.validate().is_ok());
        }
        let at = cut.index(bytes.len() + 1);
        let _ = Profile::from_slice(&bytes[..at], "fuzz");
    }
}
