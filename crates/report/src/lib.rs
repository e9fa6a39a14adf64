//! Renderings of a profile. One trait, one file per format; every format
//! returns bytes, so that tests compare or parse them directly.

pub mod dot;
pub mod folded;
pub mod html;
pub mod json;
pub mod text;

use syscluster_model::Profile;

/// Settings shared by the formats.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Rows per table (text) or edges drawn (dot).
    pub top: usize,
    /// Columns of the text report: rows longer than this are cut.
    pub width: usize,
}

/// The text report's width on a terminal of unknown size.
pub const DEFAULT_WIDTH: usize = 80;

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions { top: 15, width: DEFAULT_WIDTH }
    }
}

pub trait Reporter {
    fn render(&self, profile: &Profile, opts: &ReportOptions) -> Vec<u8>;
}

/// The reporter for a format name (`text`, `json`, `dot`, `folded`, `html`;
/// the HTML page made here has no advice: see [`html::page`]).
pub fn by_name(name: &str) -> Option<Box<dyn Reporter>> {
    match name {
        "text" => Some(Box::new(text::Text)),
        "json" => Some(Box::new(json::Json)),
        "dot" => Some(Box::new(dot::Dot)),
        "folded" => Some(Box::new(folded::Folded)),
        "html" => Some(Box::new(html::Html)),
        _ => None,
    }
}
