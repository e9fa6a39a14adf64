//! Linux errno names (generated from `data/errno_linux.tsv`).

include!(concat!(env!("OUT_DIR"), "/errno_table.rs"));

/// The number of errno `name` ("ENOENT" → 2), aliases included.
pub fn by_name(name: &str) -> Option<i32> {
    ERRNOS.iter().find(|(_, n)| *n == name).map(|(e, _)| *e)
}

/// The first name of errno `e` (2 → "ENOENT").
pub fn name(e: i32) -> Option<&'static str> {
    ERRNOS.iter().find(|(n, _)| *n == e).map(|(_, name)| *name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_both_ways() {
        assert_eq!(super::by_name("ENOENT"), Some(2));
        assert_eq!(super::by_name("EWOULDBLOCK"), Some(11));
        assert_eq!(super::name(11), Some("EAGAIN"));
        assert_eq!(super::by_name("ERESTARTSYS"), Some(512));
        assert_eq!(super::by_name("EBOGUS"), None);
    }
}
