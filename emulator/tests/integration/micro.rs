//! Microbenchmarks that validate the timing model through the probe header, as a GPU user would:
//! a dependent pointer chase (kernels/micro/pointer_chase.cu) laid out to hit L1, L2 or DRAM,
//! timed with `warpscope.cuh` in fence mode, must measure the configured end-to-end latencies of
//! every preset within 10%; and for loads that miss to DRAM, WS_NAIVE must report a small
//! fraction of what WS_FENCE / WS_DUMMY report (the effect Kanda et al. 2011 is about).
//!
//! The kernel is compiled at test time with nvcc (`kernels::compile_ptx`), so the PTX is the one
//! the current header produces.

use emulator::{Emulator, GpuConfig, LaunchParams, Module};
use std::path::PathBuf;

const WS_NAIVE: u32 = 1;
const WS_FENCE: u32 = 2;
const WS_DUMMY: u32 = 3;
const WS_KIND_TRACE: u32 = 0;

/// Log layout of warpscope.cuh (global buffering): 64-byte header, then per warp a 32-byte
/// header and `slots` 16-byte records {u64 start, u32 duration, u32 site}.
const LOG_HEADER: u64 = 64;
const WARP_HEADER: u64 = 32;
const RECORD: u64 = 16;

fn ptx(mode: u32) -> String {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kernels/micro/pointer_chase.cu");
    kernels::compile_ptx(&src, mode, WS_KIND_TRACE)
        .unwrap_or_else(|e| panic!("compiling {}: {e}", src.display()))
        .ptx
}

/// Where the chain lives relative to the caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    L1,
    L2,
    Dram,
}

/// Byte offsets of the chain's nodes and how many steps warm it up.
fn chain(cfg: &GpuConfig, level: Level, timed: usize) -> (Vec<u64>, usize) {
    let line = u64::from(cfg.l1.line_bytes);
    match level {
        // 16 lines, one pass to bring them into L1 (and L2).
        Level::L1 => ((0..16).map(|i| i * line).collect(), 16),
        // ways + 1 lines that all map to one L1 set: with LRU every access misses L1, while the
        // lines stay in L2.
        Level::L2 => {
            let sets = u64::from(cfg.l1.size_bytes) / (line * u64::from(cfg.l1.ways));
            let n = u64::from(cfg.l1.ways) + 1;
            ((0..n).map(|i| i * sets * line).collect(), n as usize)
        }
        // Never-touched lines, 4 KiB apart: every step is a cold miss to DRAM.
        Level::Dram => ((0..timed as u64 + 1).map(|i| i * 4096).collect(), 0),
    }
}

/// Runs the chase; returns the per-record durations divided by `timed_steps`.
pub fn run(preset: &str, mode: u32, level: Level, timed_steps: u32, repeats: u32) -> Vec<f64> {
    let cfg = GpuConfig::preset(preset).unwrap();
    let (offsets, warm) = chain(&cfg, level, (timed_steps * repeats) as usize);
    let module = Module::parse(&ptx(mode)).expect("PTX parses");
    let mut emu = Emulator::new(cfg);
    let m = emu.load(&module).expect("module loads");
    let span = offsets.iter().max().unwrap() + 8;
    let base = emu.alloc(span).unwrap();
    // Node i points to node i+1; the last points back to the first (a cycle).
    for (i, off) in offsets.iter().enumerate() {
        let next = base + offsets[(i + 1) % offsets.len()];
        emu.write(base + off, &next.to_le_bytes()).unwrap();
    }
    let out = emu.alloc(8).unwrap();
    let slots = repeats;
    let log_bytes = LOG_HEADER + WARP_HEADER + u64::from(slots) * RECORD;
    let log = emu.alloc(log_bytes).unwrap();
    // ws::Log {buf, slots, dummy = 0, flags = 0 (global buffering), shared_offset}
    let mut log_arg = Vec::new();
    log_arg.extend(log.to_le_bytes());
    log_arg.extend(slots.to_le_bytes());
    log_arg.extend(0i32.to_le_bytes());
    log_arg.extend(0u32.to_le_bytes());
    log_arg.extend(0u32.to_le_bytes());
    let p = LaunchParams {
        grid: [1, 1, 1],
        block: [32, 1, 1],
        dynamic_shared_bytes: 0,
        regs_per_thread: 32,
        args: vec![
            base.to_le_bytes().to_vec(),
            (warm as i32).to_le_bytes().to_vec(),
            (timed_steps as i32).to_le_bytes().to_vec(),
            (repeats as i32).to_le_bytes().to_vec(),
            out.to_le_bytes().to_vec(),
            log_arg,
        ],
        max_warp_instructions: 10_000_000,
    };
    emu.launch(m, "pointer_chase", &p)
        .unwrap_or_else(|e| panic!("{preset} {level:?}: {e}"));
    let mut buf = vec![0u8; log_bytes as usize];
    emu.read(log, &mut buf).unwrap();
    let at = |o: u64| u32::from_le_bytes(buf[o as usize..o as usize + 4].try_into().unwrap());
    let count = at(LOG_HEADER + 24);
    assert_eq!(count, repeats, "{preset} {level:?}: records");
    (0..u64::from(repeats))
        .map(|r| {
            let rec = LOG_HEADER + WARP_HEADER + r * RECORD;
            assert_eq!(at(rec + 12), 0, "site");
            f64::from(at(rec + 8)) / f64::from(timed_steps)
        })
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
            let per_step = run(preset, WS_FENCE, level, 32, 4);
            for (r, &c) in per_step.iter().enumerate() {
                let err = (c - target as f64).abs() / target as f64;
                assert!(
                    err <= 0.10,
                    "{preset} {level:?} record {r}: {c:.1} cycles/step vs configured {target}"
                );
            }
        }
    }
}

#[test]
fn naive_reports_a_small_fraction_of_fenced_and_dummy_for_dram_misses() {
    for preset in ["gtx480", "h100"] {
        let dram = GpuConfig::preset(preset).unwrap().unloaded_latencies().dram as f64;
        let naive = mean(&run(preset, WS_NAIVE, Level::Dram, 1, 16));
        let fence = mean(&run(preset, WS_FENCE, Level::Dram, 1, 16));
        let dummy = mean(&run(preset, WS_DUMMY, Level::Dram, 1, 16));
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
