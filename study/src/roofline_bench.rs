//! Roofline microbenchmarks on the emulator: the *measured* ceilings the roofline is drawn with,
//! next to the theoretical ones from the configuration.
//!
//! Why here and not in `analysis`: running kernels needs the compiled corpus (`kernels`) and the
//! emulator's engine, while `analysis` only computes with counts and the emulator's configuration
//! type (docs/ARCHITECTURE.md). This module runs the kernels of `kernels/corpus/roofline.cu` and
//! returns plain counts; `analysis::write_ceilings` turns them, with the same [`GpuConfig`], into
//! `ceilings.csv` and a figure.
//!
//! Main items: [`run_roofline_benches`], [`roofline_command`] (the `warpscope roofline`
//! subcommand: benchmarks plus `analysis::write_ceilings`), [`BenchOptions`], [`BenchResult`].
//!
//! # The benchmarks
//! - `fma`: 8 independent FMA chains per thread (16 flops per step), reduced and stored at the
//!   end, on a full-occupancy grid: the compute ceiling.
//! - `read`, `write` (kind `write_only`, see below), `copy`, `triad`: grid-stride streams over buffers of
//!   [`BenchOptions::buffer_bytes`] each (default 8 × the L2 size, so every byte comes from DRAM
//!   and written lines leave L2): the DRAM ceiling is the best of read, copy and triad. Each
//!   launch starts with an empty L2 (flushed, so that no benchmark writes back another's
//!   lines) and empty SM caches. The emulator retires a store at the L1 and its DRAM
//!   write-back does not hold the kernel up, so a write-only stream reaches several times the
//!   configured DRAM bandwidth; it is reported (kind `write_only`) but not used as a ceiling.
//! - `sweep_n<N>`: load → N flops (four chains of FMAs, N = 8·steps + 6) → store per element:
//!   I = N/8 flop per DRAM byte; the points must trace min(π, β·I).
//!
//! ```no_run
//! use study::{BenchOptions, run_roofline_benches};
//! let cfg = emulator::GpuConfig::preset("gtx480").unwrap();
//! for r in run_roofline_benches(&cfg, &BenchOptions::default()).unwrap() {
//!     println!("{} {} flops, {} DRAM bytes, {} cycles", r.bench, r.flops, r.dram_bytes, r.cycles);
//! }
//! ```

use crate::StudyError;
use emulator::{Emulator, GpuConfig, LaunchParams, LaunchStats, Module, ModuleId};
use std::path::Path;

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOptions {
    /// Bytes per stream buffer; `None` = 8 × the L2 size.
    pub buffer_bytes: Option<u64>,
    /// FMA steps per chain of the compute benchmark.
    pub fma_iters: u32,
    /// FMA steps per chain of the intensity sweep (4 chains: N = 8·steps + 6 flops per element).
    pub sweep_fmas: Vec<u32>,
    /// Threads per block.
    pub block: u32,
    /// The runaway guards of each benchmark launch.
    pub limits: device::EmuLimits,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            buffer_bytes: None,
            fma_iters: 256,
            sweep_fmas: vec![0, 1, 2, 4, 8, 16, 32],
            block: 256,
            limits: device::EmuLimits::default(),
        }
    }
}

/// One benchmark's counts.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BenchResult {
    /// `fma`, `read`, `write`, `copy`, `triad`, `sweep_n<N>`.
    pub bench: String,
    /// `compute`, `bandwidth` or `sweep`.
    pub kind: String,
    /// Thread-level flops the emulator counted.
    pub flops: u64,
    /// DRAM bytes read + written.
    pub dram_bytes: u64,
    pub cycles: u64,
    /// Elements per buffer (0 for `fma`).
    pub elements: u64,
    /// Everything the launch counted (as `run.json`'s `emulator` field).
    pub stats: trace::EmuCounters,
}

const SOURCE: &str = "roofline";

fn err(bench: &str, e: impl std::fmt::Display) -> StudyError {
    StudyError::Bench {
        bench: bench.to_string(),
        reason: e.to_string(),
    }
}

fn a64(v: u64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn a32(v: i32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn f32a(v: f32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

struct Rig {
    emu: Emulator,
    m: ModuleId,
    block: u32,
    max_warp_instructions: u64,
    entries: &'static [kernels::EntryInfo],
}

impl Rig {
    /// Launches `kernel` on exactly one full wave: SMs × resident blocks at its ptxas register
    /// count, so no SM idles in a tail wave (which would pull every ceiling down); the L2
    /// flushed first.
    fn launch(&mut self, kernel: &str, args: Vec<Vec<u8>>) -> Result<LaunchStats, StudyError> {
        let cfg = self.emu.config();
        let regs = self
            .entries
            .iter()
            .find(|e| e.name == kernel)
            .map_or(32, |e| e.registers_for(cfg.sm.sass_arch).max(1));
        let occ = emulator::occupancy(&cfg.sm, self.block, regs, 0).map_err(|e| err(kernel, e))?;
        let grid = cfg.sm.count * occ.blocks_per_sm.max(1);
        let p = LaunchParams {
            grid: [grid, 1, 1],
            block: [self.block, 1, 1],
            dynamic_shared_bytes: 0,
            regs_per_thread: regs,
            args,
            max_warp_instructions: self.max_warp_instructions,
        };
        self.emu.flush_l2();
        self.emu
            .launch(self.m, kernel, &p)
            .map_err(|e| err(kernel, e))
    }

    /// A buffer of `n` floats, all 1.0 (so sums stay non-negative and finite).
    fn buffer(&mut self, n: u64, bench: &str) -> Result<u64, StudyError> {
        let a = self.emu.alloc(n * 4).map_err(|e| err(bench, e))?;
        let ones: Vec<u8> = 1.0f32.to_le_bytes().repeat(n as usize);
        self.emu.write(a, &ones).map_err(|e| err(bench, e))?;
        Ok(a)
    }
}

fn result(bench: &str, kind: &str, s: &LaunchStats, elements: u64) -> BenchResult {
    BenchResult {
        bench: bench.to_string(),
        kind: kind.to_string(),
        flops: s.instructions_by_class.get("flops").copied().unwrap_or(0),
        dram_bytes: s.mem.dram_bytes_read + s.mem.dram_bytes_written,
        cycles: s.cycles,
        elements,
        stats: s.clone(),
    }
}

/// Runs every benchmark on a fresh emulator of `cfg`, in a fixed order (fma, read, write, copy,
/// triad, then the sweep by N).
pub fn run_roofline_benches(
    cfg: &GpuConfig,
    opts: &BenchOptions,
) -> Result<Vec<BenchResult>, StudyError> {
    let k = kernels::find_corpus(SOURCE).ok_or_else(|| err(SOURCE, "corpus kernel not built"))?;
    let module = Module::parse(k.ptx).map_err(|e| err(SOURCE, e))?;
    let mut emu = Emulator::new(cfg.clone());
    emu.set_watch(opts.limits.watch.clone());
    let m = emu.load(&module).map_err(|e| err(SOURCE, e))?;
    let block = opts.block.clamp(32, cfg.sm.max_threads_per_block);
    let mut rig = Rig {
        emu,
        m,
        block,
        max_warp_instructions: opts.limits.max_warp_instructions,
        entries: k.entries,
    };
    let bytes = opts.buffer_bytes.unwrap_or(8 * cfg.l2.size_bytes).max(4096);
    let n = bytes / 4;
    let n_i32 = i32::try_from(n).map_err(|_| err("read", format!("{n} elements exceed i32")))?;
    // Room for one value per thread of the largest possible grid.
    let threads = u64::from(cfg.sm.count) * u64::from(cfg.sm.max_threads);
    let mut out = Vec::new();

    let o = rig.buffer(threads, "fma")?;
    let s = rig.launch(
        "roof_fma",
        vec![a64(o), a32(opts.fma_iters as i32), f32a(0.999), f32a(0.001)],
    )?;
    out.push(result("fma", "compute", &s, 0));

    let a = rig.buffer(n, "read")?;
    let b = rig.buffer(n, "read")?;
    let c = rig.buffer(n, "read")?;
    let s = rig.launch("roof_read", vec![a64(a), a64(o), a32(n_i32)])?;
    out.push(result("read", "bandwidth", &s, n));
    let s = rig.launch("roof_write", vec![a64(a), f32a(2.0), a32(n_i32)])?;
    // Stores retire at the L1 and their DRAM write-backs do not hold the kernel up in the
    // emulator, so a write-only stream is reported but is no measure of DRAM bandwidth.
    out.push(result("write", "write_only", &s, n));
    let s = rig.launch("roof_copy", vec![a64(a), a64(b), a32(n_i32)])?;
    out.push(result("copy", "bandwidth", &s, n));
    let s = rig.launch(
        "roof_triad",
        vec![a64(a), a64(b), a64(c), f32a(3.0), a32(n_i32)],
    )?;
    out.push(result("triad", "bandwidth", &s, n));
    for &fmas in &opts.sweep_fmas {
        let s = rig.launch(
            "roof_sweep",
            vec![
                a64(a),
                a64(b),
                a32(n_i32),
                a32(fmas as i32),
                f32a(0.999),
                f32a(0.001),
            ],
        )?;
        out.push(result(&format!("sweep_n{}", 8 * fmas + 6), "sweep", &s, n));
    }
    Ok(out)
}

/// `warpscope roofline`: runs the benchmarks on `cfg` and writes `ceilings.csv`, `benches.json`
/// (every count) and, when `figures`, `roofline_ceilings.{png,svg}` into `out_dir`; returns the
/// measured ceilings (as % of the theoretical ones) for the command to print.
pub fn roofline_command(
    cfg: &GpuConfig,
    opts: &BenchOptions,
    out_dir: &Path,
    figures: bool,
) -> Result<analysis::MeasuredCeilings, StudyError> {
    let res = run_roofline_benches(cfg, opts)?;
    let benches: Vec<analysis::BenchMeasurement> = res
        .iter()
        .map(|r| analysis::BenchMeasurement {
            bench: r.bench.clone(),
            kind: r.kind.clone(),
            ops: r.flops,
            bytes_dram: r.dram_bytes,
            cycles: r.cycles,
        })
        .collect();
    let m = analysis::write_ceilings(out_dir, cfg, &benches, figures)
        .map_err(|e| err("ceilings", e))?;
    let json = serde_json::to_string_pretty(&res).map_err(|e| err("ceilings", e))? + "\n";
    trace::write_bytes_atomic(&out_dir.join("benches.json"), json.as_bytes())?;
    trace::write_bytes_atomic(&out_dir.join("config.toml"), cfg.to_toml().as_bytes())?;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sweep_spans_the_ridge_of_every_preset() {
        // I = N/8 must cover both sides of π/β for the sweep to show the bend of the roof.
        let o = BenchOptions::default();
        let n = |f: u32| f64::from(8 * f + 6);
        let lo = n(*o.sweep_fmas.first().unwrap()) / 8.0;
        let hi = n(*o.sweep_fmas.last().unwrap()) / 8.0;
        for name in GpuConfig::preset_names() {
            let c = GpuConfig::preset(name).unwrap();
            let lanes =
                f64::from(c.sm.warp_schedulers) * 32.0 / f64::from(c.pipeline.fp32_issue_cycles);
            let ridge = f64::from(c.sm.count) * lanes * 2.0 / c.dram.bandwidth_bytes_per_cycle;
            assert!(lo < ridge && ridge < hi, "{name}: ridge {ridge}");
        }
    }
}
