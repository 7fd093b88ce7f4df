//! The roofline model (Williams, Waterman, Patterson, CACM 2009) of every run of a sweep: is the
//! kernel limited by arithmetic or by the bytes one level of the memory hierarchy can move, and
//! how close does it get to that limit?
//!
//! Why here: warpscope measures how long memory accesses take; the roofline says whether that
//! memory time *matters* (a memory-bound kernel runs at its bandwidth roof, a compute-bound one
//! hides it). The math is pure (no emulator), so it works on any run whose `run.json` carries the
//! emulator's counters (its `emulator` field) and whose folder has the effective `config.toml`.
//!
//! Main items: [`attainable`], [`ridge_point`], [`RooflinePoint`] / [`roofline_point`] (one
//! level), [`Ceilings`] (theoretical peaks of an emulator configuration, [`GpuConfig`], read
//! with the emulator's own loader), [`RunCounters`] (what `run.json`
//! carries), [`RunRoofline`] / [`run_roofline`] (all levels of one run), [`Level`], [`Bound`].
//!
//! # Definitions
//! - Work W: thread-level flops as the emulator counts them (`fma` = 2, add/sub/mul/div = 1, f32
//!   and f64). When integer operations dominate (`int` warp instructions × mean active lanes per
//!   warp instruction > flops), W is integer ops instead and π is the integer peak; the
//!   `work_kind` column says which (`flop` or `intop`).
//! - Bytes Q per level: L1/TEX = (read sectors of the L1 and texture caches: hits + misses + MSHR
//!   merges, plus written sectors) × the L1 sector size; L2 = the same for L2 with its sector
//!   size; DRAM = bytes read + written.
//! - Time T = cycles / clock. Intensity I = W/Q, achieved P = W/T, attainable A = min(π, β·I),
//!   ridge = π/β. A level is *memory-bound* when I < ridge, else *compute-bound*. The run's
//!   binding level is the one with the lowest attainable A (the tightest roof).
//! - Theoretical ceilings ([`Ceilings::theoretical`]): π = SMs × FP32 lanes per SM × 2 × clock,
//!   lanes per SM = warp schedulers × 32 / `fp32_issue_cycles` (the emulator's issue model);
//!   integer π = SMs × schedulers × 32 / `int_peak_issue_cycles()` × clock (one op per lane;
//!   the fastest integer unit where the preset splits integer issue);
//!   β(L1) = SMs × `l1.line_bytes` per cycle (one tag lookup per cycle per SM), β(L2) = slices ×
//!   `l2.bandwidth_bytes_per_cycle`, β(DRAM) = `dram.bandwidth_bytes_per_cycle`, × clock.
//!
//! # Example (the paper's naive GEMM)
//! ```
//! use analysis::{Bound, roofline_point};
//! // π = 4000 GFLOP/s, β = 200 GB/s; M = N = K = 1000: W = 2·10⁹ flops, Q = 8·10⁹ bytes, T = 40 ms.
//! let p = roofline_point(2e9, 8e9, 0.04, 4000e9, 200e9);
//! assert!((p.intensity - 0.25).abs() < 1e-12);
//! assert!((p.achieved - 50e9).abs() < 1e-3);
//! assert_eq!(p.bound, Bound::Memory);
//! assert!((p.achieved / 4000e9 - 0.0125).abs() < 1e-12);
//! ```

use emulator::GpuConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Attainable performance min(π, β·I) (units of π; β·I must be in the same units).
pub fn attainable(peak: f64, bandwidth: f64, intensity: f64) -> f64 {
    peak.min(bandwidth * intensity)
}

/// The intensity at which the bandwidth roof meets the compute roof: π / β.
pub fn ridge_point(peak: f64, bandwidth: f64) -> f64 {
    peak / bandwidth
}

/// Which roof limits a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// I below the ridge: the bandwidth roof.
    Memory,
    /// I at or above the ridge: the compute roof.
    Compute,
}

impl Bound {
    pub fn label(self) -> &'static str {
        match self {
            Bound::Memory => "memory-bound",
            Bound::Compute => "compute-bound",
        }
    }
}

/// One run at one level of the hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RooflinePoint {
    /// W/Q, work per byte.
    pub intensity: f64,
    /// W/T, work per second.
    pub achieved: f64,
    /// min(π, β·I).
    pub attainable: f64,
    /// π/β.
    pub ridge: f64,
    pub bound: Bound,
    /// achieved / attainable, 0–1 (can exceed 1 when the ceilings are not tight).
    pub fraction_of_attainable: f64,
    /// achieved / π.
    pub fraction_of_peak: f64,
}

/// The roofline point of work `w`, bytes `q` and time `t_s` seconds under peak `peak` (work/s)
/// and bandwidth `bandwidth` (bytes/s). Q = 0 gives an infinite intensity (compute-bound).
pub fn roofline_point(w: f64, q: f64, t_s: f64, peak: f64, bandwidth: f64) -> RooflinePoint {
    let intensity = if q > 0.0 { w / q } else { f64::INFINITY };
    let achieved = if t_s > 0.0 { w / t_s } else { 0.0 };
    let ridge = ridge_point(peak, bandwidth);
    let att = attainable(peak, bandwidth, intensity);
    RooflinePoint {
        intensity,
        achieved,
        attainable: att,
        ridge,
        bound: if intensity < ridge {
            Bound::Memory
        } else {
            Bound::Compute
        },
        fraction_of_attainable: if att > 0.0 { achieved / att } else { 0.0 },
        fraction_of_peak: if peak > 0.0 { achieved / peak } else { 0.0 },
    }
}

/// A level of the memory hierarchy with its own bandwidth roof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Level {
    L1,
    L2,
    Dram,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::L1, Level::L2, Level::Dram];

    pub fn name(self) -> &'static str {
        match self {
            Level::L1 => "l1",
            Level::L2 => "l2",
            Level::Dram => "dram",
        }
    }
}

/// What a configuration promises per SM clock cycle over the whole GPU (the formulas of the
/// module docs): the theoretical ceilings before the clock, and the hierarchy's bandwidths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PerCycle {
    pub flops: f64,
    pub int_ops: f64,
    pub l1_bytes: f64,
    pub l2_bytes: f64,
    pub dram_bytes: f64,
}

impl PerCycle {
    pub fn of(cfg: &GpuConfig) -> PerCycle {
        // FP32 or integer lanes per SM per cycle in the emulator's issue model.
        let lanes = |issue_cycles: u32| {
            f64::from(cfg.sm.warp_schedulers) * 32.0 / f64::from(issue_cycles.max(1))
        };
        let sms = f64::from(cfg.sm.count);
        PerCycle {
            // An FMA is two flops; an integer op is one.
            flops: sms * lanes(cfg.pipeline.fp32_issue_cycles) * 2.0,
            int_ops: sms * lanes(cfg.pipeline.int_peak_issue_cycles()),
            // One L1 tag lookup (one line) per cycle per SM.
            l1_bytes: sms * f64::from(cfg.l1.line_bytes),
            l2_bytes: f64::from(cfg.l2.slices) * cfg.l2.bandwidth_bytes_per_cycle,
            dram_bytes: cfg.dram.bandwidth_bytes_per_cycle,
        }
    }
}

/// Compute peaks (ops/s) and bandwidths (bytes/s) per level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ceilings {
    pub flops_per_s: f64,
    pub int_ops_per_s: f64,
    /// Indexed by [`Level`] order: L1, L2, DRAM.
    pub bytes_per_s: [f64; 3],
}

impl Ceilings {
    /// The ceilings the configuration promises (see the module docs for the formulas).
    pub fn theoretical(cfg: &GpuConfig) -> Ceilings {
        let hz = cfg.clock_mhz * 1e6;
        let p = PerCycle::of(cfg);
        Ceilings {
            flops_per_s: p.flops * hz,
            int_ops_per_s: p.int_ops * hz,
            bytes_per_s: [p.l1_bytes * hz, p.l2_bytes * hz, p.dram_bytes * hz],
        }
    }

    pub fn bandwidth(&self, level: Level) -> f64 {
        self.bytes_per_s[level as usize]
    }
}

/// What the roofline and the bound need from one run: `run.json`'s `cycles` and `clock_mhz`
/// and the emulator's counters (its `emulator` field).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct RunCounters {
    pub cycles: u64,
    pub clock_mhz: f64,
    pub warp_instructions: u64,
    pub thread_instructions: u64,
    pub instructions_by_class: BTreeMap<String, u64>,
    pub mem: trace::MemCounters,
}

impl RunCounters {
    /// The counters of a run; `None` when it has no emulator counters (a GPU run, a pipeline) or
    /// no cycles.
    pub fn from_metrics(m: &trace::RunMetrics) -> Option<RunCounters> {
        let e = m.emulator.as_ref()?;
        // run.json's top-level cycles are the run's kernel cycles; the counters' own are the same
        // launch, so either is fine: prefer the top level, which GPU-aware tools also fill.
        let c = RunCounters {
            cycles: m.cycles.unwrap_or(e.cycles),
            clock_mhz: m.clock_mhz,
            warp_instructions: match e.warp_instructions {
                0 => m.warp_instructions.unwrap_or(0),
                w => w,
            },
            thread_instructions: e.thread_instructions,
            instructions_by_class: e.instructions_by_class.clone(),
            mem: e.mem.clone(),
        };
        (c.cycles > 0).then_some(c)
    }

    /// Whether the run says how much work it did (instruction counts by class).
    pub fn has_work(&self) -> bool {
        !self.instructions_by_class.is_empty()
    }

    pub fn flops(&self) -> u64 {
        self.instructions_by_class
            .get("flops")
            .copied()
            .unwrap_or(0)
    }

    /// Integer warp instructions × mean active lanes per warp instruction (the emulator counts
    /// integer instructions per warp, not per lane).
    pub fn int_ops(&self) -> f64 {
        let int = self.instructions_by_class.get("int").copied().unwrap_or(0) as f64;
        if self.warp_instructions == 0 {
            return 0.0;
        }
        int * self.thread_instructions as f64 / self.warp_instructions as f64
    }

    /// Bytes moved at `level`; sector sizes come from the configuration.
    pub fn bytes(&self, level: Level, cfg: &GpuConfig) -> f64 {
        match level {
            Level::L1 => {
                (self.mem.l1.sectors() + self.mem.texture.sectors()) as f64
                    * f64::from(cfg.l1.sector_bytes)
            }
            Level::L2 => self.mem.l2.sectors() as f64 * f64::from(cfg.l2.sector_bytes),
            Level::Dram => (self.mem.dram_bytes_read + self.mem.dram_bytes_written) as f64,
        }
    }

    pub fn seconds(&self, clock_mhz: f64) -> f64 {
        self.cycles as f64 / (clock_mhz * 1e6)
    }
}

/// Which work a run's roofline counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkKind {
    Flop,
    Intop,
}

impl WorkKind {
    pub fn name(self) -> &'static str {
        match self {
            WorkKind::Flop => "flop",
            WorkKind::Intop => "intop",
        }
    }
}

/// The hierarchical roofline of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRoofline {
    pub work_kind: WorkKind,
    pub work: f64,
    pub seconds: f64,
    /// π of the work kind.
    pub peak: f64,
    /// Per level: (bytes, point).
    pub levels: Vec<(Level, f64, RooflinePoint)>,
    /// The level with the lowest attainable performance.
    pub binding: Level,
}

/// The roofline of one run under `ceilings` (theoretical or measured).
pub fn run_roofline(c: &RunCounters, cfg: &GpuConfig, ceilings: &Ceilings) -> RunRoofline {
    let flops = c.flops() as f64;
    let ints = c.int_ops();
    let (work_kind, work, peak) = if ints > flops {
        (WorkKind::Intop, ints, ceilings.int_ops_per_s)
    } else {
        (WorkKind::Flop, flops, ceilings.flops_per_s)
    };
    let clock = if c.clock_mhz > 0.0 {
        c.clock_mhz
    } else {
        cfg.clock_mhz
    };
    let seconds = c.seconds(clock);
    let levels: Vec<(Level, f64, RooflinePoint)> = Level::ALL
        .iter()
        .map(|&l| {
            let q = c.bytes(l, cfg);
            (
                l,
                q,
                roofline_point(work, q, seconds, peak, ceilings.bandwidth(l)),
            )
        })
        .collect();
    let binding = levels
        .iter()
        .min_by(|a, b| a.2.attainable.total_cmp(&b.2.attainable))
        .map_or(Level::Dram, |x| x.0);
    RunRoofline {
        work_kind,
        work,
        seconds,
        peak,
        levels,
        binding,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    /// Williams et al. §"naive GEMM": π = 4000 GFLOP/s, β = 200 GB/s; M = N = K = 1000 moves
    /// about 4 bytes per flop (no reuse) → I ≈ 0.25, P ≈ 50 GFLOP/s = 1.25 % of π, ridge 20.
    #[test]
    fn naive_gemm_worked_example() {
        let (m, n, k) = (1000.0f64, 1000.0, 1000.0);
        let w = 2.0 * m * n * k;
        let q = 4.0 * w; // one 4-byte operand from memory per flop
        let (pi, beta) = (4000e9, 200e9);
        let i = w / q;
        assert!(close(i, 0.25, 1e-12));
        let t = w / attainable(pi, beta, i);
        let p = roofline_point(w, q, t, pi, beta);
        assert!(close(p.achieved, 50e9, 1e-12), "{}", p.achieved);
        assert!(close(p.fraction_of_peak, 0.0125, 1e-12));
        assert!(close(p.ridge, 20.0, 1e-12));
        assert_eq!(p.bound, Bound::Memory);
        assert!(close(p.fraction_of_attainable, 1.0, 1e-12));
    }

    /// The paper's Opteron X2 (17.6 GFLOP/s) and X4 (73.6 GFLOP/s), both with 15 GB/s.
    #[test]
    fn opteron_ridge_points() {
        let x2 = ridge_point(17.6, 15.0);
        let x4 = ridge_point(73.6, 15.0);
        assert_eq!(format!("{x2:.2}"), "1.17");
        assert_eq!(format!("{x4:.2}"), "4.91");
        // A kernel at I = 2 is compute-bound on X2 and memory-bound on X4.
        assert_eq!(
            roofline_point(2.0, 1.0, 1.0, 17.6, 15.0).bound,
            Bound::Compute
        );
        assert_eq!(
            roofline_point(2.0, 1.0, 1.0, 73.6, 15.0).bound,
            Bound::Memory
        );
    }

    #[test]
    fn attainable_is_the_lower_roof() {
        assert_eq!(attainable(100.0, 10.0, 1.0), 10.0);
        assert_eq!(attainable(100.0, 10.0, 50.0), 100.0);
        let p = roofline_point(1.0, 0.0, 1.0, 5.0, 1.0);
        assert!(p.intensity.is_infinite());
        assert_eq!(p.bound, Bound::Compute);
        assert_eq!(p.attainable, 5.0);
    }

    #[test]
    fn run_counters_read_from_run_json_and_pick_the_work() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        let mut m = trace::RunMetrics::new(
            "emu",
            "k",
            trace::Dim3::new(1, 1, 1),
            trace::Dim3::new(32, 1, 1),
            trace::ProbeMode::Off,
        );
        m.cycles = Some(1000);
        m.clock_mhz = 1000.0;
        let mut e = trace::EmuCounters {
            cycles: 1000,
            warp_instructions: 10,
            thread_instructions: 320,
            ..Default::default()
        };
        e.instructions_by_class.insert("flops".into(), 64);
        e.instructions_by_class.insert("int".into(), 5);
        e.mem.l1 = trace::CacheCounters {
            requests: 1,
            sector_hits: 2,
            sector_misses: 2,
            write_sectors: 4,
            ..Default::default()
        };
        e.mem.l2.sector_misses = 2;
        e.mem.l2.write_sectors = 4;
        e.mem.dram_bytes_read = 64;
        e.mem.dram_bytes_written = 128;
        m.emulator = Some(e);
        m.write(&path).unwrap();
        let c = RunCounters::from_metrics(&trace::RunMetrics::read(&path).unwrap()).unwrap();
        assert_eq!(c.flops(), 64);
        assert_eq!(c.int_ops(), 160.0);
        let spec = super::super::example_gpu();
        assert_eq!(
            c.bytes(Level::L1, &spec),
            8.0 * f64::from(spec.l1.sector_bytes)
        );
        assert_eq!(
            c.bytes(Level::L2, &spec),
            6.0 * f64::from(spec.l2.sector_bytes)
        );
        assert_eq!(c.bytes(Level::Dram, &spec), 192.0);
        let r = run_roofline(&c, &spec, &Ceilings::theoretical(&spec));
        // 160 integer ops outweigh 64 flops.
        assert_eq!(r.work_kind, WorkKind::Intop);
        assert!(close(r.seconds, 1e-6, 1e-12));
        let min = r
            .levels
            .iter()
            .map(|l| l.2.attainable)
            .fold(f64::INFINITY, f64::min);
        let binding = r.levels.iter().find(|l| l.0 == r.binding).unwrap();
        assert_eq!(binding.2.attainable, min);
        // No counters (a GPU run), or no cycles: nothing to put on a roofline.
        let mut gpu = m.clone();
        gpu.emulator = None;
        assert!(RunCounters::from_metrics(&gpu).is_none());
        let mut idle = m.clone();
        idle.cycles = None;
        idle.emulator.as_mut().unwrap().cycles = 0;
        assert!(RunCounters::from_metrics(&idle).is_none());
        // Counters without instruction counts: memory only, and the top-level warp count.
        let mut flat = m;
        flat.warp_instructions = Some(7);
        flat.emulator = Some(trace::EmuCounters {
            mem: trace::MemCounters {
                l2: trace::CacheCounters {
                    sector_hits: 3,
                    ..Default::default()
                },
                dram_bytes_read: 32,
                ..Default::default()
            },
            ..Default::default()
        });
        let c = RunCounters::from_metrics(&flat).unwrap();
        assert!(!c.has_work());
        assert_eq!(
            (
                c.mem.l2.sector_hits,
                c.mem.dram_bytes_read,
                c.warp_instructions
            ),
            (3, 32, 7)
        );
    }
}
