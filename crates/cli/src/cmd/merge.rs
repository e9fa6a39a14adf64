//! `syscluster merge`: add up profiles.

use crate::flags::MergeArgs;
use crate::Failure;
use syscluster_model::Profile;

pub fn run(a: MergeArgs) -> Result<i32, Failure> {
    let profiles = a.profiles.iter().map(|p| Profile::load(p)).collect::<Result<Vec<_>, _>>()?;
    let merged = syscluster_analysis::merge::merge(&profiles).map_err(Failure::new)?;
    if profiles.iter().any(|p| p.meta.node_key != merged.meta.node_key) {
        let keys: Vec<&str> = profiles.iter().map(|p| p.meta.node_key.as_str()).collect();
        eprintln!(
            "syscluster: the profiles key nodes differently ({}): merged by system call name (--node-key name)",
            keys.join(", ")
        );
    }
    super::save(&merged, &a.output)?;
    eprintln!("syscluster: merged {} profiles: {} → {}", profiles.len(), super::summary(&merged), a.output.display());
    Ok(0)
}
