//! The formats syscluster shares with libmulticall, read by both sides the
//! same way: libmulticall's calibration (fixtures in
//! tests/fixtures/formats/multicall-calibration, which libmulticall's
//! test/formats.c reads too) and the machine identity it is tied to.
//! Needs libmulticall built (`make -C libmulticall`): its mc-calibrate says
//! what the C side computes.

use std::path::{Path, PathBuf};
use std::process::Command;
use syscluster_advise::calibration::MulticallDecisions;
use syscluster_model::machine;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// libmulticall's identity of this machine, as `mc-calibrate --machine` prints it.
fn c_identity() -> (String, String) {
    let tool = root().join("libmulticall/build/mc-calibrate");
    let out = Command::new(&tool)
        .arg("--machine")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (build libmulticall first: make -C libmulticall)", tool.display()));
    assert!(out.status.success(), "mc-calibrate --machine failed: {}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("mc-calibrate --machine prints JSON");
    (v["kernel"].as_str().unwrap().to_string(), v["cpu"].as_str().unwrap().to_string())
}

#[test]
fn rust_and_c_name_this_machine_the_same() {
    let (kernel, cpu) = c_identity();
    assert!(kernel.starts_with("Linux "), "{kernel}");
    assert!(!cpu.is_empty() && cpu != "unknown", "{cpu}");
    assert_eq!(machine::kernel(), kernel);
    assert_eq!(machine::cpu_model(), cpu);
}

/// Each fixture with this machine's identity put in.
fn fixtures(kernel: &str, cpu: &str) -> Vec<(String, String, String)> {
    let dir = root().join("tests/fixtures/formats/multicall-calibration");
    let json = |s: &str| serde_json::to_string(s).unwrap();
    let mut all = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            let text = std::fs::read_to_string(&p).unwrap();
            let text = text.replace("\"@KERNEL@\"", &json(kernel)).replace("\"@CPU@\"", &json(cpu));
            let expect = std::fs::read_to_string(p.with_extension("expect")).unwrap();
            let expect = expect.trim_end().replace("\"@KERNEL@\"", &json(kernel)).replace("\"@CPU@\"", &json(cpu));
            all.push((p.file_name().unwrap().to_string_lossy().into_owned(), text, expect));
        }
    }
    all.sort();
    all
}

#[test]
fn multicall_calibration_fixtures() {
    let (kernel, cpu) = (machine::kernel(), machine::cpu_model());
    let all = fixtures(&kernel, &cpu);
    assert!(all.len() >= 20, "{} fixtures", all.len());
    let mut wrong = Vec::new();
    for (name, text, expect) in &all {
        let got = match MulticallDecisions::parse_text(text, Some((&kernel, &cpu))) {
            Ok(_) => "valid".to_string(),
            Err(why) => why.to_string(),
        };
        if &got != expect {
            wrong.push(format!("{name}: got {got:?}, want {expect:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn multicall_calibration_decisions_read_back() {
    let (kernel, cpu) = (machine::kernel(), machine::cpu_model());
    let all = fixtures(&kernel, &cpu);
    let (_, text, _) = all.iter().find(|(n, _, _)| n == "valid-current.json").unwrap();
    let d = MulticallDecisions::parse_text(text, Some((&kernel, &cpu))).unwrap();
    assert_eq!(d.min_run.get("writev.file"), Some(&(4, 2)));
    assert_eq!(d.min_run.get("copy.pipe"), Some(&(0, 0)));
    assert!(d.uring_wins);
}
