//! `warpscope launch`: run any kernel from a spec on either backend, write its output buffers as
//! .npy, its probe records as `trace.wst`, and `run.json`.

use crate::EmuArgs;
use crate::spec::{self, ArgPlan};
use anyhow::{Context, Result, bail};
use clap::Args;
use instrument::{Arg, Device, LaunchConfig, Probe, TraceWarps, launch_probed};
use std::path::{Path, PathBuf};
use std::time::Instant;
use trace::{Dim3, ProbeMode, Region, RunMetrics, SiteInfo, TraceWriter};

#[derive(Args, Debug)]
pub struct LaunchArgs {
    /// The launch spec (TOML).
    pub spec: PathBuf,
    #[command(flatten)]
    pub emu: EmuArgs,
    /// Probe mode a .cu source is built with (a .ptx source keeps the mode it was built with).
    #[arg(long, default_value = "auto")]
    pub mode: ProbeMode,
    /// Warps that also keep every access; every warp keeps per-site statistics. Global warp
    /// indices and ranges (`0-3,17`), `every:N`, `all` or `none`.
    #[arg(long, default_value = "all")]
    pub trace_warps: TraceWarps,
    /// Output folder.
    #[arg(long, default_value = "launch-out")]
    pub out: PathBuf,
    /// Emulator: end the launch with an error after this many warp instructions.
    #[arg(long, default_value_t = instrument::DEFAULT_MAX_WARP_INSTRUCTIONS)]
    pub max_warp_instructions: u64,
}

/// PTX text and the registers per thread ptxas reports for it (for the emulator's occupancy).
struct Compiled {
    ptx: String,
    regs: Option<u32>,
}

fn compile_cu(src: &Path, mode: ProbeMode) -> Result<Compiled> {
    let c = kernels::compile_ptx(src, mode.ws_mode()).with_context(|| {
        format!(
            "compiling {} (run scripts/setup-cuda if nvcc is missing, or give a .ptx source)",
            src.display()
        )
    })?;
    eprintln!("warpscope: {}", c.command);
    Ok(Compiled {
        ptx: c.ptx,
        regs: c.registers,
    })
}

pub fn run(args: &LaunchArgs) -> Result<()> {
    let (spec, plans) = spec::load(&args.spec)?;
    let ext = spec
        .source
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("");
    let compiled = match ext {
        "cu" => compile_cu(&spec.source, args.mode)?,
        "ptx" => Compiled {
            ptx: std::fs::read_to_string(&spec.source)
                .with_context(|| format!("cannot read {}", spec.source.display()))?,
            regs: None,
        },
        _ => bail!(
            "{}: source must be a .ptx or .cu file",
            spec.source.display()
        ),
    };
    // Parse with the emulator's front end on every backend: argument checks before any launch.
    let module = emulator::Module::parse(&compiled.ptx)
        .with_context(|| format!("PTX of {}", spec.source.display()))?;
    let entries = module.entries();
    let entry = entries
        .iter()
        .find(|e| e.name == spec.kernel)
        .with_context(|| {
            let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
            format!(
                "kernel {:?} is not in {} (entries: {})",
                spec.kernel,
                spec.source.display(),
                names.join(", ")
            )
        })?;
    if entry.params.len() != plans.len() {
        bail!(
            "{}: kernel {} takes {} parameters, the spec gives {} [[arg]]s",
            args.spec.display(),
            spec.kernel,
            entry.params.len(),
            plans.len()
        );
    }
    for (i, (p, plan)) in entry.params.iter().zip(&plans).enumerate() {
        let size = match plan {
            ArgPlan::Buffer { .. } => 8,
            ArgPlan::Scalar { bytes, .. } => bytes.len() as u64,
            ArgPlan::Log => u64::from(kernels::layout::WS_LOG_ARG_BYTES),
        };
        if p.size_bytes as u64 != size {
            bail!(
                "{}: arg[{i}] is {size} bytes but parameter {:?} of {} is {} bytes",
                args.spec.display(),
                p.name,
                spec.kernel,
                p.size_bytes
            );
        }
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let config = args.emu.gpu_config()?;
    let config_toml = config.to_toml();
    let preset = config.name.clone();
    let (mut dev, note) = instrument::open_device(args.emu.backend, config)?;
    eprintln!(
        "warpscope: launching {} on {} ({note})",
        spec.kernel,
        dev.name()
    );
    let grid = Dim3::new(spec.grid[0], spec.grid[1], spec.grid[2]);
    let block = Dim3::new(spec.block[0], spec.block[1], spec.block[2]);
    let mode = if ext == "cu" {
        args.mode
    } else {
        ProbeMode::Off
    };
    let mut metrics = RunMetrics::new(dev.backend().name(), &spec.kernel, grid, block, mode);
    metrics.device = dev.name();
    metrics.clock_mhz = dev.clock_mhz();
    if dev.backend() == instrument::Backend::Emu {
        metrics.preset = Some(preset);
        trace::write_bytes_atomic(&args.out.join("config.toml"), config_toml.as_bytes())?;
    }
    let started = Instant::now();
    let result = execute(
        dev.as_mut(),
        &compiled,
        &spec,
        &plans,
        args,
        grid,
        block,
        &mut metrics,
    );
    metrics.wall_seconds = started.elapsed().as_secs_f64();
    if let Err(e) = &result {
        metrics.errors.push(format!("{e:#}"));
    }
    metrics.write(&args.out.join("run.json"))?;
    result?;
    eprintln!("warpscope: wrote {}", args.out.display());
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn execute(
    dev: &mut dyn Device,
    compiled: &Compiled,
    spec: &spec::LaunchSpec,
    plans: &[ArgPlan],
    args: &LaunchArgs,
    grid: Dim3,
    block: Dim3,
    metrics: &mut RunMetrics,
) -> Result<()> {
    let module = dev.load(&compiled.ptx, None)?;
    let mut kargs = Vec::with_capacity(plans.len());
    let mut outputs = Vec::new();
    for plan in plans {
        match plan {
            ArgPlan::Buffer {
                name,
                elem,
                data,
                output,
            } => {
                let buf = dev.alloc(data.len() as u64)?;
                dev.upload(&buf, data)
                    .with_context(|| format!("uploading {name}"))?;
                if let Some(out) = output {
                    outputs.push((buf, *elem, args.out.join(out)));
                }
                kargs.push(Arg::Buf(buf));
            }
            ArgPlan::Scalar { bytes, .. } => kargs.push(Arg::Bytes(bytes.clone())),
            ArgPlan::Log => kargs.push(Arg::Log),
        }
    }
    let cfg = LaunchConfig {
        grid,
        block,
        dynamic_shared_bytes: spec.shared_bytes,
        regs_per_thread: spec.regs_per_thread.or(compiled.regs).unwrap_or(32),
    };
    let outcome = if plans.contains(&ArgPlan::Log) {
        let probe = Probe {
            mode: metrics.mode,
            trace_warps: args.trace_warps.clone(),
            slots_per_warp: spec.slots_per_warp.unwrap_or(1024),
            sites: sites(spec)?,
        };
        let probed = launch_probed(dev, module, &spec.kernel, &cfg, &kargs, &probe)?;
        metrics.records = probed.trace.record_count();
        metrics.dropped_records = probed.trace.dropped_count();
        metrics.extra.insert(
            "occupancy_note".into(),
            probed.occupancy_note.clone().into(),
        );
        metrics
            .extra
            .insert("occupancy_probed".into(), probed.blocks_per_sm.into());
        TraceWriter::write_all(&args.out.join(trace::TRACE_FILE_NAME), &probed.trace)?;
        probed.outcome
    } else {
        dev.launch(module, &spec.kernel, &cfg, &kargs)?
    };
    metrics.kernel_ms = Some(outcome.kernel_ms);
    metrics.cycles = outcome.cycles;
    if let Some(stats) = &outcome.stats {
        metrics.warp_instructions = Some(stats.warp_instructions);
        metrics.tex_hit_rate = stats.mem.tex_hit_rate;
        metrics.l1_hit_rate = stats.mem.l1_hit_rate;
        metrics.l2_hit_rate = stats.mem.l2_hit_rate;
        if outcome.wall_seconds > 0.0 {
            metrics.extra.insert(
                "sim_warp_instructions_per_second".into(),
                (stats.warp_instructions as f64 / outcome.wall_seconds).into(),
            );
        }
        metrics
            .extra
            .insert("counters".into(), serde_json::to_value(stats)?);
    }
    for (buf, elem, path) in outputs {
        let mut data = vec![0u8; buf.bytes as usize];
        dev.download(&buf, &mut data)?;
        spec::write_npy(&path, elem, &data)?;
    }
    Ok(())
}

fn sites(spec: &spec::LaunchSpec) -> Result<Vec<SiteInfo>> {
    if spec.sites.is_empty() {
        // Undeclared sites: statistics for ids 0..16 (each costs 16 bytes of shared memory per
        // warp); accesses at higher ids are counted as dropped.
        return Ok((0..16u16)
            .map(|i| SiteInfo::new(i, format!("site {i}"), Region::Global))
            .collect());
    }
    spec.sites
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let region = match s.region.as_str() {
                "global" => Region::Global,
                "texture" => Region::Texture,
                "constant" => Region::Constant,
                "readonly" => Region::ReadOnly,
                other => bail!(
                    "site[{i}].region: {other:?}; expected global, texture, constant or readonly"
                ),
            };
            Ok(SiteInfo::new(s.id, s.name.clone(), region))
        })
        .collect()
}
