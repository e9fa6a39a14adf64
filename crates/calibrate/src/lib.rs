//! Calibration: measuring this machine (what a crossing and the calls the
//! advisor rewrites cost, libmulticall's backends, the recorders' own cost).
//! The calibration format itself is `syscluster_model::calibration`.

pub mod measure;
pub mod tracers;
