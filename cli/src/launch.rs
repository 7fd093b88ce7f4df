//! `warpscope launch`: run any kernel — or a pipeline of kernels sharing buffers — from a spec on
//! either backend, write its output buffers as .npy, its probe records as `trace.wst`, and
//! `run.json`.

use crate::EmuArgs;
use crate::spec::{self, ArgPlan, LaunchPlan, Spec};
use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use device::{Arg, DevBuf, Device, LaunchConfig};
use instrument::{Probe, ProbedArg, TraceWarps, launch_probed};
use kernels::cache::CompileCache;
use std::collections::{BTreeMap, BTreeSet};
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
    /// Folder the spec's `from = FILE` inputs are read from (default: the spec's folder), e.g.
    /// the --out of an earlier launch.
    #[arg(long)]
    pub from_dir: Option<PathBuf>,
    /// Compile cache folder for .cu sources (default: ~/.cache/warpscope/compile).
    #[arg(long, conflicts_with = "no_cache")]
    pub cache: Option<PathBuf>,
    /// Compile .cu sources with nvcc every time, without the cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Skip the bare run (the same launches built without probes) that says what the probes
    /// cost: run.json's `overhead`, probed ÷ bare kernel time, printed with the verdict.
    #[arg(long)]
    pub no_overhead: bool,
}

/// PTX text and the registers per thread ptxas reports for it (for the emulator's occupancy).
#[derive(Clone)]
pub(crate) struct Compiled {
    pub ptx: String,
    pub regs: Option<u32>,
    /// The probe mode it was built with; None for a .ptx, whose mode is found per kernel.
    pub mode: Option<ProbeMode>,
    /// The sites of a kernel instrumented by the PTX rewriter (else the PTX's or the spec's).
    pub sites: Option<Vec<SiteInfo>>,
}

fn compile_cu(src: &Path, args: &LaunchArgs, mode: ProbeMode) -> Result<Compiled> {
    let context = || {
        format!(
            "compiling {} (run scripts/setup-cuda if nvcc is missing, or give a .ptx source)",
            src.display()
        )
    };
    let cache = match (&args.cache, args.no_cache) {
        (_, true) => None,
        (Some(dir), false) => Some(CompileCache::new(dir)),
        (None, false) => CompileCache::default_dir().map(CompileCache::new),
    };
    let c = match &cache {
        Some(cache) => {
            let (c, hit) =
                kernels::compile_ptx_cached(src, mode.ws_mode(), cache).with_context(context)?;
            if hit {
                eprintln!(
                    "warpscope: {} unchanged, compiled PTX from {}",
                    src.display(),
                    cache.dir().display()
                );
            } else {
                eprintln!("warpscope: {}", c.command);
            }
            c
        }
        None => {
            let c = kernels::compile_ptx(src, mode.ws_mode()).with_context(context)?;
            eprintln!("warpscope: {}", c.command);
            c
        }
    };
    Ok(Compiled {
        ptx: c.ptx,
        regs: c.registers,
        mode: Some(mode),
        sites: None,
    })
}

/// Compiles (a .cu) or reads (a .ptx) a launch's source.
fn load_source(source: &Path, args: &LaunchArgs) -> Result<Compiled> {
    let ext = source.extension().and_then(|e| e.to_str()).unwrap_or("");
    Ok(match ext {
        "cu" => compile_cu(source, args, args.mode.unwrap_or(ProbeMode::Auto))?,
        "ptx" => Compiled {
            ptx: std::fs::read_to_string(source)
                .with_context(|| format!("cannot read {}", source.display()))?,
            regs: None,
            mode: None,
            sites: None,
        },
        _ => bail!("{}: source must be a .ptx or .cu file", source.display()),
    })
}

/// Checks a launch's shape, kernel and arguments against CUDA's limits and the PTX before anything
/// runs, and returns the probe mode the launch runs with.
fn check_args(l: &LaunchPlan, compiled: &Compiled, args: &LaunchArgs) -> Result<ProbeMode> {
    emulator::check_launch_dims(l.grid, l.block)
        .map_err(|e| anyhow!("{}: kernel {}: {e}", args.spec.display(), l.kernel))?;
    // Parse with the emulator's front end on every backend: argument checks before any launch.
    let module = emulator::Module::parse(&compiled.ptx)
        .with_context(|| format!("PTX of {}", l.source.display()))?;
    let entries = module.entries();
    let entry = entries
        .iter()
        .find(|e| e.name == l.kernel)
        .with_context(|| {
            let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
            format!(
                "kernel {:?} is not in {} (entries: {})",
                l.kernel,
                l.source.display(),
                names.join(", ")
            )
        })?;
    if entry.params.len() != l.args.len() {
        bail!(
            "{}: kernel {} takes {} parameters, the spec gives {} args",
            args.spec.display(),
            l.kernel,
            entry.params.len(),
            l.args.len()
        );
    }
    for (i, (p, plan)) in entry.params.iter().zip(&l.args).enumerate() {
        let size = plan.size_bytes();
        if p.size_bytes as u64 != size {
            bail!(
                "{}: arg[{i}] of {} is {size} bytes but parameter {:?} is {} bytes",
                args.spec.display(),
                l.kernel,
                p.name,
                p.size_bytes
            );
        }
    }
    match compiled.mode {
        Some(mode) => Ok(mode),
        // a .ptx written by `warpscope instrument` names its mode in a comment
        None => ptx_mode(
            &compiled.ptx,
            entry,
            &l.args,
            args.mode
                .or_else(|| instrument::rewrite::mode_of_ptx(&compiled.ptx)),
        )
        .with_context(|| format!("{}", l.source.display())),
    }
}

pub fn run(args: &LaunchArgs) -> Result<()> {
    let mut spec = spec::load(&args.spec, args.from_dir.as_deref())?;
    // The spec as written, where instrumenting changes it: the bare run of an instrumented kernel
    // launches it without the log argument.
    let written = args.instrument.is_some().then(|| spec.clone());
    // Each distinct source is compiled (or read) once, however many launches use it.
    let mut sources: BTreeMap<PathBuf, Compiled> = BTreeMap::new();
    if args.instrument.is_some() {
        let [l] = spec.launches.as_mut_slice() else {
            bail!(
                "{}: --instrument probes one kernel; give a spec with a single launch",
                args.spec.display()
            );
        };
        let c =
            crate::instrument_cmd::for_launch(&l.source, &l.kernel, args.instrument, &mut l.args)?;
        sources.insert(l.source.clone(), c);
    }
    let mut modes = Vec::with_capacity(spec.launches.len());
    for l in &spec.launches {
        if !sources.contains_key(&l.source) {
            let c = load_source(&l.source, args)?;
            sources.insert(l.source.clone(), c);
        }
        modes.push(check_args(l, &sources[&l.source], args)?);
    }
    check_outputs(&spec, args)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let config = args.emu.gpu_config()?;
    let config_toml = config.to_toml();
    let preset = config.name.clone();
    let (mut dev, note) =
        device::open_device(args.emu.backend, config.clone(), args.emu.limits(true))?;
    let kernels: Vec<&str> = spec.launches.iter().map(|l| l.kernel.as_str()).collect();
    eprintln!(
        "warpscope: launching {} on {} ({note})",
        kernels.join(", then "),
        dev.name()
    );
    // run.json describes the probed launch, else the first; a pipeline's times add up.
    let main_index = spec
        .launches
        .iter()
        .position(|l| l.is_probed())
        .unwrap_or(0);
    let main = &spec.launches[main_index];
    let mode = modes[main_index];
    let mut metrics = RunMetrics::new(
        dev.backend().name(),
        &kernels.join("+"),
        dim3(main.grid),
        dim3(main.block),
        mode,
    );
    metrics.device = dev.name();
    metrics.clock_mhz = dev.clock_mhz();
    if dev.backend() == device::Backend::Emu {
        metrics.preset = Some(preset);
        trace::write_bytes_atomic(&args.out.join("config.toml"), config_toml.as_bytes())?;
    }
    let started = Instant::now();
    let mut result = execute(
        dev.as_mut(),
        &sources,
        &modes,
        &spec,
        args,
        &mut metrics,
        true,
    );
    // The sources of the launches that ran with probes: what the bare run builds without them.
    let probed: BTreeSet<&Path> = (spec.launches.iter().zip(&modes))
        .filter(|(l, m)| l.is_probed() && **m != ProbeMode::Off)
        .map(|(l, _)| l.source.as_path())
        .collect();
    if result.is_ok() && !probed.is_empty() && !args.no_overhead {
        drop(dev);
        let bare_spec = written.as_ref().unwrap_or(&spec);
        result = overhead(bare_spec, &sources, &probed, args, config, &mut metrics);
    }
    metrics.wall_seconds = started.elapsed().as_secs_f64();
    if let Err(e) = &result {
        metrics.errors.push(format!("{e:#}"));
    }
    metrics.write(&args.out.join("run.json"))?;
    result?;
    eprintln!("warpscope: wrote {}", args.out.display());
    if !probed.is_empty() {
        crate::print_run_verdict(&args.out, &metrics);
    }
    Ok(())
}

fn dim3(d: [u32; 3]) -> Dim3 {
    Dim3::new(d[0], d[1], d[2])
}

fn execute(
    dev: &mut dyn Device,
    sources: &BTreeMap<PathBuf, Compiled>,
    modes: &[ProbeMode],
    spec: &Spec,
    args: &LaunchArgs,
    metrics: &mut RunMetrics,
    write: bool,
) -> Result<()> {
    let mut modules = BTreeMap::new();
    for (path, c) in sources {
        modules.insert(path.clone(), dev.load(&c.ptx, None)?);
    }
    let mut bufs: Vec<DevBuf> = Vec::with_capacity(spec.buffers.len());
    for b in &spec.buffers {
        let buf = dev.alloc(b.data.len() as u64)?;
        dev.upload(&buf, &b.data)
            .with_context(|| format!("uploading {}", b.name))?;
        bufs.push(buf);
    }
    let mut per_launch = Vec::new();
    let mut outcomes = Vec::with_capacity(spec.launches.len());
    let (mut cycles, mut kernel_ms, mut warp_instructions) = (None::<u64>, 0.0, None::<u64>);
    for (n, l) in spec.launches.iter().enumerate() {
        let compiled = &sources[&l.source];
        let kargs: Vec<ProbedArg> = l
            .args
            .iter()
            .map(|a| match a {
                ArgPlan::Buffer {
                    buffer,
                    offset_bytes: 0,
                } => Arg::Buf(bufs[*buffer]).into(),
                ArgPlan::Buffer {
                    buffer,
                    offset_bytes,
                } => Arg::U64(bufs[*buffer].addr + offset_bytes).into(),
                ArgPlan::Scalar { bytes, .. } => Arg::Bytes(bytes.clone()).into(),
                ArgPlan::Null => Arg::U64(0).into(),
                ArgPlan::Log => ProbedArg::Log,
            })
            .collect();
        let cfg = LaunchConfig {
            grid: dim3(l.grid),
            block: dim3(l.block),
            dynamic_shared_bytes: l.shared_bytes,
            regs_per_thread: l.regs_per_thread.or(compiled.regs).unwrap_or(32),
        };
        let module = modules[&l.source];
        let outcome = if l.is_probed() {
            let probe = Probe {
                mode: modes[n],
                trace_warps: args.trace_warps.clone(),
                slots_per_warp: spec.slots_per_warp.unwrap_or(1024),
                sites: match &compiled.sites {
                    Some(s) => s.clone(),
                    None => match instrument::rewrite::sites_in_ptx(&compiled.ptx, &l.kernel) {
                        Some(s) => s,
                        None => sites(spec)?,
                    },
                },
            };
            let probed = launch_probed(dev, module, &l.kernel, &cfg, &kargs, &probe)
                .map_err(|e| in_launch(spec, n, e.into()))?;
            metrics.records = probed.trace.record_count();
            metrics.dropped_records = probed.trace.dropped_count();
            metrics.extra.insert(
                "occupancy_note".into(),
                probed.occupancy_note.clone().into(),
            );
            metrics
                .extra
                .insert("occupancy_probed".into(), probed.blocks_per_sm.into());
            if write {
                TraceWriter::write_all(&args.out.join(trace::TRACE_FILE_NAME), &probed.trace)?;
            }
            probed.outcome
        } else {
            // An unprobed launch has no log argument: every argument is a value.
            let values: Vec<Arg> = (kargs.into_iter())
                .filter_map(|a| match a {
                    ProbedArg::Value(v) => Some(v),
                    ProbedArg::Log => None,
                })
                .collect();
            dev.launch(module, &l.kernel, &cfg, &values)
                .map_err(|e| in_launch(spec, n, e.into()))?
        };
        kernel_ms += outcome.kernel_ms;
        if let Some(c) = outcome.cycles {
            cycles = Some(cycles.unwrap_or(0) + c);
        }
        let mut this = serde_json::Map::new();
        this.insert("kernel".into(), l.kernel.clone().into());
        this.insert("grid".into(), serde_json::to_value(l.grid)?);
        this.insert("block".into(), serde_json::to_value(l.block)?);
        this.insert("kernel_ms".into(), outcome.kernel_ms.into());
        this.insert("cycles".into(), serde_json::to_value(outcome.cycles)?);
        if let Some(stats) = &outcome.stats {
            warp_instructions = Some(warp_instructions.unwrap_or(0) + stats.warp_instructions);
            metrics.tex_hit_rate = stats.mem.tex_hit_rate;
            metrics.l1_hit_rate = stats.mem.l1_hit_rate;
            metrics.l2_hit_rate = stats.mem.l2_hit_rate;
            if stats.spilled_registers_per_thread > 0 {
                let warning = format!(
                    "{} asks for {} registers per thread; {} allows {} for this block, so its compiler would have spilled {} per thread to local memory (flagged, not timed)",
                    l.kernel,
                    cfg.regs_per_thread,
                    metrics.preset.as_deref().unwrap_or("this GPU"),
                    stats.registers_per_thread,
                    stats.spilled_registers_per_thread
                );
                eprintln!("warpscope: {warning}");
                this.insert("register_spill_note".into(), warning.into());
            }
            this.insert(
                "registers_per_thread".into(),
                stats.registers_per_thread.into(),
            );
            this.insert(
                "spilled_registers_per_thread".into(),
                stats.spilled_registers_per_thread.into(),
            );
            let counters = stats.clone();
            if spec.launches.len() == 1 {
                metrics.emulator = Some(counters);
            } else {
                this.insert("emulator".into(), serde_json::to_value(counters)?);
            }
        }
        if spec.launches.len() == 1 {
            // One launch: its entries at the top level, as before pipelines existed; kernel,
            // grid, block, kernel_ms and cycles are run.json's own fields already.
            for typed in ["kernel", "grid", "block", "kernel_ms", "cycles"] {
                this.remove(typed);
            }
            metrics.extra.append(&mut this);
        } else {
            per_launch.push(serde_json::Value::Object(this));
        }
        for &b in l.write.iter().filter(|_| write) {
            let plan = &spec.buffers[b];
            let name = format!("{}.after-{}.npy", plan.name, n + 1);
            write_buffer(dev, &bufs[b], plan.elem, &args.out.join(name))?;
        }
        outcomes.push(outcome);
    }
    if dev.backend() == device::Backend::Emu {
        metrics.threads = u32::try_from(rayon::current_num_threads()).ok();
        metrics.sim_warp_instructions_per_second =
            device::sim_warp_instructions_per_second(&outcomes);
    }
    metrics.kernel_ms = Some(kernel_ms);
    metrics.cycles = cycles;
    metrics.warp_instructions = warp_instructions;
    if !per_launch.is_empty() {
        metrics
            .extra
            .insert("launches".into(), serde_json::Value::Array(per_launch));
    }
    for (b, buf) in spec.buffers.iter().zip(&bufs).filter(|_| write) {
        if let Some(out) = &b.output {
            write_buffer(dev, buf, b.elem, &args.out.join(out))?;
        }
    }
    Ok(())
}

/// The bare run: the same launches, with the same inputs on a new device, built without probes
/// (a .cu source compiled with `WS_OFF`; an instrumented kernel as it was written), writing
/// nothing. Puts `overhead` (probed ÷ bare kernel time) and the bare kernel time and cycles in
/// `metrics`; says on stderr why not when a probed source has no bare build (a .ptx built with
/// probes).
fn overhead(
    written: &Spec,
    sources: &BTreeMap<PathBuf, Compiled>,
    probed: &BTreeSet<&Path>,
    args: &LaunchArgs,
    config: emulator::GpuConfig,
    metrics: &mut RunMetrics,
) -> Result<()> {
    let mut bare = BTreeMap::new();
    for (path, c) in sources {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let b = match (
            ext,
            args.instrument.is_some(),
            probed.contains(path.as_path()),
        ) {
            (_, _, false) => c.clone(),
            ("cu", false, true) => compile_cu(path, args, ProbeMode::Off)?,
            (_, true, true) => load_source(path, args)?,
            _ => {
                eprintln!(
                    "warpscope: what the probes cost is not measured: {} is a .ptx built with probes, with no bare build beside it",
                    path.display()
                );
                return Ok(());
            }
        };
        bare.insert(path.clone(), b);
    }
    let off = vec![ProbeMode::Off; written.launches.len()];
    let (mut dev, _) = device::open_device(args.emu.backend, config, args.emu.limits(true))?;
    let mut scratch = metrics.clone();
    execute(
        dev.as_mut(),
        &bare,
        &off,
        written,
        args,
        &mut scratch,
        false,
    )
    .context("the bare run, which measures what the probes cost")?;
    let (Some(probed_ms), Some(bare_ms)) = (metrics.kernel_ms, scratch.kernel_ms) else {
        return Ok(());
    };
    let Some(ratio) = trace::overhead_ratio(probed_ms, bare_ms) else {
        return Ok(());
    };
    metrics
        .extra
        .insert(trace::run_keys::OVERHEAD.into(), ratio.into());
    metrics
        .extra
        .insert(trace::run_keys::BARE_KERNEL_MS.into(), bare_ms.into());
    if let Some(c) = scratch.cycles {
        metrics
            .extra
            .insert(trace::run_keys::BARE_CYCLES.into(), c.into());
    }
    Ok(())
}

/// In a pipeline, says which launch an error comes from (the error itself names the kernel).
fn in_launch(spec: &Spec, n: usize, e: anyhow::Error) -> anyhow::Error {
    if spec.launches.len() == 1 {
        e
    } else {
        e.context(format!("launch {} of {}", n + 1, spec.launches.len()))
    }
}

/// Refuses, before anything runs, a launch whose outputs would overwrite one of its inputs (the
/// spec, a source, a `from = FILE` buffer) or something that is not a regular file.
fn check_outputs(spec: &Spec, args: &LaunchArgs) -> Result<()> {
    let mut inputs: Vec<&Path> = vec![args.spec.as_path()];
    inputs.extend(spec.launches.iter().map(|l| l.source.as_path()));
    inputs.extend(spec.buffers.iter().filter_map(|b| b.input.as_deref()));
    let mut outputs: Vec<PathBuf> = ["run.json", "config.toml", trace::TRACE_FILE_NAME]
        .iter()
        .map(|f| args.out.join(f))
        .collect();
    outputs.extend(
        spec.buffers
            .iter()
            .filter_map(|b| b.output.as_ref().map(|o| args.out.join(o))),
    );
    for (n, l) in spec.launches.iter().enumerate() {
        outputs.extend(l.write.iter().map(|&b| {
            args.out
                .join(format!("{}.after-{}.npy", spec.buffers[b].name, n + 1))
        }));
    }
    for out in &outputs {
        trace::check_output_against(out, &inputs)?;
    }
    Ok(())
}

fn write_buffer(dev: &mut dyn Device, buf: &DevBuf, elem: spec::Elem, path: &Path) -> Result<()> {
    let mut data = vec![0u8; buf.bytes as usize];
    dev.download(buf, &mut data)?;
    spec::write_npy(path, elem, &data)
}

fn sites(spec: &Spec) -> Result<Vec<SiteInfo>> {
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
