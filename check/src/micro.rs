//! Steps 3 and 4 (microbenchmarks): the probes on silicon. `kernels/micro/pointer_chase.cu`, as
//! embedded (`kernels::micro()`: SASS for the GPU, PTX for the emulator), measures the cycles of
//! a dependent pointer chase whose chain lives in L1, in L2 or in DRAM (fence mode), the same
//! chase through the texture path with every fetch a hit, an L2 hit or a DRAM miss (the texture
//! path's latencies, which the volume renderer's frames wait on), and independent loads in each
//! probe mode: DRAM misses, where naive must report a small fraction of fence and dummy (Kanda et
//! al. 2011), and L1 hits.
//!
//! The chains are laid out from the emulator preset's cache geometry (the GPU does not report its
//! L1): L1, 16 lines warmed once; L2, a random cycle over 4× the L1 capacity (at most half the L2),
//! warmed once, so an LRU L1 misses every step; DRAM, never-touched lines 4 KiB apart, after a
//! write of twice the L2 size that evicts whatever the upload left in it. The texture chases
//! use one 1D array of [`TEX_CHASE_TEXELS`] floats, 512 KiB (at most half the L2): its L2 chain
//! is a random cycle over all its 128-byte lines, twice the largest L1 an SM can have (256 KiB on
//! Hopper), so that no replacement policy keeps much of it; its DRAM chain visits lines 4 KiB
//! apart once.

use crate::error::CheckError;
use device::{Arg, Device, LaunchConfig};
use emulator::TextureDesc;
use instrument::{Probe, ProbedArg, WarpSelection, launch_probed};
use kernels::corpus_cases::Rng;
use kernels::layout::{WS_DUMMY, WS_FENCE, WS_NAIVE};
use serde::{Deserialize, Serialize};
use trace::{Dim3, ProbeMode, Region, SiteInfo};

/// Steps per probe in `pointer_chase` (CHASE_STEPS_PER_PROBE in the .cu).
const STEPS_PER_PROBE: u32 = 32;
/// Probes per chase and loads per independent-load case.
const CHASE_PROBES: u32 = 8;
const LOADS: u32 = 16;
/// Texels of the texture chases' 1D array: 512 KiB of floats, the widest 1D CUDA array that
/// compute capability 5.0 and later allow (131,072 texels).
const TEX_CHASE_TEXELS: u64 = 131_072;
/// Probes of the texture DRAM chase: its 4 KiB steps leave room for 127 fresh lines, three
/// probes of 32 steps and the one before them.
const TEX_DRAM_PROBES: u32 = 3;

/// One microbenchmark case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MicroCase {
    ChaseL1,
    ChaseL2,
    ChaseDram,
    /// A chase through a 1D texture whose every fetch hits: the texture path's hit latency.
    ChaseTexture,
    /// The same chase where every fetch misses the L1 and hits the L2.
    ChaseTextureL2,
    /// The same chase where every fetch misses to DRAM.
    ChaseTextureDram,
    /// Independent loads that miss to DRAM, per mode.
    LoadsDram,
    /// The same word loaded again and again: L1 hits after the first, per mode.
    LoadsL1,
}

impl MicroCase {
    pub fn label(self) -> &'static str {
        match self {
            MicroCase::ChaseL1 => "pointer chase, L1",
            MicroCase::ChaseL2 => "pointer chase, L2",
            MicroCase::ChaseDram => "pointer chase, DRAM",
            MicroCase::ChaseTexture => "pointer chase, texture hits",
            MicroCase::ChaseTextureL2 => "pointer chase, texture L2 hits",
            MicroCase::ChaseTextureDram => "pointer chase, texture DRAM misses",
            MicroCase::LoadsDram => "independent loads, DRAM misses",
            MicroCase::LoadsL1 => "repeated load, L1 hits",
        }
    }

    /// The level a pointer chase lives in (`L1`, `L2`, `DRAM`, `texture`, `texture L2`,
    /// `texture DRAM`); None for the other cases.
    pub fn chase_level(self) -> Option<&'static str> {
        match self {
            MicroCase::ChaseL1 => Some("L1"),
            MicroCase::ChaseL2 => Some("L2"),
            MicroCase::ChaseDram => Some("DRAM"),
            MicroCase::ChaseTexture => Some("texture"),
            MicroCase::ChaseTextureL2 => Some("texture L2"),
            MicroCase::ChaseTextureDram => Some("texture DRAM"),
            MicroCase::LoadsDram | MicroCase::LoadsL1 => None,
        }
    }
}

/// One measurement: cycles per access (per chase step, or per probed load).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MicroRow {
    pub case: MicroCase,
    pub mode: ProbeMode,
    pub mean_cycles: f64,
    pub min_cycles: f64,
    pub max_cycles: f64,
    /// The preset's configured end-to-end latency for this level, where there is one.
    pub configured_cycles: Option<u64>,
    pub samples: usize,
}

/// The plan of step 3: (case, mode), in the order of the report.
pub const PLAN: [(MicroCase, ProbeMode); 12] = [
    (MicroCase::ChaseL1, ProbeMode::Fence),
    (MicroCase::ChaseL2, ProbeMode::Fence),
    (MicroCase::ChaseDram, ProbeMode::Fence),
    (MicroCase::ChaseTexture, ProbeMode::Fence),
    (MicroCase::ChaseTextureL2, ProbeMode::Fence),
    (MicroCase::ChaseTextureDram, ProbeMode::Fence),
    (MicroCase::LoadsDram, ProbeMode::Naive),
    (MicroCase::LoadsDram, ProbeMode::Fence),
    (MicroCase::LoadsDram, ProbeMode::Dummy),
    (MicroCase::LoadsL1, ProbeMode::Naive),
    (MicroCase::LoadsL1, ProbeMode::Fence),
    (MicroCase::LoadsL1, ProbeMode::Dummy),
];

fn ws_mode(mode: ProbeMode) -> Result<u32, CheckError> {
    match mode {
        ProbeMode::Naive => Ok(WS_NAIVE),
        ProbeMode::Fence => Ok(WS_FENCE),
        ProbeMode::Dummy => Ok(WS_DUMMY),
        other => Err(CheckError::NoMicroBuild { mode: other.name() }),
    }
}

/// Runs one case on `dev` (a fresh device per case keeps the caches of one case out of the next).
pub fn measure(
    dev: &mut dyn Device,
    cfg: &emulator::GpuConfig,
    case: MicroCase,
    mode: ProbeMode,
) -> Result<MicroRow, CheckError> {
    let build = kernels::find_micro("pointer_chase", ws_mode(mode)?).ok_or_else(|| {
        CheckError::NotEmbedded {
            what: "the pointer_chase microbenchmark (kernels/micro)".into(),
        }
    })?;
    let module = dev.load(build.ptx, Some(build.fatbin))?;
    let lat = cfg.unloaded_latencies();
    let line = u64::from(cfg.l1.line_bytes);
    let (kernel, args, repeats, per) = match case {
        MicroCase::ChaseL1 | MicroCase::ChaseL2 | MicroCase::ChaseDram => {
            let timed = u64::from(STEPS_PER_PROBE * CHASE_PROBES);
            let (offsets, warm) = match case {
                MicroCase::ChaseL1 => ((0..16).map(|i| i * line).collect(), 16),
                MicroCase::ChaseL2 => {
                    let l1 = u64::from(cfg.l1.size_bytes);
                    let bytes = (4 * l1).min(cfg.l2.size_bytes / 2);
                    let n = bytes / line;
                    (random_cycle(n).into_iter().map(|i| i * line).collect(), n)
                }
                _ => ((0..=timed).map(|i| i * 4096).collect::<Vec<u64>>(), 0),
            };
            let span = offsets.iter().max().copied().unwrap_or(0) + 8;
            let chain = dev.alloc(span)?;
            let mut bytes = vec![0u8; span as usize];
            for (i, off) in offsets.iter().enumerate() {
                let next = chain.addr + offsets[(i + 1) % offsets.len()];
                bytes[*off as usize..*off as usize + 8].copy_from_slice(&next.to_le_bytes());
            }
            dev.upload(&chain, &bytes)?;
            if case == MicroCase::ChaseDram {
                evict_l2(dev, cfg)?;
            }
            let out = dev.alloc(8)?;
            let args = vec![
                Arg::Buf(chain),
                Arg::I32(warm as i32),
                Arg::I32(CHASE_PROBES as i32),
                Arg::Buf(out),
            ];
            ("pointer_chase", args, CHASE_PROBES, STEPS_PER_PROBE)
        }
        MicroCase::ChaseTexture | MicroCase::ChaseTextureL2 | MicroCase::ChaseTextureDram => {
            // One node per cache line (a texel at the line's start), each holding the next
            // node's coordinate (its index + 0.5, a texel's centre).
            let per_line = line / 4;
            let (width, nodes, warm, probes): (u64, Vec<u64>, u64, u32) = match case {
                // 16 lines warmed once: every timed fetch hits.
                MicroCase::ChaseTexture => (16 * per_line, (0..16).collect(), 16, CHASE_PROBES),
                MicroCase::ChaseTextureL2 => {
                    let texels = TEX_CHASE_TEXELS.min(cfg.l2.size_bytes / 2 / 4);
                    let lines = texels / per_line;
                    (texels, random_cycle(lines), lines, CHASE_PROBES)
                }
                _ => {
                    let steps = u64::from(TEX_DRAM_PROBES * STEPS_PER_PROBE);
                    let apart = 4096 / line;
                    let nodes = (0..=steps).map(|i| i * apart).collect();
                    (TEX_CHASE_TEXELS, nodes, 0, TEX_DRAM_PROBES)
                }
            };
            let mut texels = vec![0f32; width as usize];
            for (i, &node) in nodes.iter().enumerate() {
                let next = nodes[(i + 1) % nodes.len()];
                texels[(node * per_line) as usize] = (next * per_line) as f32 + 0.5;
            }
            let bytes: Vec<u8> = texels.iter().flat_map(|v| v.to_le_bytes()).collect();
            let desc = TextureDesc::floats(width as u32);
            let tex = dev.create_texture(&desc, &bytes)?;
            if case == MicroCase::ChaseTextureDram {
                evict_l2(dev, cfg)?;
            }
            let out = dev.alloc(8)?;
            let args = vec![
                Arg::Tex(tex),
                Arg::F32((nodes[0] * per_line) as f32 + 0.5),
                Arg::I32(warm as i32),
                Arg::I32(probes as i32),
                Arg::Buf(out),
            ];
            ("texture_chase", args, probes, STEPS_PER_PROBE)
        }
        MicroCase::LoadsDram => {
            let stride_words = 1024u32; // 4 KiB: every load a new line
            let p = dev.alloc(u64::from(LOADS * stride_words) * 4)?;
            evict_l2(dev, cfg)?;
            let out = dev.alloc(4)?;
            let args = vec![
                Arg::Buf(p),
                Arg::I32(stride_words as i32),
                Arg::I32(LOADS as i32),
                Arg::Buf(out),
            ];
            ("strided_loads", args, LOADS, 1)
        }
        MicroCase::LoadsL1 => {
            let p = dev.alloc(4)?;
            dev.upload(&p, &[1, 0, 0, 0])?;
            let out = dev.alloc(4)?;
            let args = vec![Arg::Buf(p), Arg::I32(LOADS as i32), Arg::Buf(out)];
            ("repeated_loads", args, LOADS, 1)
        }
    };
    let regs = build
        .entry(kernel)
        .map_or(32, |e| e.registers_for(dev.register_target()));
    let launch = LaunchConfig {
        grid: Dim3::new(1, 1, 1),
        block: Dim3::new(32, 1, 1),
        dynamic_shared_bytes: 0,
        regs_per_thread: regs,
    };
    let probe = Probe {
        mode,
        trace_warps: WarpSelection::all(),
        time_warps: WarpSelection::all(),
        access_period: instrument::AccessPeriod::ALL,
        slots_per_warp: repeats,
        sites: vec![SiteInfo::new(
            0,
            case.label(),
            if case.chase_level().is_some_and(|l| l.starts_with("texture")) {
                Region::Texture
            } else {
                Region::Global
            },
        )],
    };
    // Every micro kernel takes its ws::Log last.
    let args: Vec<ProbedArg> = (args.into_iter().map(ProbedArg::from))
        .chain([ProbedArg::Log])
        .collect();
    let probed = launch_probed(dev, module, kernel, &launch, &args, &probe)?;
    let warp = probed
        .trace
        .warps
        .first()
        .ok_or(CheckError::NoWarp { kernel })?;
    let mut cycles: Vec<f64> = warp
        .records
        .iter()
        .map(|r| r.duration().0 as f64 / f64::from(per))
        .collect();
    if cycles.len() != repeats as usize {
        return Err(CheckError::Records {
            kernel,
            records: cycles.len(),
            expected: repeats,
        });
    }
    // The first repeated load misses (it brings the word in): not an L1 hit.
    if case == MicroCase::LoadsL1 {
        cycles.remove(0);
    }
    let configured = match case {
        MicroCase::ChaseL1 | MicroCase::LoadsL1 => Some(lat.l1_hit),
        MicroCase::ChaseL2 => Some(lat.l2_hit),
        MicroCase::ChaseDram | MicroCase::LoadsDram => Some(lat.dram),
        MicroCase::ChaseTexture => Some(lat.texture_hit),
        // A texture miss: the texture pipeline, then the L1's miss to the level below.
        MicroCase::ChaseTextureL2 => Some(lat.texture_hit + lat.l2_hit - lat.l1_hit),
        MicroCase::ChaseTextureDram => Some(lat.texture_hit + lat.dram - lat.l1_hit),
    };
    Ok(MicroRow {
        case,
        mode,
        mean_cycles: cycles.iter().sum::<f64>() / cycles.len() as f64,
        min_cycles: cycles.iter().copied().fold(f64::INFINITY, f64::min),
        max_cycles: cycles.iter().copied().fold(0.0, f64::max),
        configured_cycles: configured,
        samples: cycles.len(),
    })
}

/// Node order of a single cycle through `0..n` (Sattolo's algorithm, seeded): a chase over it
/// visits every node before it repeats, in an order no stride prefetcher follows.
fn random_cycle(n: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).collect();
    let mut rng = Rng(0x5EED);
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64) as usize;
        v.swap(i, j);
    }
    v
}

/// Writes twice the L2's size to a scratch buffer and frees it: on a GPU the copy goes through
/// the L2 and evicts what the chain's upload left there (the emulator's uploads bypass its caches).
fn evict_l2(dev: &mut dyn Device, cfg: &emulator::GpuConfig) -> Result<(), CheckError> {
    let l2 = dev.properties().l2_bytes.unwrap_or(cfg.l2.size_bytes);
    let bytes = 2 * l2;
    let scratch = dev.alloc(bytes)?;
    dev.upload(&scratch, &vec![0u8; bytes as usize])?;
    dev.free(&scratch)?;
    Ok(())
}

/// The mean cycles of `case` in `mode` among `rows`, if measured.
pub fn mean_cycles(rows: &[MicroRow], case: MicroCase, mode: ProbeMode) -> Option<f64> {
    rows.iter()
        .find(|r| r.case == case && r.mode == mode)
        .map(|r| r.mean_cycles)
}

/// Whether a probe that read `cycles` on DRAM misses timed the load's completion rather than its
/// issue: at least 5× the naive probe's `naive` (as the emulator's own tests demand).
pub fn times_completion(cycles: f64, naive: f64) -> bool {
    cycles >= 5.0 * naive
}

/// Step 3's verdicts: fenced and dummy time completion on DRAM misses ([`times_completion`]),
/// and the chase ordered L1 < L2 < DRAM.
pub fn verdicts(rows: &[MicroRow]) -> Vec<(String, bool)> {
    let get = |case, mode| mean_cycles(rows, case, mode);
    let mut v = Vec::new();
    if let (Some(naive), Some(fence), Some(dummy)) = (
        get(MicroCase::LoadsDram, ProbeMode::Naive),
        get(MicroCase::LoadsDram, ProbeMode::Fence),
        get(MicroCase::LoadsDram, ProbeMode::Dummy),
    ) {
        v.push((
            format!(
                "DRAM misses: fence {fence:.0} and dummy {dummy:.0} cycles are ≥ 5× naive {naive:.0}"
            ),
            times_completion(fence, naive) && times_completion(dummy, naive),
        ));
    }
    if let (Some(l1), Some(l2), Some(dram)) = (
        get(MicroCase::ChaseL1, ProbeMode::Fence),
        get(MicroCase::ChaseL2, ProbeMode::Fence),
        get(MicroCase::ChaseDram, ProbeMode::Fence),
    ) {
        v.push((
            format!("chase L1 {l1:.0} < L2 {l2:.0} < DRAM {dram:.0} cycles per step"),
            l1 < l2 && l2 < dram,
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_random_cycle_visits_every_node_once() {
        let c = random_cycle(1000);
        let mut seen = c.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..1000).collect::<Vec<u64>>());
        assert_ne!(c, seen, "a permutation, not the identity");
    }

    #[test]
    fn naive_close_to_fence_fails_the_verdict() {
        let row = |case, mode, c| MicroRow {
            case,
            mode,
            mean_cycles: c,
            min_cycles: c,
            max_cycles: c,
            configured_cycles: None,
            samples: 1,
        };
        let mut rows = vec![
            row(MicroCase::LoadsDram, ProbeMode::Naive, 40.0),
            row(MicroCase::LoadsDram, ProbeMode::Fence, 600.0),
            row(MicroCase::LoadsDram, ProbeMode::Dummy, 610.0),
        ];
        assert!(verdicts(&rows)[0].1);
        rows[0].mean_cycles = 300.0;
        assert!(!verdicts(&rows)[0].1);
    }

    /// The whole step on the emulator: the fenced chase reads the preset's latencies per level
    /// (within 10 %, as the emulator's own tests demand), and the verdicts hold.
    #[test]
    fn on_the_emulator_the_chase_reads_the_configured_latencies() {
        let cfg = emulator::GpuConfig::preset("h100").unwrap();
        let mut rows = Vec::new();
        for (case, mode) in PLAN {
            let mut dev = device::EmuDevice::new(cfg.clone());
            rows.push(measure(&mut dev, &cfg, case, mode).unwrap());
        }
        for r in rows.iter().filter(|r| r.mode == ProbeMode::Fence) {
            let want = r.configured_cycles.unwrap() as f64;
            if matches!(r.case, MicroCase::LoadsL1) {
                assert!(
                    r.mean_cycles >= want && r.mean_cycles <= want + 8.0,
                    "{r:?}"
                );
            } else {
                assert!((r.mean_cycles - want).abs() <= 0.1 * want, "{r:?}");
            }
        }
        assert!(verdicts(&rows).iter().all(|(_, ok)| *ok), "{rows:?}");
    }
}
