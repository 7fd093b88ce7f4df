//! The PTX coverage table (a generated reference page, `docs/reference/ptx-coverage.md`) tells
//! what the decoder runs from what it does not.

#[test]
fn the_table_tells_supported_from_unsupported() {
    let rows = emulator::coverage();
    let status = |n: &str| {
        rows.iter()
            .find(|r| r.name == n)
            .unwrap_or_else(|| panic!("row {n}"))
            .supported
    };
    for yes in [
        "match.any.sync / match.all.sync",
        "WARP_SZ (warpSize)",
        "ld.shared (32-bit address)",
        "prefetch / prefetchu",
    ] {
        assert!(status(yes), "{yes}");
    }
    for no in ["wmma", "mbarrier", "brx.idx", "tld4"] {
        assert!(!status(no), "{no}");
    }
    assert!(rows.iter().all(|r| r.supported == r.note.is_empty()));
}
