//! A profile holds the program's calls and names them as the user knows
//! them (issue 10, item 6): not the recorder's PATH search, not a mangled
//! symbol of the recorder for the launch, not the target of a symbolic link
//! for a program started through it.

use crate::util::*;
use syscluster_model::Profile;

#[test]
fn path_search_and_launch_are_not_the_programs() {
    let d = tmp();
    let bin = corpus("write8").parent().unwrap().to_path_buf();
    // Four directories without the program before the one that has it.
    let path = format!("/nonexistent/a:/nonexistent/b:{0}/none:/proc:{1}", d.path().display(), bin.display());
    for (label, args) in record_backends() {
        let out = d.path().join(format!("{label}.json"));
        let o = run(syscluster()
            .env("PATH", &path)
            .args(["record", "-q", "-o"])
            .arg(&out)
            .args(&args)
            .args(["--", "write8"])
            .arg(d.path().join("w"))
            .arg("10"));
        assert!(o.status.success(), "{label}: {}", stderr(&o));
        let p = Profile::load(&out).unwrap();
        let execve: Vec<_> = p.nodes.iter().filter(|n| n.syscall == "execve").collect();
        assert_eq!(execve.iter().map(|n| n.count).sum::<u64>(), 1, "{label}: only the program's own execve: {execve:?}");
        assert_eq!(execve[0].errors, 0, "{label}");
        for n in &p.nodes {
            for c in &n.callsites {
                let f = c.location.function.as_deref().unwrap_or("");
                assert!(!f.starts_with("_ZN") && !f.contains("syscluster_record"), "{label}: {} at {:?}", n.syscall, c.location);
            }
        }
        if label != "bpf-aggregate" {
            // (aggregate mode has code locations only as node keys)
            let launch = &execve[0].callsites;
            assert_eq!(launch.len(), 1, "{label}: {launch:?}");
            assert_eq!(launch[0].location.module, "[syscluster launch]", "{label}");
        }
    }
}

#[test]
fn program_started_through_a_link_is_named_as_typed() {
    let d = tmp();
    let link = d.path().join("logger");
    std::os::unix::fs::symlink(corpus("write8"), &link).unwrap();
    for (label, args) in record_backends() {
        if label == "bpf-aggregate" {
            continue; // no code locations without --node-key callsite
        }
        let out = d.path().join(format!("{label}.json"));
        let o = run(syscluster().args(["record", "-q", "-o"]).arg(&out).args(&args).arg("--").arg(&link).arg(d.path().join("w")).arg("10"));
        assert!(o.status.success(), "{label}: {}", stderr(&o));
        let p = Profile::load(&out).unwrap();
        let write = p.nodes.iter().find(|n| n.syscall == "write" && n.count >= 10).expect("the writes");
        let modules: Vec<&str> = write.callsites.iter().map(|c| c.location.module.as_str()).collect();
        assert_eq!(modules, [link.to_str().unwrap()], "{label}: the program by the name it was started with");
    }
}
