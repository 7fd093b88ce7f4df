//! SASS placement for kernels the PTX rewriter instrumented: every corpus kernel, instrumented
//! with `--mode auto` (and the other modes), assembled by ptxas for sm_75 and sm_90, must satisfy
//! the same placement rules as the header's builds (`kernels::placement`, kernels/tests/sass.rs):
//! each timed load completes before its closing clock read, no log store sits in a window, every
//! record store is drained before the next window, and in a sampled build an untimed warp's bare
//! copy of each load runs no clock read and no fence (a build that times every warp has none).
//!
//! Needs ptxas and cuobjdump (next to `$NVCC`); the build of the kernels crate already needs nvcc.

use instrument::rewrite::{RewriteOptions, instrument_ptx};
use kernels::layout::{WS_AUTO, WS_DUMMY, WS_FENCE, WS_NAIVE};
use kernels::placement::{check_sass_functions, sass_intervals};
use kernels::tools::{assemble_cubin, cuobjdump_sass, parse_sass};
use trace::ProbeMode;

fn check_corpus(mode: ProbeMode, ws_mode: u32, arch: u32, sampled: bool) -> usize {
    let mut errors = Vec::new();
    let mut timed = 0;
    for c in kernels::corpus() {
        let opts = RewriteOptions {
            mode,
            sampled,
            ..RewriteOptions::default()
        };
        let inst = instrument_ptx(c.ptx, &opts).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let cubin = assemble_cubin(&inst.ptx, arch)
            .unwrap_or_else(|e| panic!("{} {} sm_{arch}: {e}", c.name, mode.name()));
        let funcs = parse_sass(&cuobjdump_sass(&cubin, arch).expect("cuobjdump"));
        assert_eq!(
            funcs.len(),
            c.entries.len(),
            "{}: one SASS function per entry",
            c.name
        );
        for f in &funcs {
            timed += sass_intervals(f).map(|v| v.len()).unwrap_or(0);
        }
        errors.extend(
            check_sass_functions(&funcs, &inst.ptx, ws_mode, sampled)
                .into_iter()
                .map(|e| format!("{} {} sm_{arch}: {e}", c.name, mode.name())),
        );
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    timed
}

#[test]
fn instrumented_corpus_placement_sm75() {
    let timed = check_corpus(ProbeMode::Auto, WS_AUTO, 75, false);
    // The checks are not vacuous: the corpus has dozens of timed global and texture loads.
    assert!(timed >= 40, "only {timed} timed loads in SASS");
}

#[test]
fn instrumented_corpus_placement_sm90() {
    let timed = check_corpus(ProbeMode::Auto, WS_AUTO, 90, false);
    assert!(timed >= 40, "only {timed} timed loads in SASS");
}

#[test]
fn sampled_instrumented_corpus_placement() {
    for arch in [75, 90] {
        let timed = check_corpus(ProbeMode::Auto, WS_AUTO, arch, true);
        assert!(timed >= 40, "only {timed} timed loads in SASS");
    }
}

#[test]
fn instrumented_corpus_placement_every_mode_sm90() {
    for (mode, ws) in [
        (ProbeMode::Naive, WS_NAIVE),
        (ProbeMode::Fence, WS_FENCE),
        (ProbeMode::Dummy, WS_DUMMY),
    ] {
        check_corpus(mode, ws, 90, false);
    }
}

#[test]
fn instrumented_corpus_is_held_to_the_header_register_budget() {
    // The header's probed builds get `.maxnreg` = the bare entry's registers rounded up
    // (kernels::budget); the rewriter's output gets the same, and ptxas keeps to it.
    let mut checked = 0;
    for c in kernels::corpus() {
        let bare = kernels::ptx_usage(c.ptx).expect("ptxas on the bare corpus");
        let inst = instrument_ptx(c.ptx, &RewriteOptions::default())
            .unwrap()
            .with_register_budget(&bare);
        let probed = kernels::ptx_usage(&inst.ptx).expect("ptxas on the instrumented corpus");
        for (b, p) in bare.iter().zip(&probed) {
            assert_eq!(b.name, p.name);
            let budget = kernels::budget::register_budget(b.registers);
            assert!(
                inst.ptx.contains(&format!(".maxnreg {budget}")),
                "{}: no .maxnreg {budget}",
                b.name
            );
            assert!(
                p.registers <= budget,
                "{}: {} registers probed, budget {budget} (bare {})",
                b.name,
                p.registers,
                b.registers
            );
            // Spills the budget forces are reported, never hidden (as for the header's builds).
            eprintln!(
                "{}: bare {} registers, probed {} (budget {budget}), {} spill bytes",
                b.name, b.registers, p.registers, p.spill_bytes
            );
            checked += 1;
        }
    }
    assert!(checked >= 17, "{checked} entries");
}
