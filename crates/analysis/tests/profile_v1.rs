//! Profiles of format_version 1 (nodes keyed by fd number, the default
//! before the `descriptor` key) still load, merge with themselves keeping
//! their key, and merge with version 2 profiles keyed by descriptor by
//! converting both to name keys (docs/PROFILE_FORMAT.md, "Merging").

use std::path::Path;
use syscluster_analysis::merge::merge;
use syscluster_analysis::{BuilderOptions, ProfileBuilder};
use syscluster_model::profile::{Meta, NodeKeyMode};
use syscluster_model::{syscalls, Profile, SyscallEvent, FORMAT_VERSION};

fn v1() -> Profile {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile_v1_copy.json");
    Profile::load(&p).expect("a format_version 1 profile loads")
}

fn edge(p: &Profile, from: &str, to: &str) -> u64 {
    let id = |l: &str| p.nodes.iter().find(|n| p.label(n.id) == l).map(|n| n.id);
    let (Some(a), Some(b)) = (id(from), id(to)) else { return 0 };
    p.edges.iter().find(|e| e.from == a && e.to == b).map_or(0, |e| e.weight)
}

/// The copy of the fixture, recorded now: open in and out, three reads and
/// writes of 4096 bytes, a read of 0, two closes.
fn v2() -> Profile {
    let mut b = ProfileBuilder::new(BuilderOptions::default());
    let nr = |n: &str| syscalls::by_name(n).unwrap().nr;
    let mut call = |name: &str, args: &[i64], ret: i64, path: Option<&[u8]>| {
        let mut ev = SyscallEvent::new(100, 100, nr(name));
        for (i, &a) in args.iter().enumerate() {
            ev.args[i] = a as u64;
        }
        ev.ret = Some(ret);
        ev.path = path;
        b.event(&ev);
    };
    call("openat", &[-100, 0, 0], 3, Some(b"in"));
    call("openat", &[-100, 0, 0o1101], 4, Some(b"out"));
    for _ in 0..3 {
        call("read", &[3, 0, 4096], 4096, None);
        call("write", &[4, 0, 4096], 4096, None);
    }
    call("read", &[3, 0, 4096], 0, None);
    call("close", &[3], 0, None);
    call("close", &[4], 0, None);
    b.finish(Meta { arch: "x86_64".into(), ..Default::default() }, &mut |_| unreachable!("no code locations"))
}

#[test]
fn a_version_1_profile_loads_as_it_was() {
    let p = v1();
    assert_eq!(p.format_version, 1);
    assert_eq!(p.meta.node_key, NodeKeyMode::Fd);
    assert_eq!(edge(&p, "read(3)", "write(4)"), 3);
    assert_eq!(edge(&p, "write(4)", "read(3)"), 3);
}

#[test]
fn version_1_profiles_merge_with_each_other_keeping_their_key() {
    let one = v1();
    let m = merge(&[one.clone(), one.clone()]).unwrap();
    assert_eq!(m.format_version, FORMAT_VERSION);
    assert_eq!(m.meta.node_key, NodeKeyMode::Fd);
    assert_eq!(edge(&m, "read(3)", "write(4)"), 6);
    assert_eq!(m.meta.total_calls, 2 * one.meta.total_calls);
    // What merge writes loads again.
    let back = Profile::from_slice(&serde_json::to_vec(&m).unwrap(), "merged").unwrap();
    assert_eq!((&back.nodes, &back.edges, back.meta.node_key), (&m.nodes, &m.edges, m.meta.node_key));
}

#[test]
fn a_version_1_profile_merges_with_a_descriptor_keyed_one_by_name() {
    let (old, new) = (v1(), v2());
    assert_eq!(new.meta.node_key, NodeKeyMode::Descriptor);
    assert_eq!(edge(&new, "read(file in)", "write(file out)"), 3);
    for m in [merge(&[old.clone(), new.clone()]).unwrap(), merge(&[new.clone(), old.clone()]).unwrap()] {
        assert_eq!(m.meta.node_key, NodeKeyMode::Name);
        assert!(m.nodes.iter().all(|n| n.key.is_empty()), "keys left: {:?}", m.nodes);
        assert_eq!(m.meta.total_calls, old.meta.total_calls + new.meta.total_calls);
        assert_eq!(edge(&m, "read", "write"), 6);
        assert_eq!(edge(&m, "write", "read"), 6);
        // close(3) and close(4), close(file in) and close(file out): one node.
        assert_eq!(m.nodes.iter().filter(|n| n.syscall == "close").count(), 1);
        assert_eq!(edge(&m, "close", "close"), 2);
        m.validate().unwrap();
    }
}

#[test]
fn version_1_cannot_claim_the_descriptor_key() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile_v1_copy.json"))
            .unwrap();
    let bad = text.replace("\"node_key\": \"fd\"", "\"node_key\": \"descriptor\"");
    assert_ne!(bad, text);
    let e = Profile::from_slice(bad.as_bytes(), "bad.json").unwrap_err().to_string();
    assert!(e.contains("descriptor does not exist in format_version 1"), "{e}");
}
