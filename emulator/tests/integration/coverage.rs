//! The README's PTX coverage table is what the decoder says: regenerated here from
//! `emulator::coverage_markdown` and compared with the README's copy (`WS_REGEN_COVERAGE=1`
//! rewrites the README's copy instead).

use std::path::PathBuf;

const BEGIN: &str = "<!-- ptx-coverage:begin (generated: WS_REGEN_COVERAGE=1 cargo test -p warpscope-emulator --test integration coverage) -->\n";
const END: &str = "<!-- ptx-coverage:end -->";

#[test]
fn readme_coverage_table_matches_the_decoder() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md");
    let start = readme
        .find(BEGIN)
        .expect("README has the coverage begin marker")
        + BEGIN.len();
    let end = start
        + readme[start..]
            .find(END)
            .expect("README has the end marker");
    let table = emulator::coverage_markdown();
    if std::env::var_os("WS_REGEN_COVERAGE").is_some() {
        let new = format!("{}{table}{}", &readme[..start], &readme[end..]);
        let tmp = path.with_extension("md.tmp");
        std::fs::write(&tmp, new).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        return;
    }
    assert!(
        readme[start..end] == table,
        "README's PTX coverage table is stale; regenerate it with WS_REGEN_COVERAGE=1"
    );
}

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
