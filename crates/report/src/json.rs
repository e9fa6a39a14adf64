//! JSON: the profile itself (the format of docs/PROFILE_FORMAT.md), advice
//! (docs/ADVICE.md), a calibration, and `stat`'s counts, pretty-printed.

use crate::{spread, Render, ReportOptions, Stat};
use syscluster_advise::{Advice, Calibration};
use syscluster_model::Profile;

pub struct Json;

/// Pretty JSON and a newline.
fn pretty(json: serde_json::Result<Vec<u8>>) -> Vec<u8> {
    let mut out = json.expect("syscluster's values always serialize");
    out.push(b'\n');
    out
}

impl Render<Profile> for Json {
    fn render(&self, profile: &Profile, _opts: &ReportOptions) -> Vec<u8> {
        pretty(serde_json::to_vec_pretty(profile))
    }
}

impl Render<Advice> for Json {
    fn render(&self, advice: &Advice, _opts: &ReportOptions) -> Vec<u8> {
        pretty(serde_json::to_vec_pretty(advice))
    }
}

impl Render<Calibration> for Json {
    fn render(&self, calibration: &Calibration, _opts: &ReportOptions) -> Vec<u8> {
        pretty(serde_json::to_vec_pretty(calibration))
    }
}

fn json_spread(v: &[u64]) -> serde_json::Value {
    let (min, median, max) = spread(v);
    serde_json::json!({"min": min, "median": median, "max": max, "runs": v})
}

impl Render<Stat> for Json {
    fn render(&self, s: &Stat, _opts: &ReportOptions) -> Vec<u8> {
        let by_syscall: serde_json::Map<String, serde_json::Value> =
            s.by_syscall.iter().map(|(k, v)| (k.clone(), json_spread(v))).collect();
        let doc = serde_json::json!({
            "format_version": syscluster_model::formats::STAT_VERSION,
            "command": s.command,
            "runs": s.runs,
            "counting_backend": s.counting_backend,
            "wall_ns": json_spread(&s.wall),
            "user_ns": json_spread(&s.user),
            "system_ns": json_spread(&s.system),
            "crossings": if s.crossings.is_empty() { serde_json::Value::Null } else { json_spread(&s.crossings) },
            "by_syscall": by_syscall,
        });
        let mut out = serde_json::to_string_pretty(&doc).expect("json").into_bytes();
        out.push(b'\n');
        out
    }
}
