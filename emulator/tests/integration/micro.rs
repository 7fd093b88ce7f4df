//! Microbenchmarks that validate the timing model through the probe header, as a GPU user would:
//! a dependent pointer chase (kernels/micro/pointer_chase.cu) laid out to hit L1, L2 or DRAM,
//! timed with `warpscope.cuh` in fence mode, must measure the configured end-to-end latencies of
//! every preset within 10%; and for loads that miss to DRAM, WS_NAIVE must report a small
//! fraction of what WS_FENCE / WS_DUMMY report (the effect Kanda et al. 2011 is about).
//!
//! The kernel is compiled at test time with nvcc (`kernels::compile_ptx`), so the PTX is the one
//! the current header produces.

use crate::common::ProbeLog;
use emulator::{Emulator, GpuConfig, LaunchParams, LaunchStats, Module};
use kernels::layout::{WS_DUMMY, WS_FENCE, WS_NAIVE, WS_WH_COUNT_OFFSET};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The microbenchmark PTX for a probe mode, compiled once per mode and test run.
fn ptx(mode: u32) -> &'static str {
    static CACHE: [OnceLock<String>; 4] = [const { OnceLock::new() }; 4];
    CACHE[mode as usize].get_or_init(|| {
        let src =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernels/micro/pointer_chase.cu");
        kernels::compile_ptx(&src, mode, false)
            .unwrap_or_else(|e| panic!("compiling {}: {e}", src.display()))
            .ptx
    })
}

/// Steps per probe in `pointer_chase` (CHASE_STEPS_PER_PROBE in the .cu).
const STEPS_PER_PROBE: u32 = 32;

/// Where the chain lives relative to the caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    L1,
    L2,
    Dram,
}

/// Byte offsets of the chain's nodes and how many steps warm it up.
fn chain(cfg: &GpuConfig, level: Level, timed: u64) -> (Vec<u64>, u64) {
    let line = u64::from(cfg.l1.line_bytes);
    match level {
        // 16 lines, one pass to bring them into L1 (and L2).
        Level::L1 => ((0..16).map(|i| i * line).collect(), 16),
        // ways + 1 lines that all map to one L1 set: with LRU every access misses L1, while the
        // lines stay in L2.
        Level::L2 => {
            let sets = u64::from(cfg.l1.size_bytes) / (line * u64::from(cfg.l1.ways));
            let n = u64::from(cfg.l1.ways) + 1;
            ((0..n).map(|i| i * sets * line).collect(), n)
        }
        // Never-touched lines, 4 KiB apart: every step is a cold miss to DRAM.
        Level::Dram => ((0..=timed).map(|i| i * 4096).collect(), 0),
    }
}

/// Launches one warp; returns the durations of its `repeats` records and the launch's stats.
fn launch(
    emu: &mut Emulator,
    ptx: &str,
    kernel: &str,
    args: Vec<Vec<u8>>,
    repeats: u32,
) -> (Vec<u32>, LaunchStats) {
    let module = Module::parse(ptx).expect("PTX parses");
    let m = emu.load(&module).expect("module loads");
    // One warp, one site, every access traced.
    let plog = ProbeLog::new(1, 1, 1, repeats, true);
    let log = emu.alloc(plog.initial.len() as u64).unwrap();
    emu.write(log, &plog.initial).unwrap();
    let mut args = args;
    args.push(plog.arg(log));
    let p = LaunchParams {
        grid: [1, 1, 1],
        block: [32, 1, 1],
        dynamic_shared_bytes: plog.shared_per_block,
        regs_per_thread: 32,
        args,
        max_warp_instructions: 10_000_000,
    };
    let stats = emu
        .launch(m, kernel, &p)
        .unwrap_or_else(|e| panic!("{kernel}: {e}"));
    let mut buf = vec![0u8; plog.initial.len()];
    emu.read(log, &mut buf).unwrap();
    assert_eq!(
        plog.header(&buf, 0, WS_WH_COUNT_OFFSET),
        repeats,
        "{kernel}: records attempted"
    );
    let records = plog.records(&buf, 0);
    assert!(records.iter().all(|r| r.0 == 0), "{kernel}: site");
    (records.into_iter().map(|r| r.1).collect(), stats)
}

/// Cycles per chase step of each of `repeats` probes of `pointer_chase`.
pub fn chase(preset: &str, mode: u32, level: Level, repeats: u32) -> Vec<f64> {
    let cfg = GpuConfig::preset(preset).unwrap();
    let (offsets, warm) = chain(&cfg, level, u64::from(STEPS_PER_PROBE * repeats));
    chase_on(cfg, mode, &offsets, warm, repeats).0
}

/// Runs `pointer_chase` on a cycle through `offsets` (bytes from the chain's base).
fn chase_on(
    cfg: GpuConfig,
    mode: u32,
    offsets: &[u64],
    warm: u64,
    repeats: u32,
) -> (Vec<f64>, LaunchStats) {
    let mut emu = Emulator::new(cfg);
    let span = offsets.iter().max().unwrap() + 8;
    let base = emu.alloc(span).unwrap();
    // Node i points to node i+1; the last points back to the first (a cycle).
    for (i, off) in offsets.iter().enumerate() {
        let next = base + offsets[(i + 1) % offsets.len()];
        emu.write(base + off, &next.to_le_bytes()).unwrap();
    }
    let out = emu.alloc(8).unwrap();
    let args = vec![
        base.to_le_bytes().to_vec(),
        (warm as i32).to_le_bytes().to_vec(),
        (repeats as i32).to_le_bytes().to_vec(),
        out.to_le_bytes().to_vec(),
    ];
    let (durations, stats) = launch(&mut emu, ptx(mode), "pointer_chase", args, repeats);
    let per_step = durations
        .into_iter()
        .map(|d| f64::from(d) / f64::from(STEPS_PER_PROBE))
        .collect();
    (per_step, stats)
}

/// Cycles of each of `repeats` probes of one cold (DRAM) load in `strided_loads`.
pub fn independent_dram_loads(preset: &str, mode: u32, repeats: u32) -> Vec<f64> {
    // 4 KiB: every load a new line
    strided(preset, mode, 1024, repeats)
}

/// Cycles of each of `repeats` probes of `strided_loads` with `stride_words` between loads.
fn strided(preset: &str, mode: u32, stride_words: u32, repeats: u32) -> Vec<f64> {
    let mut emu = Emulator::new(GpuConfig::preset(preset).unwrap());
    let p = emu.alloc(u64::from(repeats * stride_words) * 4).unwrap();
    let out = emu.alloc(4).unwrap();
    let args = vec![
        p.to_le_bytes().to_vec(),
        (stride_words as i32).to_le_bytes().to_vec(),
        (repeats as i32).to_le_bytes().to_vec(),
        out.to_le_bytes().to_vec(),
    ];
    launch(&mut emu, ptx(mode), "strided_loads", args, repeats)
        .0
        .into_iter()
        .map(f64::from)
        .collect()
}

/// Cycles of each of `repeats` probes of `repeated_loads` (the same word every time).
fn repeated_l1_loads(preset: &str, mode: u32, repeats: u32) -> Vec<f64> {
    let mut emu = Emulator::new(GpuConfig::preset(preset).unwrap());
    let p = emu.alloc(4).unwrap();
    let out = emu.alloc(4).unwrap();
    let args = vec![
        p.to_le_bytes().to_vec(),
        (repeats as i32).to_le_bytes().to_vec(),
        out.to_le_bytes().to_vec(),
    ];
    launch(&mut emu, ptx(mode), "repeated_loads", args, repeats)
        .0
        .into_iter()
        .map(f64::from)
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn fenced_pointer_chase_measures_configured_latency_per_level_on_every_preset() {
    for preset in GpuConfig::preset_names() {
        let want = GpuConfig::preset(preset).unwrap().unloaded_latencies();
        for (level, target) in [
            (Level::L1, want.l1_hit),
            (Level::L2, want.l2_hit),
            (Level::Dram, want.dram),
        ] {
            for (r, &c) in chase(preset, WS_FENCE, level, 4).iter().enumerate() {
                let err = (c - target as f64).abs() / target as f64;
                assert!(
                    err <= 0.10,
                    "{preset} {level:?} probe {r}: {c:.1} cycles/step vs configured {target}"
                );
            }
        }
    }
}

/// The closing clock waits for the timed load only: with every access traced (a 16-byte global
/// store of the log per access), a fenced or dummy-timed L1 hit still reads the L1 latency, not
/// the round trip of the previous record's store.
#[test]
fn a_timed_l1_hit_reads_the_l1_latency_on_every_preset() {
    for preset in GpuConfig::preset_names() {
        let l1 = GpuConfig::preset(preset)
            .unwrap()
            .unloaded_latencies()
            .l1_hit as f64;
        for mode in [WS_FENCE, WS_DUMMY] {
            // Every load reads p[0]; the first misses, the other 15 hit L1.
            let d = repeated_l1_loads(preset, mode, 16);
            for (r, &c) in d.iter().enumerate().skip(1) {
                assert!(
                    c >= l1 && c <= l1 + 8.0,
                    "{preset} mode {mode} access {r}: {c} cycles for an L1 hit of {l1}: {d:?}"
                );
            }
        }
    }
}

#[test]
fn naive_reports_a_small_fraction_of_fenced_and_dummy_for_dram_misses() {
    for preset in GpuConfig::preset_names() {
        let dram = GpuConfig::preset(preset).unwrap().unloaded_latencies().dram as f64;
        let naive = mean(&independent_dram_loads(preset, WS_NAIVE, 16));
        let fence = mean(&independent_dram_loads(preset, WS_FENCE, 16));
        let dummy = mean(&independent_dram_loads(preset, WS_DUMMY, 16));
        assert!(
            naive * 5.0 < fence && naive * 5.0 < dummy,
            "{preset}: naive {naive:.1} fence {fence:.1} dummy {dummy:.1}"
        );
        for (name, v) in [("fence", fence), ("dummy", dummy)] {
            assert!(
                (v - dram).abs() <= 0.10 * dram,
                "{preset}: {name} {v:.1} vs configured DRAM latency {dram}"
            );
        }
    }
}

#[test]
fn a_bigger_l1_raises_the_hit_rate_and_shortens_the_chase() {
    // A 64 KiB working set (512 lines) walked four times: it thrashes a 32 KiB LRU L1 and fits in
    // a 128 KiB one.
    let offsets: Vec<u64> = (0..512).map(|i| i * 128).collect();
    let repeats = 4 * 512 / STEPS_PER_PROBE;
    let mut results = Vec::new();
    for kib in [32u32, 128] {
        let mut cfg = GpuConfig::preset("v100").unwrap();
        cfg.l1.size_bytes = kib * 1024;
        let (per_step, stats) = chase_on(cfg, WS_FENCE, &offsets, 0, repeats);
        let rate = stats.mem.l1_hit_rate.expect("L1 was read");
        results.push((kib, rate, mean(&per_step)));
    }
    let (small, big) = (results[0], results[1]);
    assert!(big.1 > small.1 + 0.5, "hit rates {results:?}");
    assert!(big.2 < small.2, "cycles per step {results:?}");
}
