//! Code addresses to functions, source files and lines.
//!
//! PLACEHOLDER: only module+offset for now; symbol tables and DWARF line
//! info come with the code-location work.

use super::Modules;
use syscluster_model::profile::Location;
use syscluster_model::CodeAddr;

pub struct Symbolizer {
    modules: Modules,
}

impl Symbolizer {
    pub fn new(modules: Modules) -> Symbolizer {
        Symbolizer { modules }
    }

    pub fn resolve(&mut self, addr: CodeAddr) -> Location {
        let module = match self.modules.get(addr.module) {
            Some(m) => match &m.path {
                Some(p) => p.display().to_string(),
                None => format!("<dev {:#x} inode {}>", m.dev, m.ino),
            },
            None => "<unknown>".to_string(),
        };
        Location { module, offset: addr.offset, function: None, file: None, line: None }
    }
}
