//! `warpscope launch`: run any kernel from a spec on either backend, write its output buffers as
//! .npy, its probe records as `trace.wst`, and `run.json`.

use crate::spec::{self, ArgPlan};
use crate::{EmuArgs, atomic_write};
use anyhow::{Context, Result, anyhow, bail};
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
    /// Probe mode a .cu source is built with (default auto). For a .ptx source built with
    /// probes, the mode it was built with (required: it is not in the PTX).
    #[arg(long)]
    pub mode: Option<ProbeMode>,
    /// Insert the probes into the unmodified kernel first (naive|fence|dummy|auto, see
    /// `warpscope instrument`); the spec then has no log argument.
    #[arg(long, value_name = "MODE", conflicts_with = "mode")]
    pub instrument: Option<ProbeMode>,
    /// Warps that also keep every access; every warp keeps per-site statistics. Global warp
    /// indices and ranges (`0-3,17`), `every:N`, `all` or `none`.
    #[arg(long, default_value = "all")]
    pub trace_warps: TraceWarps,
    /// Output folder.
    #[arg(long, default_value = "launch-out")]
    pub out: PathBuf,
}

/// PTX text and the registers per thread ptxas reports for it (for the emulator's occupancy).
pub(crate) struct Compiled {
    pub ptx: String,
    pub regs: Option<u32>,
    /// The sites of a kernel instrumented by the PTX rewriter (else the spec's).
    pub sites: Option<Vec<SiteInfo>>,
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
        sites: None,
    })
}

pub fn run(args: &LaunchArgs) -> Result<()> {
    let (spec, mut plans) = spec::load(&args.spec)?;
    emulator::check_launch_dims(spec.grid, spec.block)
        .map_err(|e| anyhow!("{}: {e}", args.spec.display()))?;
    let ext = spec
        .source
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("");
    let compiled = match ext {
        _ if args.instrument.is_some() => crate::instrument_cmd::for_launch(
            &spec.source,
            &spec.kernel,
            args.instrument,
            &mut plans,
        )?,
        "cu" => compile_cu(&spec.source, args.mode.unwrap_or(ProbeMode::Auto))?,
        "ptx" => {
            let ptx = std::fs::read_to_string(&spec.source)
                .with_context(|| format!("cannot read {}", spec.source.display()))?;
            let sites = instrument::rewrite::sites_in_ptx(&ptx, &spec.kernel);
            Compiled {
                ptx,
                regs: None,
                sites,
            }
        }
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
    let mode = match ext {
        _ if args.instrument.is_some() => args.instrument.unwrap_or(ProbeMode::Auto),
        "cu" => args.mode.unwrap_or(ProbeMode::Auto),
        _ => ptx_mode(
            &compiled.ptx,
            entry,
            &plans,
            args.mode
                .or_else(|| instrument::rewrite::mode_of_ptx(&compiled.ptx)),
        )
        .with_context(|| format!("{}", spec.source.display()))?,
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let config = args.emu.gpu_config()?;
    let config_toml = config.to_toml();
    let preset = config.name.clone();
    let (mut dev, note) = instrument::open_device(args.emu.backend, config, args.emu.limits(true))?;
    eprintln!(
        "warpscope: launching {} on {} ({note})",
        spec.kernel,
        dev.name()
    );
    let grid = Dim3::new(spec.grid[0], spec.grid[1], spec.grid[2]);
    let block = Dim3::new(spec.block[0], spec.block[1], spec.block[2]);

    let mut metrics = RunMetrics::new(dev.backend().name(), &spec.kernel, grid, block, mode);
    metrics.device = dev.name();
    metrics.clock_mhz = dev.clock_mhz();
    if dev.backend() == instrument::Backend::Emu {
        metrics.preset = Some(preset);
        atomic_write(&args.out.join("config.toml"), config_toml.as_bytes())?;
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
            sites: match &compiled.sites {
                Some(s) => s.clone(),
                None => sites(spec)?,
            },
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

/// The probe mode of a `.ptx` source. Its kernel was built with probes when its body reads the
/// `ws::Log` parameter the spec names (`log = true`): then the log is allocated and `--mode` must
/// say how it was built, because the mode is not in the PTX. Without that read (built with
/// `WS_MODE=WS_OFF`, or no log parameter) the launch is bare, and a `--mode` is refused rather
/// than recorded as something that did not run.
fn ptx_mode(
    ptx: &str,
    entry: &emulator::EntrySignature,
    plans: &[ArgPlan],
    given: Option<ProbeMode>,
) -> Result<ProbeMode> {
    let log_param = plans
        .iter()
        .position(|p| *p == ArgPlan::Log)
        .and_then(|i| entry.params.get(i));
    let probed = log_param.is_some_and(|p| reads_param(ptx, &entry.name, &p.name));
    match (probed, given) {
        (true, Some(ProbeMode::Off)) | (true, None) => bail!(
            "kernel {} reads its ws::Log parameter {:?}, so it was built with probes; name the \
             mode it was built with: --mode naive|fence|dummy|auto",
            entry.name,
            log_param.map_or("", |p| p.name.as_str())
        ),
        (true, Some(mode)) => Ok(mode),
        (false, None | Some(ProbeMode::Off)) => Ok(ProbeMode::Off),
        (false, Some(mode)) => bail!(
            "--mode {} given, but kernel {} has no probes (no log = true parameter that its body \
             reads); a .ptx keeps the mode it was built with",
            mode.name(),
            entry.name
        ),
    }
}

/// Whether the body of entry `kernel` in `ptx` loads from parameter `param` (`[param]` or
/// `[param+8]` in an `ld.param`).
fn reads_param(ptx: &str, kernel: &str, param: &str) -> bool {
    let Some(start) = ptx.find(&format!(".entry {kernel}(")) else {
        return false;
    };
    let body = &ptx[start..];
    // The entry ends at the first line that closes a brace at column 0.
    let body = body.find("\n}").map_or(body, |end| &body[..end]);
    body.lines()
        .filter(|l| l.trim_start().starts_with("ld.param"))
        .any(|l| {
            l.split('[')
                .nth(1)
                .and_then(|rest| rest.split([']', '+']).next())
                .is_some_and(|name| name.trim() == param)
        })
}
