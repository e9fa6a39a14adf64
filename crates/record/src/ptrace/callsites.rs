//! Code locations of traced calls: unwinding from the registers at the
//! entry stop, through libc and the dynamic loader, to the program's frame.
//!
//! PLACEHOLDER until the unwinder (callsite::unwind) lands.

use crate::callsite::Modules;
use syscluster_analysis::ProfileBuilder;
use syscluster_model::CodeAddr;

pub struct Callsites {}

impl Callsites {
    pub fn new() -> Callsites {
        Callsites {}
    }

    pub fn find(&mut self, _pid: u32, _tid: i32, _ip: u64, _sp: u64, _modules: &mut Modules, _builder: &mut ProfileBuilder) -> Option<CodeAddr> {
        None
    }

    pub fn exec(&mut self, _pid: u32) {}

    pub fn process_exit(&mut self, _pid: u32) {}
}
