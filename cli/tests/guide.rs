//! The user guide's shell examples run as written: every ```` ```console ```` block of
//! `docs/guide/*.md` is a sequence of `$ warpscope …` commands whose output must match what the
//! page shows (trycmd: `...` stands for any lines, `[..]` for any part of a line). A page's
//! commands run in order in one scratch folder, a copy of `PAGE.in/` where the page has one (the
//! repository's `examples/`); `PAGE.out/` makes that folder a scratch copy. Blocks marked
//! ```` ```console,ignore ```` need a GPU or a cluster and are run by the GPU check and the Slurm
//! test instead. `TRYCMD=overwrite cargo test -p warpscope --test guide` writes the actual
//! output into the pages. The examples use small geometries but for the reuse study's (its own):
//! all of them take about 55 s in a debug build on two idle cores, most of it `warpscope reuse`
//! and `warpscope roofline`.

#[test]
fn guide_examples_run_as_shown() {
    // The compile cache of `launch` and `instrument`: a fresh one, not the user's.
    let cache = tempfile::tempdir().unwrap();
    trycmd::TestCases::new()
        .register_bin(
            "warpscope",
            std::path::Path::new(env!("CARGO_BIN_EXE_warpscope")),
        )
        .env("XDG_CACHE_HOME", cache.path().to_str().unwrap())
        .case("../docs/guide/*.md");
}
