//! The standalone experiments of `docs/gpu` on the emulator: their `.cu` compiled to PTX with the
//! project's nvcc, their kernels launched as their own `main` launches them on a GPU, and what
//! `main` prints computed from the emulator's results in the same way. The constants here are
//! the experiments' own, which their host code states beside the kernels.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use device::{Arg, DevBuf, Device, EmuDevice, LaunchConfig, LaunchOutcome, ModuleId};
use emulator::{GpuConfig, TexAddress, TexFilter, TexFormat, TextureDesc};
use trace::{CacheCounters, Dim3};

use crate::error::CalibrationError;
use crate::table::{Closing, DramPattern, FenceAccess, RECORDS_DIR, SharedOp, TexCount};

/// An experiment's kernels, compiled and loaded on an emulator device.
struct Experiment {
    file: &'static str,
    dev: EmuDevice,
    module: ModuleId,
    /// (mangled name, its demangled name without parameters and return type, registers per
    /// thread)
    entries: Vec<(String, String, u32)>,
}

impl Experiment {
    fn load(root: &Path, file: &'static str, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let path: PathBuf = root.join(RECORDS_DIR).join(file);
        let compiled =
            kernels::compile_ptx(&path, kernels::layout::WS_OFF, false).map_err(|source| {
                CalibrationError::Compile {
                    path: path.clone(),
                    source,
                }
            })?;
        // Silicon ran the experiment compiled for its own target, whose register counts set
        // how many blocks fit an SM.
        let usage = match cfg.sm.sass_arch {
            Some(arch) => kernels::ptx_usage_for(&compiled.ptx, arch)
                .map_err(|source| CalibrationError::Compile { path, source })?,
            None => compiled.entries,
        };
        let entries = usage
            .iter()
            .map(|e| {
                let bare = cpp_demangle::DemangleOptions::new()
                    .no_params()
                    .no_return_type();
                let demangled = cpp_demangle::Symbol::new(e.name.as_str())
                    .ok()
                    .and_then(|s| s.demangle_with_options(&bare).ok())
                    .unwrap_or_else(|| e.name.clone());
                (e.name.clone(), demangled, e.registers)
            })
            .collect();
        let mut dev = EmuDevice::new(cfg.clone());
        let module = dev
            .load(&compiled.ptx, None)
            .map_err(|source| CalibrationError::Device {
                what: format!("loading {file}"),
                source,
            })?;
        Ok(Experiment {
            file,
            dev,
            module,
            entries,
        })
    }

    /// The entry whose demangled name is `name`, e.g. `k<3>` for the template's instance; its
    /// mangled name and registers.
    fn entry(&self, name: &str) -> Result<(String, u32), CalibrationError> {
        self.entries
            .iter()
            .find(|(_, d, _)| d == name)
            .map(|(m, _, r)| (m.clone(), *r))
            .ok_or_else(|| CalibrationError::NoEntry {
                what: self.file.into(),
                entry: name.into(),
            })
    }

    fn alloc(&mut self, bytes: u64) -> Result<DevBuf, CalibrationError> {
        let file = self.file;
        self.dev
            .alloc(bytes)
            .map_err(|source| CalibrationError::Device {
                what: format!("{file}: allocating {bytes} bytes"),
                source,
            })
    }

    fn launch(
        &mut self,
        name: &str,
        grid: u32,
        block: u32,
        args: &[Arg],
    ) -> Result<LaunchOutcome, CalibrationError> {
        let (grid, block) = (Dim3::new(grid, 1, 1), Dim3::new(block, 1, 1));
        self.launch_shaped(name, grid, block, 0, args)
    }

    /// [`Experiment::launch`] with a grid and block of any shape and dynamic shared memory.
    fn launch_shaped(
        &mut self,
        name: &str,
        grid: Dim3,
        block: Dim3,
        dynamic_shared_bytes: u32,
        args: &[Arg],
    ) -> Result<LaunchOutcome, CalibrationError> {
        let (entry, regs) = self.entry(name)?;
        let cfg = LaunchConfig {
            grid,
            block,
            dynamic_shared_bytes,
            regs_per_thread: regs,
        };
        self.dev
            .launch(self.module, &entry, &cfg, args)
            .map_err(|source| CalibrationError::Device {
                what: format!("{}: {name}", self.file),
                source,
            })
    }

    /// A kernel's `long long` result: the first 8 bytes of `buf`.
    fn read_i64(&mut self, buf: &DevBuf) -> Result<i64, CalibrationError> {
        self.read_i64_at(buf, 0)
    }

    /// The `k`-th `long long` of `buf`.
    fn read_i64_at(&mut self, buf: &DevBuf, k: usize) -> Result<i64, CalibrationError> {
        self.download_i64(buf)?
            .get(k)
            .copied()
            .ok_or_else(|| CalibrationError::Result {
                what: self.file.into(),
                reason: format!("its result is shorter than {} bytes", 8 * (k + 1)),
            })
    }

    /// `buf` as little-endian 64-bit words.
    fn download_i64(&mut self, buf: &DevBuf) -> Result<Vec<i64>, CalibrationError> {
        let bytes = self.download(buf)?;
        Ok(bytes
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect())
    }

    /// The mean of the 32-bit windows in `buf`, the first (cold) one left out, as the
    /// experiments' `report` prints it.
    fn warm_mean(&mut self, buf: &DevBuf) -> Result<f64, CalibrationError> {
        let windows: Vec<f64> = self
            .download_u32(buf)?
            .into_iter()
            .skip(1)
            .map(f64::from)
            .collect();
        Ok(windows.iter().sum::<f64>() / windows.len() as f64)
    }

    /// `buf` as little-endian 32-bit words.
    fn download_u32(&mut self, buf: &DevBuf) -> Result<Vec<u32>, CalibrationError> {
        let bytes = self.download(buf)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// A texture object over `data`, as `cudaCreateTextureObject` gives `main` one.
    fn texture(
        &mut self,
        desc: &emulator::TextureDesc,
        data: &[u8],
    ) -> Result<u64, CalibrationError> {
        let file = self.file;
        self.dev
            .create_texture(desc, data)
            .map_err(|source| CalibrationError::Device {
                what: format!("{file}: creating a texture"),
                source,
            })
    }

    fn upload(&mut self, buf: &DevBuf, bytes: &[u8]) -> Result<(), CalibrationError> {
        let file = self.file;
        self.dev
            .upload(buf, bytes)
            .map_err(|source| CalibrationError::Device {
                what: format!("{file}: writing its input"),
                source,
            })
    }

    /// Writes `data` to the module's `__constant__` or global variable `name`, as
    /// `cudaMemcpyToSymbol` does.
    fn write_symbol(&mut self, name: &str, data: &[u8]) -> Result<(), CalibrationError> {
        let file = self.file;
        self.dev
            .write_symbol(self.module, name, data)
            .map_err(|source| CalibrationError::Device {
                what: format!("{file}: writing {name}"),
                source,
            })
    }

    fn download(&mut self, buf: &DevBuf) -> Result<Vec<u8>, CalibrationError> {
        let mut bytes = vec![0u8; buf.bytes as usize];
        let file = self.file;
        self.dev
            .download(buf, &mut bytes)
            .map_err(|source| CalibrationError::Device {
                what: format!("{file}: reading results"),
                source,
            })?;
        Ok(bytes)
    }
}

/// A texture of `main`'s: clamped, unnormalised coordinates, filtered or point-sampled.
fn texture_desc(
    dims: u8,
    extent: [u32; 3],
    format: TexFormat,
    channels: u8,
    normalized_read: bool,
    linear: bool,
) -> TextureDesc {
    TextureDesc {
        dims,
        width: extent[0],
        height: extent[1],
        depth: extent[2],
        format,
        channels,
        normalized_read,
        filter: if linear {
            TexFilter::Linear
        } else {
            TexFilter::Point
        },
        address: [TexAddress::Clamp; 3],
        normalized_coords: false,
        linear_buffer: None,
    }
}

/// A texture experiment's cases: one launch each, after an L2 flush as Nsight Compute flushes
/// the caches before each kernel it counts, and that launch's texture counters kept for every
/// count read of the case.
struct TexCases {
    exp: Experiment,
    counted: BTreeMap<u32, CacheCounters>,
}

impl TexCases {
    fn new(exp: Experiment) -> Self {
        TexCases {
            exp,
            counted: BTreeMap::new(),
        }
    }

    /// `count` of case `case`, which `kernel` runs on a grid of `grid` one-warp blocks of
    /// shape `block`.
    fn count(
        &mut self,
        case: u32,
        count: TexCount,
        kernel: &str,
        (grid, block): (u32, Dim3),
        args: &[Arg],
    ) -> Result<f64, CalibrationError> {
        let file = self.exp.file;
        let c = match self.counted.get(&case) {
            Some(c) => *c,
            None => {
                self.exp.dev.flush_l2();
                let o = self
                    .exp
                    .launch_shaped(kernel, Dim3::new(grid, 1, 1), block, 0, args)?;
                let c = o
                    .stats
                    .map(|s| s.mem.texture)
                    .ok_or_else(|| CalibrationError::Result {
                        what: file.into(),
                        reason: "the emulator returned no counters".into(),
                    })?;
                self.counted.insert(case, c);
                c
            }
        };
        count.of(&c).ok_or_else(|| CalibrationError::Result {
            what: file.into(),
            reason: format!("case {case} looked nothing up"),
        })
    }
}

/// `fence-variants.cu`: `REPS` windows per launch, the first (cold) one left out of the mean.
const FENCE_REPS: usize = 32;
/// Its buffer, 1 GiB: a window's loads or stores go to lines `BIG / 4 / REPS` words apart.
const FENCE_BIG: u64 = 1 << 30;

/// `fence-variants.cu`'s windows on one device, with its buffers.
pub(crate) struct FenceRig {
    exp: Experiment,
    p: DevBuf,
    sink: DevBuf,
    out: DevBuf,
}

impl FenceRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "fence-variants.cu", cfg)?;
        let p = exp.alloc(FENCE_BIG)?;
        let sink = exp.alloc(64)?;
        let out = exp.alloc(FENCE_REPS as u64 * 4)?;
        Ok(FenceRig { exp, p, sink, out })
    }

    /// The mean cycles of the warm windows of `access` closed by `closing`, as the experiment's
    /// `report` prints them. As `main` does: the L2 flushed (its 256 MiB memset), a first launch
    /// of the unclosed kernel where the case needs its lines in the L2, then the timed launch.
    pub(crate) fn window(
        &mut self,
        access: FenceAccess,
        closing: Closing,
    ) -> Result<f64, CalibrationError> {
        let v = closing.variant();
        let far = (FENCE_BIG / 4 / FENCE_REPS as u64) as i64;
        // main's base offsets in lines of 64 words: each case and closing its own lines.
        let (kernel, stride, base_lines, warm) = match access {
            FenceAccess::DramMiss => ("k", far, v, false),
            FenceAccess::L2Hit => ("k", far, 7 + v, true),
            FenceAccess::L1Hit => ("k", 0, 2 * 7 + v, true),
            FenceAccess::StoreNotInL2 => ("kst", far, 32 + v, false),
            FenceAccess::StoreInL2 => ("kst", far, 32 + 6 + v, true),
        };
        let args = [
            Arg::U64(self.p.addr + u64::from(base_lines) * 64 * 4),
            Arg::I64(stride),
            Arg::Buf(self.sink),
            Arg::Buf(self.out),
        ];
        self.exp.dev.flush_l2();
        if warm {
            self.exp.launch(&format!("{kernel}<0>"), 1, 1, &args)?;
        }
        self.exp.launch(&format!("{kernel}<{v}>"), 1, 1, &args)?;
        self.exp.warm_mean(&self.out)
    }
}

/// `shared-latency.cu`: steps per timed chase.
const SHARED_STEPS: f64 = 256.0;

/// `shared-latency.cu`'s chases on one device.
pub(crate) struct SharedRig {
    exp: Experiment,
    out: DevBuf,
    sink: DevBuf,
}

impl SharedRig {
    pub(crate) fn new(root: &Path, cfg: &GpuConfig) -> Result<Self, CalibrationError> {
        let mut exp = Experiment::load(root, "shared-latency.cu", cfg)?;
        let out = exp.alloc(8)?;
        let sink = exp.alloc(4)?;
        Ok(SharedRig { exp, out, sink })
    }

    /// Cycles per step of the chase, one launch: the emulator gives every launch the same
    /// cycles, where the GPU's median of nine stands for its steady state.
    pub(crate) fn step(&mut self, op: SharedOp, lanes: u32) -> Result<f64, CalibrationError> {
        let args = [Arg::Buf(self.out), Arg::Buf(self.sink)];
        self.exp
            .launch(&format!("chase<{}>", op.mode()), 1, lanes, &args)?;
        Ok(self.exp.read_i64(&self.out)? as f64 / SHARED_STEPS)
    }
}

/// `dram-granularity.cu`: sectors of its buffer, and sectors read per launch.
const DRAM_BUF_SECTORS: u64 = 1 << 28;
const DRAM_READS: u64 = 1 << 25;
const DRAM_UNROLL: u64 = 4;
const DRAM_BLOCK: u32 = 256;

/// What one launch of `dram-granularity.cu`'s `read_sectors` gave.
pub(crate) struct DramRun {
    /// DRAM bytes read ÷ the bytes the loads ask for (1 GiB).
    pub(crate) bytes_ratio: f64,
    /// Useful GB/s: 1 GiB over the kernel time.
    pub(crate) useful_gb_s: f64,
}

/// `0..n` in `loaded-latency.cu`'s order: Sattolo's shuffle driven by xorshift64 from its
/// seed. The chases built on it link each entry to the next, the last to the first.
fn sattolo_order(n: u32) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n).collect();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for i in (1..n as usize).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        order.swap(i, (seed % i as u64) as usize);
    }
    order
}

/// One launch of `read_sectors` with `pattern`: the grid of `main`'s `launch` (every load at
/// once), or `blocks_per_sm` blocks per SM as its parallelism section launches them. Its buffer is
/// as large as the sectors the pattern reaches: up to 8 GiB of host memory.
pub(crate) fn dram_run(
    root: &Path,
    cfg: &GpuConfig,
    pattern: DramPattern,
    blocks_per_sm: Option<u32>,
) -> Result<DramRun, CalibrationError> {
    let mut exp = Experiment::load(root, "dram-granularity.cu", cfg)?;
    let sectors = match pattern {
        DramPattern::Stride(n) => DRAM_READS * u64::from(n),
        DramPattern::Random | DramPattern::RandomRun(_) => DRAM_BUF_SECTORS,
        DramPattern::ScatteredBlocks(_) => DRAM_READS,
    };
    // The GPU's buffer holds its fill kernel's values; the loads' addresses do not depend on
    // them, and the emulator's zeros keep the sink's atomic as unreached as the fill does.
    let buf = exp.alloc(sectors * 32)?;
    let sink = exp.alloc(4)?;
    let (kind, arg) = pattern.kind_arg();
    let every_load = DRAM_READS * 2 / DRAM_UNROLL / u64::from(DRAM_BLOCK);
    let blocks = blocks_per_sm.map_or(every_load, |k| u64::from(k) * u64::from(cfg.sm.count));
    let grid = u32::try_from(blocks).map_err(|_| CalibrationError::Result {
        what: "dram-granularity.cu".into(),
        reason: "its grid does not fit a launch".into(),
    })?;
    let args = [Arg::Buf(buf), Arg::I32(kind), Arg::I32(arg), Arg::Buf(sink)];
    let o = exp.launch("read_sectors", grid, DRAM_BLOCK, &args)?;
    let read = o
        .stats
        .map(|s| s.mem.dram_bytes_read)
        .ok_or_else(|| CalibrationError::Result {
            what: "dram-granularity.cu".into(),
            reason: "the emulator returned no counters".into(),
        })?;
    let useful = (DRAM_READS * 32) as f64;
    Ok(DramRun {
        bytes_ratio: read as f64 / useful,
        useful_gb_s: useful / o.kernel_ms / 1e6,
    })
}

mod atomic_units;
mod block_placement;
mod cache_operators;
mod const_latency;
mod contention;
mod divergent_closing;
mod dummy_closing;
mod int_division;
mod issue_rates;
mod l1_port;
// Checked on the model alone until the GPU has run it and the table has its rows.
#[cfg(test)]
mod l2_replacement;
mod launch_overhead;
mod loaded_latency;
mod sm_inflight;
mod tex_footprint;
mod tex_lookup_count;
pub(crate) use atomic_units::AtomicUnitsRig;
pub(crate) use block_placement::BlockPlacementRig;
pub(crate) use cache_operators::CacheOperatorsRig;
pub(crate) use const_latency::ConstLatencyRig;
pub(crate) use contention::ContentionRig;
pub(crate) use divergent_closing::DivergentClosingRig;
pub(crate) use dummy_closing::DummyClosingRig;
pub(crate) use int_division::IntDivisionRig;
pub(crate) use issue_rates::IssueRatesRig;
pub(crate) use l1_port::L1PortRig;
pub(crate) use launch_overhead::LaunchOverheadRig;
pub(crate) use loaded_latency::LoadedLatencyRig;
pub(crate) use sm_inflight::SmInflightRig;
pub(crate) use tex_footprint::TexFootprintRig;
pub(crate) use tex_lookup_count::TexLookupCountRig;

#[cfg(test)]
mod tests {
    use super::*;

    /// The experiments count registers as silicon's build did: `dram-granularity.cu`'s reader
    /// takes 38 registers on sm_90 and 42 on sm_75 (the ptxas `scripts/setup-cuda` installs), so
    /// an H100 holds six of its 256-thread blocks per SM, not five. A GPU ptxas no longer
    /// targets (gtx480) keeps sm_75's counts.
    #[test]
    fn an_experiment_counts_registers_for_its_gpus_target() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the calibration crate sits in the workspace");
        let blocks = |preset: &str| {
            let cfg = GpuConfig::preset(preset).expect("a preset");
            let exp = Experiment::load(root, "dram-granularity.cu", &cfg)
                .unwrap_or_else(|e| panic!("{}", trace::error_chain(&e)));
            let (_, regs) = exp.entry("read_sectors").expect("the reader");
            let o = emulator::occupancy(&cfg.sm, DRAM_BLOCK, regs, 0).expect("it fits");
            (regs, o.blocks_per_sm)
        };
        assert_eq!(blocks("h100"), (38, 6));
        assert_eq!(blocks("gtx480").0, 42);
    }
}
