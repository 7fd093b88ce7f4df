//! `warpscope render`, `sweep` and `demo`: the volume-rendering study from the command line.
//! Options become a `study::RenderConfig` / `study::SweepConfig`; the study crate does the work.

use crate::EmuArgs;
use crate::export_cmd::format_or_none;
use anyhow::{Context, Result};
use clap::Args;
use device::BackendChoice;
use export::{Exported, RunFolder, RunLog};
use indicatif::{ProgressBar, ProgressStyle};
use instrument::{AccessPeriod, WarpSelection};
use std::io::IsTerminal;
use std::path::PathBuf;
use study::{
    BlockShape, RawDType, RenderConfig, RenderParams, SweepConfig, View, VolumeKind, VolumeSource,
};
use trace::ProbeMode;

/// `--scale`'s long help: both geometries, computed (the preset's L2 is the paper's GPU's), and
/// `default` (what applies when --scale is not given).
fn scale_help(default: &str) -> String {
    let l2 = emulator::GpuConfig::preset("gtx480").map_or(0, |c| c.l2.size_bytes);
    format!(
        "Geometry of volume, image and ray step:\n{}\nquick keeps the paper's ray spacing and voxels per step with every length divided by 4. {default}",
        study::Scale::help("gtx480", l2)
    )
}

/// The volume and image, shared by render and sweep.
#[derive(Args, Debug, Clone)]
pub struct SceneArgs {
    /// Geometry: quick (the paper's at 1/4 scale) or paper (1024³, 512×512, the SDK's step).
    #[arg(
        long,
        default_value = "quick",
        long_help = scale_help("Explicit --volume-size, --image and --tstep override it.")
    )]
    pub scale: study::Scale,
    /// Procedural volume: shell, noise, blobs or empty.
    #[arg(long, default_value = "blobs", conflicts_with = "volume")]
    pub volume_kind: VolumeKind,
    /// Edge of the procedural volume in voxels (u8), or X,Y,Z [default: from --scale].
    #[arg(long)]
    pub volume_size: Option<String>,
    /// Seed of the procedural volume.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A raw volume file instead (x fastest); needs --dims and --dtype.
    #[arg(long, requires = "dims")]
    pub volume: Option<PathBuf>,
    /// Dimensions of the raw volume, X,Y,Z.
    #[arg(long)]
    pub dims: Option<String>,
    /// Element type of the raw volume: u8, u16 or f32.
    #[arg(long, default_value = "u8")]
    pub dtype: RawDType,
    /// Image size WxH [default: from --scale].
    #[arg(long)]
    pub image: Option<String>,
    /// Ray step in the [-1,1] box (the SDK's is 0.01) [default: from --scale].
    #[arg(long)]
    pub tstep: Option<f32>,
    /// Opacity scale of the ray marcher (the SDK sample's `density`).
    #[arg(long, default_value_t = 0.05)]
    pub density: f32,
    /// Brightness scale of the accumulated colour.
    #[arg(long, default_value_t = 1.0)]
    pub brightness: f32,
    /// Offset of the transfer function's lookup.
    #[arg(long, default_value_t = 0.0)]
    pub transfer_offset: f32,
    /// Scale of the transfer function's lookup.
    #[arg(long, default_value_t = 1.0)]
    pub transfer_scale: f32,
}

/// How the probes record, shared by render and sweep.
#[derive(Args, Debug, Clone)]
pub struct ProbeArgs {
    /// Warps that also keep every access (for timelines and per-access exports); a traced warp
    /// is always timed. Global warp indices and ranges (`0-3,17`), `every:N`, `all` or `none`. An
    /// N sharing a factor with the grid (a power of two) traces the same place in every row of
    /// blocks; the default's N is prime, so its sample spans the image.
    #[arg(long, default_value_t = study::default_trace_warps())]
    pub trace_warps: WarpSelection,
    /// Warps that time their accesses and keep per-site statistics (count, sum, min, max); the
    /// others run the bare path at every probe (the plain load, no clock read, fence or update).
    /// A frame of one wave, as at paper scale, ends with its slowest timed warp, so this lowers
    /// little of the fenced cost (an H200: 1.20-1.26x timing every 17th warp against 1.18-1.23x
    /// timing all); --time-accesses lowers it. Same grammar as --trace-warps; every traced
    /// warp is timed too, selected here or not. Anything but `all` renders with the kernel's
    /// sampled build (-DWS_SAMPLED=1), whose extra code costs the timed warps too. `every:N`
    /// picks warp g when N divides g, so an N that divides a row of the image's warps picks the
    /// same columns in every row (every:16 with 128x1 blocks at 512 pixels: the left edge).
    #[arg(long, default_value_t = WarpSelection::all())]
    pub time_warps: WarpSelection,
    /// Which of its accesses a timed warp times: `all`, or `every:N` with N 1, 2, 4 or 8 (one
    /// access in N, all sites together, traced warps included; warp g times its k-th access when
    /// g + k is a multiple of N) [default: every:8 with --scale paper, all with quick].
    /// Where a frame's one wave ends with its slowest warp, this, not --time-warps, lowers what
    /// fenced probes cost: every:8 costs 1.03-1.05x fenced on an H200 at the paper's geometry
    /// (all: 1.18-1.23x) and there, on the h100 preset, keeps every run's timed accesses within
    /// 7.7 % of the bare run's (all: 9.9 %). At the quick geometry on gtx480 `all` reads truer,
    /// at up to 1.44x the cost (docs/sampling.md). Anything but `all` renders with
    /// the sampled build, as --time-warps does.
    #[arg(long)]
    pub time_accesses: Option<AccessPeriod>,
    /// Records each traced warp can keep (a ray of 500 steps makes up to 1000).
    #[arg(long, default_value_t = 1024)]
    pub slots: u32,
    /// Timed launches after a warm-up on a GPU (the emulator is deterministic: one).
    #[arg(long, default_value_t = 10)]
    pub frames: u32,
    /// Skip the bare render (probes off) beside each probed one, which measures what the probes
    /// cost and checks that the image is unchanged.
    #[arg(long)]
    pub no_overhead: bool,
    /// Log formats written per run: csv, warp-csv, clog2, chrome, otf2, parquet (comma-separated; none for none).
    #[arg(long, default_value = "csv", value_delimiter = ',', value_parser = format_or_none)]
    pub formats: Vec<Option<RunLog>>,
}

impl SceneArgs {
    fn volume_source(&self) -> Result<VolumeSource> {
        if let Some(path) = &self.volume {
            let dims = study::parse_dims(self.dims.as_deref().unwrap_or_default())?;
            return Ok(VolumeSource::Raw {
                path: path.clone(),
                dims,
                dtype: self.dtype,
            });
        }
        let size = self
            .volume_size
            .clone()
            .unwrap_or_else(|| self.scale.geometry().volume_edge.to_string());
        let dims = match size.parse::<u32>() {
            Ok(n) => [n, n, n],
            Err(_) => study::parse_dims(&size).context("--volume-size")?,
        };
        Ok(VolumeSource::Generated {
            kind: self.volume_kind,
            dims,
            seed: self.seed,
        })
    }

    fn params(&self) -> Result<RenderParams> {
        let geometry = self.scale.geometry();
        let image = self
            .image
            .clone()
            .unwrap_or_else(|| format!("{0}x{0}", geometry.image_side));
        let (w, h) = image
            .split_once('x')
            .and_then(|(w, h)| Some((w.trim().parse().ok()?, h.trim().parse().ok()?)))
            .with_context(|| format!("--image {image:?}: expected WxH, e.g. 128x128"))?;
        let mut p = RenderParams::with_size(w, h);
        p.tstep = self.tstep.unwrap_or(geometry.tstep);
        p.density = self.density;
        p.brightness = self.brightness;
        p.transfer_offset = self.transfer_offset;
        p.transfer_scale = self.transfer_scale;
        Ok(p)
    }
}

impl ProbeArgs {
    fn formats(&self) -> Vec<RunLog> {
        self.formats.iter().flatten().copied().collect()
    }

    /// `--time-accesses`, or the default of the study at `scale`.
    fn time_accesses(&self, scale: study::Scale) -> AccessPeriod {
        self.time_accesses.unwrap_or(scale.time_accesses())
    }
}

#[derive(Args, Debug)]
pub struct RenderArgs {
    #[command(flatten)]
    pub scene: SceneArgs,
    #[command(flatten)]
    pub probe: ProbeArgs,
    #[command(flatten)]
    pub emu: EmuArgs,
    /// Thread-block shape AxB.
    #[arg(long, default_value = "16x8")]
    pub shape: BlockShape,
    /// Viewpoint α,β,γ in degrees (rotations about x, y, z).
    #[arg(long, default_value = "0,0,0", allow_hyphen_values = true)]
    pub view: View,
    /// How the probes time each load: off, naive, fence, dummy or auto.
    #[arg(long, default_value = "fence")]
    pub mode: ProbeMode,
    /// Also render on the CPU reference renderer and record the largest channel difference.
    #[arg(long)]
    pub compare_reference: bool,
    /// Output folder: the image, trace.wst, run.json and the logs.
    #[arg(long, default_value = "render-out")]
    pub out: PathBuf,
    /// Internal: set on the render that Nsight Compute profiles, so it does not profile itself.
    #[arg(long, hide = true)]
    pub no_ncu: bool,
}

/// On a GPU with Nsight Compute installed: profile one frame of the same render (this program,
/// the same arguments, one frame, its bare frame beside it unless --no-overhead was given, no
/// logs, a scratch folder) for the hardware counters of both builds, which only ncu can read on
/// real hardware.
fn ncu_profile(args: &RenderArgs, gpu: bool) -> Result<Option<study::NcuProfile>> {
    if !gpu || args.no_ncu || study::ncu_path().is_none() {
        return Ok(None);
    }
    let program =
        std::env::current_exe().context("cannot find the warpscope executable for ncu")?;
    let scratch = std::env::temp_dir().join(format!("warpscope-ncu-{}", std::process::id()));
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    argv.extend(
        [
            "--frames",
            "1",
            "--formats",
            "none",
            "--backend",
            "gpu",
            "--no-ncu",
            "--out",
        ]
        .map(String::from),
    );
    argv.push(scratch.display().to_string());
    Ok(Some(study::NcuProfile {
        program,
        args: argv,
    }))
}

pub fn render(args: &RenderArgs) -> Result<()> {
    let config = args.emu.gpu_config()?;
    let (mut dev, note) =
        device::open_device(args.emu.backend, config.clone(), args.emu.limits(true))?;
    eprintln!("warpscope: rendering on {} ({note})", dev.name());
    let formats = args.probe.formats();
    let cfg = RenderConfig {
        volume: args.scene.volume_source()?,
        params: args.scene.params()?,
        shape: args.shape,
        view: args.view,
        mode: args.mode,
        trace_warps: args.probe.trace_warps.clone(),
        time_warps: args.probe.time_warps.clone(),
        time_accesses: args.probe.time_accesses(args.scene.scale),
        slots_per_warp: args.probe.slots,
        frames: args.probe.frames,
        measure_overhead: !args.probe.no_overhead,
        compare_reference: args.compare_reference,
        ncu: ncu_profile(args, dev.backend() == device::Backend::Gpu)?,
        emu_config: Some(config),
    };
    let result = study::render(dev.as_mut(), &cfg, &args.out)?;
    if RunFolder::export_logs(&result.run_dir, cfg.mode, &formats)? == Exported::ProbesOff {
        eprintln!(
            "warpscope: no log written: with the probes off (--mode off) nothing is recorded"
        );
    }
    let m = &result.metrics;
    println!(
        "{}: {:.3} ms/frame ({:.1} fps), texture hit rate {}, {} records ({} dropped) -> {}",
        cfg.run_name(),
        m.kernel_ms.unwrap_or(f64::NAN),
        m.frame_rate.unwrap_or(f64::NAN),
        m.tex_hit_rate
            .map_or("unavailable".into(), |r| format!("{:.1} %", 100.0 * r)),
        m.records,
        m.dropped_records,
        result.run_dir.display()
    );
    if cfg.mode != ProbeMode::Off {
        crate::print_run_verdict(&result.run_dir, m);
    }
    Ok(())
}

#[derive(Args, Debug)]
pub struct SweepArgs {
    #[command(flatten)]
    pub scene: SceneArgs,
    #[command(flatten)]
    pub probe: ProbeArgs,
    #[command(flatten)]
    pub emu: EmuArgs,
    /// Block shapes (comma-separated), default the paper's eight: 128x1 … 1x128.
    #[arg(long, value_delimiter = ',')]
    pub shapes: Vec<BlockShape>,
    /// Viewpoints separated by ';' (or repeat --views), default "0,0,0;90,0,90".
    #[arg(long, value_delimiter = ';', allow_hyphen_values = true)]
    pub views: Vec<View>,
    /// Probe modes (comma-separated), default naive,fence.
    #[arg(long, value_delimiter = ',')]
    pub modes: Vec<ProbeMode>,
    /// Output folder: one folder per run, sweep.csv and plan.json.
    #[arg(long, default_value = "sweep-out")]
    pub out: PathBuf,
    /// Print the plan — every run in order with its folder and input hash — write OUT/plan.json,
    /// and run nothing.
    #[arg(long)]
    pub plan: bool,
    /// Run only part K of N of the plan (1 <= K <= N), a contiguous block of runs, into its own
    /// --out folder; join the parts with `warpscope merge`. Without it, a Slurm array task
    /// (SLURM_ARRAY_TASK_ID/_MIN/_COUNT) or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX with
    /// WARPSCOPE_SHARDS = its completions) runs its part; --shard 1/1 runs the whole plan there.
    #[arg(long)]
    pub shard: Option<study::Shard>,
}

/// `warpscope merge OUT DIR...`.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The merged sweep folder (may be one of the DIRs, or a folder an earlier merge wrote).
    pub out: PathBuf,
    /// The shards' sweep folders (each with plan.json and its run folders).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
}

fn or_default<T: Clone>(given: &[T], default: &[T]) -> Vec<T> {
    if given.is_empty() {
        default.to_vec()
    } else {
        given.to_vec()
    }
}

pub fn sweep(args: &SweepArgs) -> Result<()> {
    let emu_config = args.emu.gpu_config()?;
    let cfg = SweepConfig {
        out_dir: args.out.clone(),
        backend: args.emu.backend,
        emu_config,
        volume: args.scene.volume_source()?,
        params: args.scene.params()?,
        shapes: or_default(&args.shapes, &BlockShape::PAPER),
        views: or_default(&args.views, &View::PAPER),
        modes: or_default(&args.modes, &[ProbeMode::Naive, ProbeMode::Fence]),
        trace_warps: args.probe.trace_warps.clone(),
        time_warps: args.probe.time_warps.clone(),
        time_accesses: args.probe.time_accesses(args.scene.scale),
        slots_per_warp: args.probe.slots,
        frames: args.probe.frames,
        measure_overhead: !args.probe.no_overhead,
        limits: args.emu.limits(false),
        counters: counter_pass(args.emu.backend != BackendChoice::Emu)?,
    };
    if args.plan {
        return print_plan(&cfg);
    }
    let shard = match args.shard {
        Some(s) => s,
        None => match study::Shard::from_env(|k| std::env::var(k).ok())? {
            Some((s, why)) => {
                eprintln!("warpscope: sweep: shard {s} from the scheduler ({why})");
                s
            }
            None => study::Shard::WHOLE,
        },
    };
    eprintln!(
        "warpscope: sweep: {} runs{}, {} volume, {}x{} image, tstep {}",
        cfg.shapes.len() * cfg.views.len() * cfg.modes.len(),
        if shard == study::Shard::WHOLE {
            String::new()
        } else {
            format!(" (shard {shard} of them)")
        },
        cfg.volume.describe(),
        cfg.params.width,
        cfg.params.height,
        cfg.params.tstep
    );
    if let Some(line) = run_sweep(&cfg, shard, &args.probe.formats())? {
        eprintln!("warpscope: {line}");
    }
    Ok(())
}

/// The hardware-counter pass of a sweep that may run on a GPU: this program under Nsight
/// Compute. Without ncu the sweep goes on without counters, and says so in one line when it runs
/// on a GPU.
fn counter_pass(maybe_gpu: bool) -> Result<Option<study::CounterPass>> {
    if !maybe_gpu {
        return Ok(None);
    }
    let Some(ncu) = study::ncu_path() else {
        return Ok(None);
    };
    Ok(Some(study::CounterPass {
        program: std::env::current_exe().context("finding the warpscope executable for ncu")?,
        ncu,
        limit: study::NCU_LIMIT,
    }))
}

/// `warpscope counter-frames DIR`: the frames of a sweep's counter pass, rendered on the GPU
/// under Nsight Compute (the sweep starts it; not for users).
pub fn counter_frames(dir: &std::path::Path) -> Result<()> {
    let mut dev = device::CudaDevice::open(0).context("the counter pass needs the GPU")?;
    let n = study::render_counter_frames(dir, &mut dev)?;
    eprintln!("warpscope: counter pass: {n} frames rendered twice");
    Ok(())
}

/// `sweep --plan`: the plan on stdout (a header, then index, run folder and input hash per run,
/// tab-separated) and in OUT/plan.json; refuses a folder of another sweep like a sweep does.
fn print_plan(cfg: &SweepConfig) -> Result<()> {
    let plan = study::SweepPlan::new(cfg)?;
    let _lock = study::open_sweep_folder(&cfg.out_dir, &plan, "sweep --plan")?;
    println!(
        "plan {}: {} runs ({}) -> {}",
        plan.hash,
        plan.runs.len(),
        plan.order,
        cfg.out_dir.join(study::PLAN_JSON).display()
    );
    for r in &plan.runs {
        println!("{}\t{}\t{}", r.index, r.name, r.hash);
    }
    Ok(())
}

/// `warpscope merge`: one sweep from its shards' folders.
pub fn merge(args: &MergeArgs) -> Result<()> {
    let summary = study::merge(&args.out, &args.dirs)?;
    for d in &summary.duplicates {
        eprintln!("warpscope: merge: duplicate: {d}");
    }
    eprintln!(
        "warpscope: merge: {} runs of plan {} ({} copied now, {} already there) -> {}",
        summary.rows.len(),
        summary.plan_hash,
        summary.copied,
        summary.in_place,
        summary.csv.display()
    );
    Ok(())
}

/// Runs a sweep (or one shard of it) with a progress bar, then writes the requested log formats
/// per run; returns the simulation-speed line over its emulator runs (a resumed run keeps the
/// speed it was rendered at; `None` on a GPU).
fn run_sweep(cfg: &SweepConfig, shard: study::Shard, formats: &[RunLog]) -> Result<Option<String>> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} sweep [{elapsed_precise}] {bar:30} {pos}/{len} runs, ETA {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    // indicatif draws nothing when stderr is not a terminal (a log file, CI, a batch job): say
    // each finished run in a line there instead.
    let lines = !std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    let summary = study::sweep_shard(cfg, shard, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        if lines && done > 0 {
            eprintln!(
                "warpscope: sweep: {done} of {total} runs done, {:.0} s",
                started.elapsed().as_secs_f64()
            );
        }
    })?;
    bar.finish_and_clear();
    for r in &summary.redone {
        eprintln!("warpscope: sweep: redid an incomplete run: {r}");
    }
    if let Some(note) = &summary.counters_note {
        eprintln!("warpscope: sweep: {note}");
    }
    let mut probes_off = false;
    for row in &summary.rows {
        let mode: ProbeMode = row.mode.parse().map_err(anyhow::Error::msg)?;
        probes_off |= RunFolder::export_logs(&cfg.out_dir.join(&row.run), mode, formats)?
            == Exported::ProbesOff;
    }
    if probes_off {
        eprintln!("warpscope: sweep: no log written for the runs with the probes off (mode off)");
    }
    eprintln!(
        "warpscope: sweep of {} runs ({} rendered now, {} resumed) on {} -> {}",
        summary.rows.len(),
        summary.rendered,
        summary.resumed,
        summary.backend_note,
        summary.csv.display()
    );
    Ok(sim_speed_line(&summary.sim_rates))
}

/// "simulation speed: median … M warp instructions/s per run …" over the runs' rates.
fn sim_speed_line(rates: &[f64]) -> Option<String> {
    let median = analysis::stats::median(rates)?;
    let (lo, hi) = analysis::stats::range(rates.iter().copied())?;
    let n = rates.len();
    Some(format!(
        "simulation speed: median {:.2} M warp instructions/s per run ({:.2}–{:.2} over {n} runs; {} threads shared by the runs and the SMs of each launch)",
        median / 1e6,
        lo / 1e6,
        hi / 1e6,
        rayon::current_num_threads()
    ))
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Output folder: DIR/sweep and DIR/report.
    #[arg(long, default_value = "warpscope-demo")]
    pub out: PathBuf,
    /// gpu, emu, or auto: on a GPU when one is usable, else on the emulator.
    #[arg(long, default_value = "auto")]
    pub backend: BackendChoice,
    /// Geometry: quick or paper [default: paper on a GPU, quick on the emulator].
    #[arg(
        long,
        long_help = scale_help("[default: paper on a GPU, quick on the emulator]")
    )]
    pub scale: Option<study::Scale>,
    /// Log formats written per run (comma-separated; none for none).
    #[arg(long, default_value = "csv", value_delimiter = ',', value_parser = format_or_none)]
    pub formats: Vec<Option<RunLog>>,
}

pub fn demo(args: &DemoArgs) -> Result<()> {
    let sweep_dir = args.out.join("sweep");
    // The same decision as every other command's (device::open_device); the sweep opens
    // its own devices, so the GPU opened here only answers whether there is one.
    let (dev, why) = device::choose_backend(args.backend)?;
    let gpu = dev.is_some();
    drop(dev);
    if !gpu && args.backend == BackendChoice::Auto {
        eprintln!("warpscope: demo on the {why}");
    }
    // A GPU renders the paper's geometry in seconds; the emulator takes minutes per run there.
    let scale = args.scale.unwrap_or(if gpu {
        study::Scale::Paper
    } else {
        study::Scale::Quick
    });
    let mut cfg = study::demo_config(&sweep_dir, scale)?;
    cfg.counters = counter_pass(gpu)?;
    cfg.backend = if gpu {
        BackendChoice::Gpu
    } else {
        BackendChoice::Emu
    };
    eprintln!(
        "warpscope: demo: {} runs ({} shapes × {} views × {} modes) on {}, {scale} geometry: {}",
        cfg.shapes.len() * cfg.views.len() * cfg.modes.len(),
        cfg.shapes.len(),
        cfg.views.len(),
        cfg.modes.len(),
        if gpu {
            "the GPU".to_string()
        } else {
            format!("the emulator's {} preset", cfg.emu_config.name)
        },
        scale
            .geometry()
            .describe(&cfg.emu_config.name, cfg.emu_config.l2.size_bytes)
    );
    let formats: Vec<RunLog> = args.formats.iter().flatten().copied().collect();
    let speed = run_sweep(&cfg, study::Shard::WHOLE, &formats)?;
    let reuse_dir = sweep_dir.join("reuse");
    if !gpu && !reuse_dir.join("reuse.md").exists() {
        eprintln!("warpscope: demo: working-set and reuse-distance study");
        crate::companion_cmd::reuse_into(cfg.emu_config.clone(), cfg.limits.clone(), &reuse_dir)?;
    }
    let report_dir = args.out.join("report");
    let summary = crate::analyze_sweep(&sweep_dir, &report_dir)?;
    println!("warpscope: report: {}", summary.report_html.display());
    if let Some(line) = speed {
        println!("warpscope: {line}");
    }
    Ok(())
}
