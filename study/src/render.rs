//! One frame of the study: render a volume from a viewpoint with a block shape and a probe mode,
//! and write what it measured.
//!
//! Why the bare frame too: the probes add instructions, registers and shared memory, which could
//! lower the resident blocks per SM, change what the caches see and slow the kernel — the
//! measurement perturbing what it measures. So every probed run also renders the same frame with
//! the `WS_OFF` build and records by how much measuring changed the kernel: the kernel-time ratio
//! (`overhead`), the occupancy and registers of both builds, and on the emulator the cache hit
//! rates of both; and since the probes must not change the output (condition C3), it compares the
//! two images pixel by pixel (`image_matches_bare`).
//!
//! Files of a run folder (each written atomically; `run.json` last, so a folder with a complete
//! `run.json` is a finished run):
//! - `image.png` — the probed build's image, top row first;
//! - `trace.wst` — the decoded probe log ([`trace::TraceWriter`]); absent for mode `off`;
//! - `config.toml` — the effective emulator configuration (emulator runs only);
//! - `run.json` — [`trace::RunMetrics`]: the emulator's counters in `emulator`, the probes' log
//!   in `probes`, the bare frame's figures in `overhead` and `bare`, the frame's geometry and
//!   parameters in `study`; `hit_rate_source` says where the hit rates come from (`emulator
//!   counters`, `ncu <metric>`, or why they are missing; on a GPU with ncu, `l2_hit_rate` is
//!   ncu's too, where this GPU reports it).
//!
//! ```no_run
//! use study::{render, RenderConfig};
//! let config = emulator::GpuConfig::preset("gtx480").unwrap();
//! let mut dev = device::EmuDevice::new(config);
//! let result = render(&mut dev, &RenderConfig::default(), std::path::Path::new("out")).unwrap();
//! println!("{} ms", result.metrics.kernel_ms.unwrap_or(0.0));
//! ```

use crate::StudyError;
use crate::image::Image;
use crate::ncu::{NCU_LIMIT, mean_counters, ncu_path, run_ncu};
use crate::params::{RenderParams, TRANSFER_FUNCTION};
use crate::view::{BlockShape, View};
use crate::volume::{Volume, VolumeKind, VolumeSource, check_fits, host_available_bytes};
use device::{Arg, Backend, Device, LaunchConfig, ModuleId};
use emulator::{TexAddress, TexFilter, TexFormat, TextureDesc};
use instrument::{AccessPeriod, Probe, ProbedArg, ProbedLaunch, WarpSelection, launch_probed};
use std::path::{Path, PathBuf};
use trace::{
    BareRun, Dim3, HardwareCounters, ProbeFacts, ProbeMode, ReferenceDiff, Region, RunMetrics,
    SiteInfo, StudyFacts, TRACE_FILE_NAME, TraceWriter,
};

/// The kernel's source stem in the `kernels` crate and its entry point.
pub const KERNEL_SOURCE: &str = "volume_render";
pub const KERNEL_NAME: &str = "d_render";
/// The `__constant__` the inverse view matrix goes to.
pub const VIEW_MATRIX_SYMBOL: &str = "c_invViewMatrix";

/// The kernel's two `WS_LOAD` sites.
pub fn sites() -> Vec<SiteInfo> {
    vec![
        SiteInfo::new(0, "volume sample", Region::Texture),
        SiteInfo::new(1, "transfer function", Region::Texture),
    ]
}

/// How to profile the GPU render with Nsight Compute for its texture hit rate: the program and
/// arguments that render the same frame once (the CLI passes itself with `--frames 1`).
#[derive(Debug, Clone, PartialEq)]
pub struct NcuProfile {
    pub program: PathBuf,
    pub args: Vec<String>,
}

/// Everything one render needs.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderConfig {
    pub volume: VolumeSource,
    /// Image size, density, brightness, transfer offset and scale.
    pub params: RenderParams,
    pub shape: BlockShape,
    pub view: View,
    pub mode: ProbeMode,
    /// Warps that keep per-access records (timelines, per-access views); they are timed too.
    pub trace_warps: WarpSelection,
    /// Warps that time their accesses (per-site statistics); the others run the bare path.
    pub time_warps: WarpSelection,
    /// Which of its accesses a timed warp times (traced warps included).
    pub time_accesses: AccessPeriod,
    /// Records each traced warp can keep; beyond that they are counted as dropped.
    pub slots_per_warp: u32,
    /// Launches timed after one warm-up launch on a GPU (the emulator is deterministic: 1).
    pub frames: u32,
    /// Also render the `WS_OFF` build for the overhead and the image check (C3).
    pub measure_overhead: bool,
    /// Also render the frame with the CPU reference ([`crate::render_reference`]) and record how
    /// far the device's image is from it (`reference_max_channel_diff`, `reference_pixels_differing`).
    pub compare_reference: bool,
    /// GPU only: profile with ncu for the texture hit rate (when ncu is installed).
    pub ncu: Option<NcuProfile>,
    /// The configuration the emulator device was opened with: its name is the run's preset and it
    /// is written to `config.toml`. Ignored on a GPU.
    pub emu_config: Option<emulator::GpuConfig>,
}

impl Default for RenderConfig {
    /// A 64³ shell, 128×128, 16×8, view (0,0,0), fence mode, statistics for every warp and
    /// records for every 61st warp (1024 slots: enough for a ray of 500 steps × 2 sites).
    fn default() -> Self {
        RenderConfig {
            volume: VolumeSource::Generated {
                kind: VolumeKind::Shell,
                dims: [64, 64, 64],
                seed: 1,
            },
            params: RenderParams::with_size(128, 128),
            shape: BlockShape::new(16, 8),
            view: View::new(0.0, 0.0, 0.0),
            mode: ProbeMode::Fence,
            trace_warps: default_trace_warps(),
            time_warps: WarpSelection::all(),
            time_accesses: AccessPeriod::ALL,
            slots_per_warp: 1024,
            frames: 10,
            measure_overhead: true,
            compare_reference: false,
            ncu: None,
            emu_config: None,
        }
    }
}

/// The warps a study run traces by default, for the single-warp views and the timeline exports:
/// every 61st warp, a sample spread over the whole image (the first block's warps alone may see
/// no volume: corner rays miss it). Traced warps drain each record store, so fewer is better.
///
/// Why 61: the stride must share no factor with the grid, whose sides and warps per block are
/// powers of two. Every 64th warp was warp 0 of every 16th block, and where a block row holds
/// 16 blocks or fewer (128×1, 64×2 and 32×4 at either scale) that is the image's first column
/// of blocks: every traced warp drew the left 32 pixel columns, and at (90,0,90), where those
/// rays miss the volume, a paper-scale 64×2 run kept no records at all. A prime stride walks
/// across the columns instead.
pub fn default_trace_warps() -> WarpSelection {
    WarpSelection {
        list: Vec::new(),
        every: Some(61),
    }
}

impl RenderConfig {
    /// The probes of this run's frames in `mode` (the bare frame is `ProbeMode::Off`).
    fn probe(&self, mode: ProbeMode) -> Probe {
        Probe {
            mode,
            trace_warps: self.trace_warps.clone(),
            time_warps: self.time_warps.clone(),
            access_period: self.time_accesses,
            slots_per_warp: self.slots_per_warp,
            sites: sites(),
        }
    }

    /// The run's folder name: `16x8_v0-0-0_fence`.
    pub fn run_name(&self) -> String {
        format!(
            "{}_{}_{}",
            self.shape.name(),
            self.view.slug(),
            self.mode.name()
        )
    }

    fn validate(&self) -> Result<(), StudyError> {
        let p = &self.params;
        if p.width == 0 || p.height == 0 || p.width > 16384 || p.height > 16384 {
            return Err(StudyError::Config {
                field: "image",
                value: format!("{}x{}", p.width, p.height),
                reason: "width and height must be in 1..=16384".into(),
            });
        }
        for (field, v) in [
            ("density", p.density),
            ("brightness", p.brightness),
            ("transfer_offset", p.transfer_offset),
            ("transfer_scale", p.transfer_scale),
        ] {
            if !v.is_finite() {
                return Err(StudyError::Config {
                    field,
                    value: v.to_string(),
                    reason: "must be a finite number".into(),
                });
            }
        }
        // A step of 0 (or below) would march in place for maxSteps samples.
        if !(p.tstep.is_finite() && p.tstep > 0.0) {
            return Err(StudyError::Config {
                field: "tstep",
                value: p.tstep.to_string(),
                reason: "the ray step must be a positive number (the SDK's is 0.01)".into(),
            });
        }
        if self.frames == 0 {
            return Err(StudyError::Config {
                field: "frames",
                value: "0".into(),
                reason: "at least one frame".into(),
            });
        }
        Ok(())
    }
}

/// What a render produced.
#[derive(Debug, Clone)]
pub struct RenderResult {
    pub run_dir: PathBuf,
    pub metrics: RunMetrics,
    /// The probed build's image.
    pub image: Image,
    /// The bare build's image, when the overhead was measured.
    pub bare_image: Option<Image>,
}

/// One launch of one build: its image, timing and probe results.
pub(crate) struct Frame {
    image: Image,
    launch: ProbedLaunch,
    kernel_ms: f64,
    /// The build's ptxas usage (registers, spills) for the kernel entry.
    entry: kernels::EntryInfo,
    /// The registers per thread it launched with: the entry's on the device's target.
    registers: u32,
    /// Whether the device started this frame from its freshly opened state (the emulator).
    clean_start: bool,
}

impl Frame {
    /// The frame with an empty trace (kept as a bare reference without holding its records).
    fn without_trace(self) -> Frame {
        let mut launch = self.launch;
        launch.trace.warps = Vec::new();
        Frame { launch, ..self }
    }
}

/// Loads the volume, renders, writes the run folder `out_dir` (created if needed).
pub fn render(
    dev: &mut dyn Device,
    cfg: &RenderConfig,
    out_dir: &Path,
) -> Result<RenderResult, StudyError> {
    cfg.validate()?;
    let volume = cfg.volume.load()?;
    render_volume(dev, cfg, &volume, out_dir)
}

/// [`render`] with the volume already in memory (a sweep loads it once for all runs).
pub fn render_volume(
    dev: &mut dyn Device,
    cfg: &RenderConfig,
    volume: &Volume,
    out_dir: &Path,
) -> Result<RenderResult, StudyError> {
    let mut session = Session::new(dev, volume);
    let mut bare = None;
    session.render_run(cfg, out_dir, &mut bare)
}

/// A device with the volume's textures, the output buffer and the loaded builds. On a GPU they
/// are kept across the runs of a sweep so that a 1 GiB volume is uploaded once, not once per run;
/// the emulator starts every frame clean instead (see `render_frame`).
pub(crate) struct Session<'a> {
    dev: &'a mut dyn Device,
    volume: &'a Volume,
    /// mode → module and the entry's ptxas usage.
    /// Per (mode, sampled build): the loaded module and its entry.
    modules: std::collections::BTreeMap<(u32, bool), (ModuleId, kernels::EntryInfo)>,
    textures: Option<(u64, u64)>,
    out: Option<device::DevBuf>,
}

impl<'a> Session<'a> {
    pub(crate) fn new(dev: &'a mut dyn Device, volume: &'a Volume) -> Self {
        Session {
            dev,
            volume,
            modules: Default::default(),
            textures: None,
            out: None,
        }
    }

    /// Renders `cfg`'s frame for the counter pass (`counters.rs`): its launches, nothing else.
    pub(crate) fn counter_frame(&mut self, cfg: &RenderConfig) -> Result<(), StudyError> {
        self.render_frame(cfg, cfg.mode, &cfg.run_name())
            .map(|_| ())
    }

    /// Renders `cfg` (and its bare frame, unless `bare` already holds the bare frame of the same
    /// shape and view) and writes the run folder.
    pub(crate) fn render_run(
        &mut self,
        cfg: &RenderConfig,
        out_dir: &Path,
        bare: &mut Option<Frame>,
    ) -> Result<RenderResult, StudyError> {
        cfg.validate()?;
        let wall = std::time::Instant::now();
        let run = cfg.run_name();
        if self.textures.is_none() {
            // later runs of a session reuse the uploaded volume and image buffer
            check_memory(&*self.dev, cfg, self.volume)?;
        }
        let needs_bare = cfg.measure_overhead && cfg.mode != ProbeMode::Off && bare.is_none();
        // The twin holds a second copy of the volume: only when host memory has room for both,
        // and only with a second thread to run it (`--threads 1` keeps to one).
        let beside = needs_bare
            && rayon::current_num_threads() > 1
            && self.dev.free_memory_bytes() >= 2 * frame_bytes(cfg, self.volume);
        let frame = match beside.then(|| self.dev.twin()).flatten() {
            // Every emulator frame starts clean, so the bare frame renders on a twin device
            // while this one renders the probed frame: the same numbers, and on two free cores
            // about half the wall time. A pool worker takes it, or this thread after its own
            // frame when every worker is busy.
            Some(mut twin) => {
                let volume = self.volume;
                let mut twin_frame = None;
                let frame = rayon::in_place_scope(|s| {
                    s.spawn(|_| {
                        let mut session = Session::new(&mut twin, volume);
                        twin_frame = Some(session.render_frame(cfg, ProbeMode::Off, &run));
                    });
                    self.render_frame(cfg, cfg.mode, &run)
                })?;
                *bare = twin_frame.transpose()?;
                frame
            }
            None => {
                let frame = self.render_frame(cfg, cfg.mode, &run)?;
                if needs_bare {
                    *bare = Some(self.render_frame(cfg, ProbeMode::Off, &run)?);
                }
                frame
            }
        };
        let bare_frame = if cfg.measure_overhead && cfg.mode != ProbeMode::Off {
            bare.as_ref()
        } else {
            None
        };
        std::fs::create_dir_all(out_dir).map_err(|e| StudyError::io(out_dir, e))?;
        let metrics = write_run(
            &*self.dev,
            cfg,
            self.volume,
            (&frame, bare_frame),
            out_dir,
            wall,
        )?;
        let bare_image = bare_frame.map(|b| b.image.clone());
        let image = frame.image.clone();
        if cfg.mode == ProbeMode::Off && bare.is_none() {
            // the bare frame of this shape and view, for the probed runs that follow
            *bare = Some(frame.without_trace());
        }
        Ok(RenderResult {
            run_dir: out_dir.to_path_buf(),
            metrics,
            image,
            bare_image,
        })
    }
}

/// Refuses a volume + image + log that cannot fit on the device, or an image that cannot fit in
/// host memory, before anything is allocated.
fn check_memory(dev: &dyn Device, cfg: &RenderConfig, volume: &Volume) -> Result<(), StudyError> {
    let p = &cfg.params;
    let image_bytes = p.width as u64 * p.height as u64 * 4;
    check_fits(
        &format!("a {}x{} image", p.width, p.height),
        "host",
        image_bytes * 3,
        host_available_bytes(),
    )?;
    let needed = frame_bytes(cfg, volume);
    let what = format!(
        "a {}x{}x{} volume, a {}x{} image and the probe log",
        volume.dims[0], volume.dims[1], volume.dims[2], p.width, p.height
    );
    check_fits(
        &what,
        dev_memory_name(dev),
        needed,
        Some(dev.free_memory_bytes()),
    )
}

/// Device bytes one frame needs: volume, image and probe log.
fn frame_bytes(cfg: &RenderConfig, volume: &Volume) -> u64 {
    let p = &cfg.params;
    let (gx, gy) = cfg.shape.grid_for(p.width, p.height);
    let warps = gx as u64 * gy as u64 * cfg.shape.threads().div_ceil(32) as u64;
    let log_bytes = match cfg.mode {
        ProbeMode::Off => 0,
        mode => cfg.probe(mode).log_shape(warps).total_bytes(),
    };
    volume.voxel_count() + p.width as u64 * p.height as u64 * 4 + log_bytes
}

fn dev_memory_name(dev: &dyn Device) -> &'static str {
    match dev.backend() {
        Backend::Gpu => "device",
        Backend::Emu => "host (emulator device)",
    }
}

fn instrument_err(run: &str) -> impl Fn(instrument::InstrumentError) -> StudyError + '_ {
    move |source| StudyError::Instrument {
        run: run.to_string(),
        source,
    }
}

fn device_err(run: &str) -> impl Fn(device::DeviceError) -> StudyError + '_ {
    move |source| StudyError::Device {
        run: run.to_string(),
        source,
    }
}

/// The volume texture of the kernel's host contract: u8, read as normalized float, trilinear,
/// normalized coordinates, clamp (the SDK's `tex` setup).
pub fn volume_texture(dims: [u32; 3]) -> TextureDesc {
    TextureDesc {
        dims: 3,
        width: dims[0],
        height: dims[1],
        depth: dims[2],
        format: TexFormat::U8,
        channels: 1,
        normalized_read: true,
        filter: TexFilter::Linear,
        address: [TexAddress::Clamp; 3],
        normalized_coords: true,
        linear_buffer: None,
    }
}

/// The transfer-function texture: 9 float4 entries, linear, normalized coordinates, clamp.
pub fn transfer_texture() -> TextureDesc {
    TextureDesc {
        dims: 1,
        width: TRANSFER_FUNCTION.len() as u32,
        height: 1,
        depth: 1,
        format: TexFormat::F32,
        channels: 4,
        normalized_read: false,
        filter: TexFilter::Linear,
        address: [TexAddress::Clamp; 3],
        normalized_coords: true,
        linear_buffer: None,
    }
}

impl Session<'_> {
    /// Loads the build for `mode`, sets up matrix, textures and output, launches (warm-up + frames on
    /// a GPU) and reads the image back.
    fn render_frame(
        &mut self,
        cfg: &RenderConfig,
        mode: ProbeMode,
        run: &str,
    ) -> Result<Frame, StudyError> {
        let ie = instrument_err(run);
        let de = device_err(run);
        let volume = self.volume;
        // Every frame on the emulator starts from a new machine, so its numbers cannot depend on
        // the frames rendered before it: a resumed or lone run equals the same run in a sweep.
        // Only the GPU keeps its modules, volume and image buffer across frames.
        let clean_start = self.dev.start_clean();
        if clean_start {
            self.modules.clear();
            self.textures = None;
            self.out = None;
        }
        // Timing only some warps or some accesses needs the build whose probes sample; timing
        // everything, the build without it, whose probes are as they always were.
        let sampled = mode != ProbeMode::Off
            && instrument::needs_sampled_build(&cfg.time_warps, cfg.time_accesses);
        let build =
            kernels::find_build(KERNEL_SOURCE, mode.ws_mode(), sampled).ok_or_else(|| {
                StudyError::NoBuild {
                    source_name: KERNEL_SOURCE,
                    mode: mode.name().into(),
                }
            })?;
        let key = (mode.ws_mode(), sampled);
        let (module, entry) = match self.modules.get(&key) {
            Some(m) => *m,
            None => {
                let entry =
                    build
                        .entry(KERNEL_NAME)
                        .copied()
                        .ok_or_else(|| StudyError::NoBuild {
                            source_name: KERNEL_SOURCE,
                            mode: mode.name().into(),
                        })?;
                let module = self.dev.load(build.ptx, Some(build.fatbin)).map_err(&de)?;
                self.modules.insert(key, (module, entry));
                (module, entry)
            }
        };
        let dev = &mut *self.dev;
        let matrix: Vec<u8> = cfg
            .view
            .inv_view_matrix()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        dev.write_symbol(module, VIEW_MATRIX_SYMBOL, &matrix)
            .map_err(&de)?;
        let (vol_tex, tf_tex) = match self.textures {
            Some(t) => t,
            None => {
                let vol_tex = dev
                    .create_texture(&volume_texture(volume.dims), &volume.data)
                    .map_err(&de)?;
                let tf_bytes: Vec<u8> = TRANSFER_FUNCTION
                    .iter()
                    .flatten()
                    .flat_map(|v| v.to_le_bytes())
                    .collect();
                let tf_tex = dev
                    .create_texture(&transfer_texture(), &tf_bytes)
                    .map_err(&de)?;
                self.textures = Some((vol_tex, tf_tex));
                (vol_tex, tf_tex)
            }
        };

        let p = &cfg.params;
        let pixels = p.width as usize * p.height as usize;
        let out = match self.out {
            Some(b) if b.bytes == pixels as u64 * 4 => b,
            _ => {
                let b = dev.alloc(pixels as u64 * 4).map_err(&de)?;
                self.out = Some(b);
                b
            }
        };
        let (gx, gy) = cfg.shape.grid_for(p.width, p.height);
        let launch_cfg = LaunchConfig {
            grid: Dim3::new(gx, gy, 1),
            block: Dim3::new(cfg.shape.x, cfg.shape.y, 1),
            dynamic_shared_bytes: 0,
            regs_per_thread: entry.registers_for(dev.register_target()),
        };
        let args = [
            ProbedArg::Value(Arg::Buf(out)),
            ProbedArg::Value(Arg::U32(p.width)),
            ProbedArg::Value(Arg::U32(p.height)),
            ProbedArg::Value(Arg::F32(p.density)),
            ProbedArg::Value(Arg::F32(p.brightness)),
            ProbedArg::Value(Arg::F32(p.transfer_offset)),
            ProbedArg::Value(Arg::F32(p.transfer_scale)),
            ProbedArg::Value(Arg::F32(p.tstep)),
            ProbedArg::Value(Arg::Tex(vol_tex)),
            ProbedArg::Value(Arg::Tex(tf_tex)),
            ProbedArg::Log,
        ];
        let probe = cfg.probe(mode);
        // The SDK clears the output before every frame: pixels whose ray misses stay 0.
        let zeros = vec![0u8; pixels * 4];
        let timed_frames = match dev.backend() {
            Backend::Gpu => cfg.frames,
            Backend::Emu => 1,
        };
        if dev.backend() == Backend::Gpu {
            // warm-up: module load, texture cache and clocks
            dev.upload(&out, &zeros).map_err(&de)?;
            launch_probed(dev, module, KERNEL_NAME, &launch_cfg, &args, &probe).map_err(&ie)?;
        }
        let mut total_ms = 0.0;
        let mut last = None;
        for _ in 0..timed_frames {
            dev.upload(&out, &zeros).map_err(&de)?;
            let l =
                launch_probed(dev, module, KERNEL_NAME, &launch_cfg, &args, &probe).map_err(&ie)?;
            total_ms += l.outcome.kernel_ms;
            last = Some(l);
        }
        let launch = last.ok_or_else(|| StudyError::Config {
            field: "frames",
            value: "0".into(),
            reason: "at least one frame".into(),
        })?;
        let mut rgba = vec![0u8; pixels * 4];
        dev.download(&out, &mut rgba).map_err(&de)?;
        Ok(Frame {
            image: Image::from_rgba(p.width, p.height, rgba),
            launch,
            kernel_ms: total_ms / timed_frames as f64,
            entry,
            registers: launch_cfg.regs_per_thread,
            clean_start,
        })
    }
}

/// Writes the run folder: the image, the trace (a probed run), the emulator's effective config,
/// and run.json last, so a folder with a complete run.json is a finished run.
fn write_run(
    dev: &dyn Device,
    cfg: &RenderConfig,
    volume: &Volume,
    (frame, bare): (&Frame, Option<&Frame>),
    out_dir: &Path,
    wall: std::time::Instant,
) -> Result<RunMetrics, StudyError> {
    let mut m = run_metrics(dev, cfg, frame, bare);
    m.study = Some(study_facts(cfg, volume, frame));
    m.wall_seconds = wall.elapsed().as_secs_f64();
    frame.image.write_png(&out_dir.join("image.png"))?;
    if cfg.mode != ProbeMode::Off {
        TraceWriter::write_all(&out_dir.join(TRACE_FILE_NAME), &frame.launch.trace)?;
    }
    if let (Backend::Emu, Some(config)) = (dev.backend(), &cfg.emu_config) {
        trace::write_bytes_atomic(&out_dir.join("config.toml"), config.to_toml().as_bytes())?;
    }
    m.write(&out_dir.join(trace::RUN_FILE_NAME))?;
    Ok(m)
}

/// The frame's figures, and the bare frame's beside them.
fn run_metrics(
    dev: &dyn Device,
    cfg: &RenderConfig,
    frame: &Frame,
    bare: Option<&Frame>,
) -> RunMetrics {
    let l = &frame.launch;
    let trace = &l.trace;
    let mut m = RunMetrics::new(
        dev.backend().name(),
        KERNEL_NAME,
        trace.launch.grid,
        trace.launch.block,
        cfg.mode,
    );
    m.device = dev.name();
    m.clock_mhz = dev.clock_mhz();
    // GPU: no simulated cycles; kernel time × SM clock, as run.json documents
    m.cycles = l.outcome.cycles.or_else(|| {
        (frame.kernel_ms > 0.0 && m.clock_mhz > 0.0)
            .then(|| (frame.kernel_ms * m.clock_mhz * 1e3).round() as u64)
    });
    m.kernel_ms = Some(frame.kernel_ms);
    m.frame_rate = (frame.kernel_ms > 0.0).then(|| 1000.0 / frame.kernel_ms);
    m.records = trace.record_count();
    m.dropped_records = trace.dropped_count();
    m.occupancy = Some(l.blocks_per_sm);
    m.registers = Some(frame.registers);
    m.spill_bytes = Some(frame.entry.spill_bytes);
    m.hit_rate_source = Some("unavailable".into());
    // The bare frame's counters as the GPU's profiler read them (the emulator's come with it).
    let mut gpu_bare = None;
    if let Some(stats) = &l.outcome.stats {
        m.warp_instructions = Some(stats.warp_instructions);
        // Work by class (the roofline's W), where the cycles went (stalls by reason, per SM) and
        // the memory counters, in run.json's one typed shape.
        m.emulator = Some(stats.clone());
        m.set_counters(HardwareCounters::of_emulator(stats));
        m.hit_rate_source = Some(if m.tex_hit_rate.is_some() {
            "emulator counters".into()
        } else {
            "unavailable: the emulator counted no texture access".into()
        });
    }
    match dev.backend() {
        Backend::Gpu => {
            let (probed, bare_counters, source) = gpu_counters(cfg);
            m.set_counters(probed.unwrap_or_default());
            gpu_bare = bare_counters;
            m.hit_rate_source = Some(source);
        }
        Backend::Emu => {
            m.preset = cfg.emu_config.as_ref().map(|c| c.name.clone());
            m.threads = u32::try_from(rayon::current_num_threads()).ok();
            let outcomes = || {
                [&l.outcome]
                    .into_iter()
                    .chain(bare.map(|b| &b.launch.outcome))
            };
            m.sim_warp_instructions_per_second =
                device::sim_warp_instructions_per_second(outcomes());
            m.thread_seconds = device::thread_seconds(outcomes());
        }
    }
    if cfg.mode != ProbeMode::Off {
        m.probes = Some(ProbeFacts {
            kind: trace.launch.kind,
            trace_warps: cfg.trace_warps.to_string(),
            time_warps: cfg.time_warps.to_string(),
            time_accesses: cfg.time_accesses.to_string(),
            timed_warps: Some(l.timed_warps),
            timed_accesses: Some(trace.timed_access_count()),
            slots_per_warp: cfg.slots_per_warp,
            shared_bytes: l.probe_shared_bytes,
            occupancy_note: l.occupancy_note.clone(),
        });
    }
    match bare {
        Some(b) => {
            let diff = frame.image.diff(&b.image);
            m.overhead = trace::overhead_ratio(frame.kernel_ms, b.kernel_ms);
            let mut bare = BareRun {
                kernel_ms: Some(b.kernel_ms),
                cycles: b.launch.outcome.cycles,
                occupancy: Some(b.launch.blocks_per_sm),
                registers: Some(b.registers),
                image_matches: Some(diff.pixels_differing == 0),
                ..BareRun::default()
            };
            // What the probes did to the caches: the same counters of the bare build.
            if let Some(stats) = &b.launch.outcome.stats {
                bare.set_counters(HardwareCounters::of_emulator(stats));
            } else if let Some(c) = gpu_bare {
                bare.set_counters(c);
            }
            m.bare = Some(bare);
            if diff.pixels_differing > 0 {
                m.errors.push(
                    StudyError::ImageChanged {
                        run: cfg.run_name(),
                        mode: cfg.mode.name().into(),
                        pixels: diff.pixels_differing,
                    }
                    .to_string(),
                );
            }
        }
        // A run without probes costs nothing; a probed one without its bare frame is unmeasured.
        None => m.overhead = (cfg.mode == ProbeMode::Off).then_some(1.0),
    }
    if let Some(loads) = l.outcome.loads.as_deref() {
        let bare_loads = bare.and_then(|b| b.launch.outcome.loads.as_deref());
        m.truth = instrument::ground_truth(trace, loads, bare_loads);
    }
    m
}

/// What the frame was: the study's geometry and rendering parameters, and the image against the
/// CPU reference where asked.
fn study_facts(cfg: &RenderConfig, volume: &Volume, frame: &Frame) -> StudyFacts {
    let p = &cfg.params;
    StudyFacts {
        shape: cfg.shape.name(),
        view: cfg.view.name(),
        image: format!("{}x{}", p.width, p.height),
        volume: cfg.volume.describe(),
        volume_voxels: volume.voxel_count(),
        density: p.density,
        brightness: p.brightness,
        transfer_offset: p.transfer_offset,
        transfer_scale: p.transfer_scale,
        tstep: p.tstep,
        frames: cfg.frames,
        start_state: if frame.clean_start {
            "clean: a new emulator per frame (no earlier allocations, cold caches)"
        } else {
            "as left by earlier launches (GPU: warm-up launch, then timed frames)"
        }
        .into(),
        reference: cfg.compare_reference.then(|| {
            let reference = crate::reference::render_reference(volume, &cfg.view, &cfg.params);
            let d = frame.image.diff(&reference);
            ReferenceDiff {
                max_channel_diff: d.max_channel_diff,
                pixels_differing: d.pixels_differing as u64,
            }
        }),
    }
}

/// The GPU's hardware counters from Nsight Compute, of the probed frame and, where the profiled
/// render measured its bare frame too, of the bare one; and where they came from, or why they are
/// missing. The profiled render launches each frame twice (a warm-up, then the timed launch):
/// the timed launches' counters are the ones that count, warm as the timed frames run.
fn gpu_counters(
    cfg: &RenderConfig,
) -> (Option<HardwareCounters>, Option<HardwareCounters>, String) {
    let Some(profile) = &cfg.ncu else {
        return (
            None,
            None,
            "unavailable: ncu profiling not requested".into(),
        );
    };
    let Some(ncu) = ncu_path() else {
        return (
            None,
            None,
            "unavailable: ncu (Nsight Compute) is not installed".into(),
        );
    };
    match run_ncu(
        &ncu,
        KERNEL_NAME,
        &profile.program,
        &profile.args,
        NCU_LIMIT,
    ) {
        // probed warm-up, probed, bare warm-up, bare
        Ok(l) if l.len() == 4 => (Some(l[1].counters), Some(l[3].counters), l[1].source()),
        // warm-up, probed
        Ok(l) if l.len() == 2 => (Some(l[1].counters), None, l[1].source()),
        Ok(l) => match mean_counters(&l) {
            Some(m) => (
                Some(m.counters),
                None,
                format!("{}; mean of {} launches", m.source(), l.len()),
            ),
            None => (
                None,
                None,
                "unavailable: ncu reported no counter value".into(),
            ),
        },
        Err(e) => (
            None,
            None,
            format!("unavailable: {}", trace::error_chain(&e)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockShape, Scale};

    /// The pixel bands, of eight across and eight down, that the default traced warps draw.
    fn bands(side: u32, shape: BlockShape) -> (usize, usize) {
        let (gx, gy) = (side / shape.x, side / shape.y);
        let per_block = shape.x * shape.y / 32;
        let (mut cols, mut rows) = ([false; 8], [false; 8]);
        for g in default_trace_warps().select(u64::from(gx * gy * per_block)) {
            let (b, wib) = (g / per_block, g % per_block);
            let (bx, by) = (b % gx, b / gx);
            for lane in 0..32 {
                // threadIdx.x runs fastest within a warp, as the kernel's pixel (x, y) does.
                let t = wib * 32 + lane;
                let (x, y) = (bx * shape.x + t % shape.x, by * shape.y + t / shape.x);
                cols[(x * 8 / side) as usize] = true;
                rows[(y * 8 / side) as usize] = true;
            }
        }
        let n = |b: [bool; 8]| b.iter().filter(|&&c| c).count();
        (n(cols), n(rows))
    }

    /// Every study shape's default sample reaches across the image and down it: all eight bands
    /// each way at paper scale, at least half of them with the nine warps of a quick run. Every
    /// 64th warp drew one band across for the three widest shapes.
    #[test]
    fn default_traced_warps_spread_over_the_image() {
        for scale in Scale::ALL {
            let side = scale.geometry().image_side;
            let need = if scale == Scale::Paper { 8 } else { 4 };
            for shape in BlockShape::PAPER {
                let (cols, rows) = bands(side, shape);
                assert!(
                    cols >= need && rows >= need,
                    "{}x{} at {} scale: {cols} column and {rows} row bands of 8",
                    shape.x,
                    shape.y,
                    scale.name()
                );
            }
        }
    }
}
