//! The profile itself, as pretty JSON (the format of docs/PROFILE_FORMAT.md).

use crate::{ReportOptions, Reporter};
use syscluster_model::Profile;

pub struct Json;

impl Reporter for Json {
    fn render(&self, profile: &Profile, _opts: &ReportOptions) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(profile).expect("a profile always serializes");
        out.push(b'\n');
        out
    }
}
