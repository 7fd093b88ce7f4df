//! Running a spec: every launch on one device, the probed one through [`instrument::launch_probed`],
//! then — unless told not to — the same launches built without probes on a new device, which says
//! what the probes cost. Writes the output buffers as `.npy`, the probe records as `trace.wst`,
//! the emulator's effective `config.toml` and `run.json` (last, with any error in it).

use crate::error::{Context, LaunchError, Result, invalid};
use crate::source::{Cache, Compiled, for_launch, load_source};
use crate::spec::{self, ArgPlan, LaunchPlan, Spec};
use device::{Arg, BackendChoice, DevBuf, Device, EmuLimits, LaunchConfig};
use instrument::{AccessPeriod, Probe, ProbedArg, WarpSelection, launch_probed};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;
use trace::{
    BareRun, Dim3, LaunchFacts, ProbeFacts, ProbeMode, Region, RunMetrics, SiteInfo, TraceWriter,
};

/// What to launch and how; [`run`] reads nothing else.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// The launch spec (TOML).
    pub spec: PathBuf,
    /// Folder the spec's `from = FILE` inputs are read from (default: the spec's folder).
    pub from_dir: Option<PathBuf>,
    /// The probe mode a .cu source is built with (default auto); for a .ptx built with probes,
    /// the mode it was built with.
    pub mode: Option<ProbeMode>,
    /// Put the probes into the unmodified kernel first, in this mode.
    pub instrument: Option<ProbeMode>,
    pub trace_warps: WarpSelection,
    /// Warps that time their accesses (every traced warp does too); the others run bare.
    pub time_warps: WarpSelection,
    /// Which of its accesses a timed warp times.
    pub time_accesses: AccessPeriod,
    /// The output folder.
    pub out: PathBuf,
    pub cache: Cache,
    /// Run the same launches without probes too, which measures what the probes cost.
    pub measure_overhead: bool,
    pub backend: BackendChoice,
    /// The emulator's configuration, for the emulator backend (and the `auto` fallback).
    pub emu_config: emulator::GpuConfig,
    pub limits: EmuLimits,
}

/// Runs the spec and writes the run folder; returns what run.json holds. `note` hears what is
/// worth telling the user on the way (compiler commands, the device, warnings). When a launch
/// fails after the device was opened, run.json is still written, with the error in it.
pub fn run(opts: &LaunchOptions, note: &dyn Fn(&str)) -> Result<RunMetrics> {
    let mut spec = spec::load(&opts.spec, opts.from_dir.as_deref())?;
    // The spec as written, where instrumenting changes it: the bare run of an instrumented kernel
    // launches it without the log argument.
    let written = opts.instrument.is_some().then(|| spec.clone());
    // Each distinct source is compiled (or read) once, however many launches use it; with the
    // sampling probes when not every warp, or not every access, is timed.
    let mut sources: BTreeMap<PathBuf, Compiled> = BTreeMap::new();
    let sampled = instrument::needs_sampled_build(&opts.time_warps, opts.time_accesses);
    if opts.instrument.is_some() {
        let [l] = spec.launches.as_mut_slice() else {
            invalid!(
                "{}: --instrument probes one kernel; give a spec with a single launch",
                opts.spec.display()
            );
        };
        let c = for_launch(
            &l.source,
            &l.kernel,
            opts.instrument,
            sampled,
            &mut l.args,
            note,
        )?;
        sources.insert(l.source.clone(), c);
    }
    let mut modes = Vec::with_capacity(spec.launches.len());
    for l in &spec.launches {
        if !sources.contains_key(&l.source) {
            let c = load_source(&l.source, &opts.cache, opts.mode, sampled, note)?;
            sources.insert(l.source.clone(), c);
        }
        modes.push(check_args(l, &sources[&l.source], opts)?);
    }
    check_outputs(&spec, opts)?;
    std::fs::create_dir_all(&opts.out).map_err(|source| LaunchError::Write {
        path: opts.out.clone(),
        source,
    })?;
    let (mut dev, why) =
        device::open_device(opts.backend, opts.emu_config.clone(), opts.limits.clone())?;
    if let Some(arch) = dev.register_target() {
        // The instrumented kernel's count was its own entry's; a compiled source's, its largest.
        let instrumented = opts.instrument.map(|_| spec.launches[0].kernel.as_str());
        for c in sources.values_mut() {
            c.retarget(arch, instrumented, note);
        }
    }
    let kernels: Vec<&str> = spec.launches.iter().map(|l| l.kernel.as_str()).collect();
    note(&format!(
        "launching {} on {} ({why})",
        kernels.join(", then "),
        dev.name()
    ));
    // run.json describes the probed launch, else the first; a pipeline's times add up.
    let main_index = spec
        .launches
        .iter()
        .position(|l| l.is_probed())
        .unwrap_or(0);
    let main = &spec.launches[main_index];
    let mut metrics = RunMetrics::new(
        dev.backend().name(),
        &kernels.join("+"),
        dim3(main.grid),
        dim3(main.block),
        modes[main_index],
    );
    metrics.device = dev.name();
    metrics.clock_mhz = dev.clock_mhz();
    if dev.backend() == device::Backend::Emu {
        metrics.preset = Some(opts.emu_config.name.clone());
        trace::write_bytes_atomic(
            &opts.out.join("config.toml"),
            opts.emu_config.to_toml().as_bytes(),
        )?;
    }
    let started = Instant::now();
    let mut result = execute(
        dev.as_mut(),
        (&sources, &modes),
        &spec,
        opts,
        &mut metrics,
        Pass::Measured,
        note,
    );
    // The sources of the launches that ran with probes: what the bare run builds without them.
    let probed: BTreeSet<&Path> = (spec.launches.iter().zip(&modes))
        .filter(|(l, m)| l.is_probed() && **m != ProbeMode::Off)
        .map(|(l, _)| l.source.as_path())
        .collect();
    if result.is_ok() && !probed.is_empty() && opts.measure_overhead {
        drop(dev);
        let bare_spec = written.as_ref().unwrap_or(&spec);
        result = overhead(bare_spec, &sources, &probed, opts, &mut metrics, note);
    }
    metrics.wall_seconds = started.elapsed().as_secs_f64();
    if let Err(e) = &result {
        metrics.errors.push(trace::error_chain(e));
    }
    metrics.write(&opts.out.join(trace::RUN_FILE_NAME))?;
    result.map(|()| metrics)
}

fn dim3(d: [u32; 3]) -> Dim3 {
    Dim3::new(d[0], d[1], d[2])
}

/// The device's arguments of a launch, the ws::Log marked where the spec has `log = true`.
fn kernel_args(l: &LaunchPlan, bufs: &[DevBuf]) -> Vec<ProbedArg> {
    (l.args.iter())
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
        .collect()
}

/// Which of a run's two passes [`execute`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// The run itself: writes the buffers and the trace into the output folder.
    Measured,
    /// The same launches without probes, for their kernel time: writes nothing.
    Bare,
}

/// Runs every launch of `spec` on `dev` and puts what they measured in `metrics`.
fn execute(
    dev: &mut dyn Device,
    (sources, modes): (&BTreeMap<PathBuf, Compiled>, &[ProbeMode]),
    spec: &Spec,
    opts: &LaunchOptions,
    metrics: &mut RunMetrics,
    pass: Pass,
    note: &dyn Fn(&str),
) -> Result<()> {
    let write = pass == Pass::Measured;
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
    let mut outcomes = Vec::with_capacity(spec.launches.len());
    let (mut cycles, mut kernel_ms, mut warp_instructions) = (None::<u64>, 0.0, None::<u64>);
    for (n, l) in spec.launches.iter().enumerate() {
        let compiled = &sources[&l.source];
        let kargs = kernel_args(l, &bufs);
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
                trace_warps: opts.trace_warps.clone(),
                time_warps: opts.time_warps.clone(),
                access_period: opts.time_accesses,
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
            metrics.occupancy = Some(probed.blocks_per_sm);
            if modes[n] != ProbeMode::Off {
                metrics.probes = Some(ProbeFacts {
                    kind: probed.trace.launch.kind,
                    trace_warps: probe.trace_warps.to_string(),
                    time_warps: probe.time_warps.to_string(),
                    time_accesses: probe.access_period.to_string(),
                    timed_warps: Some(probed.timed_warps),
                    timed_accesses: Some(probed.trace.timed_access_count()),
                    slots_per_warp: probe.slots_per_warp,
                    shared_bytes: probed.probe_shared_bytes,
                    occupancy_note: probed.occupancy_note.clone(),
                });
            }
            // The probe beside the true access times, where the device knows them. The bare
            // pass runs the original kernel on another device, so no truth shift here.
            if let Some(loads) = probed.outcome.loads.as_deref() {
                metrics.truth = instrument::ground_truth(&probed.trace, loads, None);
            }
            if write {
                TraceWriter::write_all(&opts.out.join(trace::TRACE_FILE_NAME), &probed.trace)?;
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
        if let Some(stats) = &outcome.stats {
            warp_instructions = Some(warp_instructions.unwrap_or(0) + stats.warp_instructions);
            metrics.set_counters(trace::HardwareCounters::of_emulator(stats));
            if stats.spilled_registers_per_thread > 0 && write {
                let warning = format!(
                    "{} asks for {} registers per thread; {} allows {} for this block, so its compiler would have spilled {} per thread to local memory (flagged, not timed)",
                    l.kernel,
                    cfg.regs_per_thread,
                    metrics.preset.as_deref().unwrap_or("this GPU"),
                    stats.registers_per_thread,
                    stats.spilled_registers_per_thread
                );
                note(&warning);
                metrics.warnings.push(warning);
            }
        }
        if spec.launches.len() == 1 {
            metrics.emulator = outcome.stats.clone();
        } else {
            metrics.launches.push(LaunchFacts {
                kernel: l.kernel.clone(),
                grid: cfg.grid,
                block: cfg.block,
                kernel_ms: outcome.kernel_ms,
                cycles: outcome.cycles,
                emulator: outcome.stats.clone(),
            });
        }
        for &b in l.write.iter().filter(|_| write) {
            let plan = &spec.buffers[b];
            let name = format!("{}.after-{}.npy", plan.name, n + 1);
            write_buffer(dev, &bufs[b], plan.elem, &opts.out.join(name))?;
        }
        outcomes.push(outcome);
    }
    if dev.backend() == device::Backend::Emu {
        metrics.threads = u32::try_from(rayon::current_num_threads()).ok();
        metrics.sim_warp_instructions_per_second =
            device::sim_warp_instructions_per_second(&outcomes);
        metrics.thread_seconds = device::thread_seconds(&outcomes);
    }
    metrics.kernel_ms = Some(kernel_ms);
    metrics.cycles = cycles;
    metrics.warp_instructions = warp_instructions;
    for (b, buf) in spec.buffers.iter().zip(&bufs).filter(|_| write) {
        if let Some(out) = &b.output {
            write_buffer(dev, buf, b.elem, &opts.out.join(out))?;
        }
    }
    Ok(())
}

/// The bare run: the same launches, with the same inputs on a new device, built without probes
/// (a .cu source compiled with `WS_OFF`; an instrumented kernel as it was written), writing
/// nothing. Puts `overhead` (probed ÷ bare kernel time) and the bare kernel time and cycles in
/// `metrics`; notes why not when a probed source has no bare build (a .ptx built with probes).
fn overhead(
    written: &Spec,
    sources: &BTreeMap<PathBuf, Compiled>,
    probed: &BTreeSet<&Path>,
    opts: &LaunchOptions,
    metrics: &mut RunMetrics,
    note: &dyn Fn(&str),
) -> Result<()> {
    let mut bare = BTreeMap::new();
    // The sources built here, whose registers are counted for the device's target below; the
    // others were counted for it already.
    let mut fresh = Vec::new();
    for (path, c) in sources {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let b = match (
            ext,
            opts.instrument.is_some(),
            probed.contains(path.as_path()),
        ) {
            (_, _, false) => c.clone(),
            ("cu", false, true) => {
                fresh.push(path.clone());
                crate::source::compile_cu(path, &opts.cache, ProbeMode::Off, false, note)?
            }
            (_, true, true) => {
                fresh.push(path.clone());
                load_source(path, &opts.cache, opts.mode, false, note)?
            }
            _ => {
                note(&format!(
                    "what the probes cost is not measured: {} is a .ptx built with probes, with no bare build beside it",
                    path.display()
                ));
                return Ok(());
            }
        };
        bare.insert(path.clone(), b);
    }
    let off = vec![ProbeMode::Off; written.launches.len()];
    let (mut dev, _) =
        device::open_device(opts.backend, opts.emu_config.clone(), opts.limits.clone())?;
    if let Some(arch) = dev.register_target() {
        for path in &fresh {
            if let Some(c) = bare.get_mut(path) {
                c.retarget(arch, None, note);
            }
        }
    }
    let mut scratch = metrics.clone();
    execute(
        dev.as_mut(),
        (&bare, &off),
        written,
        opts,
        &mut scratch,
        Pass::Bare,
        note,
    )
    .context("the bare run, which measures what the probes cost")?;
    let (Some(probed_ms), Some(bare_ms)) = (metrics.kernel_ms, scratch.kernel_ms) else {
        return Ok(());
    };
    metrics.overhead = trace::overhead_ratio(probed_ms, bare_ms);
    if metrics.overhead.is_some() {
        metrics.bare = Some(BareRun {
            kernel_ms: Some(bare_ms),
            cycles: scratch.cycles,
            ..BareRun::default()
        });
    }
    Ok(())
}

/// Checks a launch's shape, kernel and arguments against CUDA's limits and the PTX before anything
/// runs, and returns the probe mode the launch runs with.
fn check_args(l: &LaunchPlan, compiled: &Compiled, opts: &LaunchOptions) -> Result<ProbeMode> {
    if let Err(why) = emulator::check_launch_dims(l.grid, l.block) {
        invalid!("{}: kernel {}: {why}", opts.spec.display(), l.kernel);
    }
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
        invalid!(
            "{}: kernel {} takes {} parameters, the spec gives {} args",
            opts.spec.display(),
            l.kernel,
            entry.params.len(),
            l.args.len()
        );
    }
    for (i, (p, plan)) in entry.params.iter().zip(&l.args).enumerate() {
        let size = plan.size_bytes();
        if p.size_bytes as u64 != size {
            invalid!(
                "{}: arg[{i}] of {} is {size} bytes but parameter {:?} is {} bytes",
                opts.spec.display(),
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
            opts.mode
                .or_else(|| instrument::rewrite::mode_of_ptx(&compiled.ptx)),
        )
        .with_context(|| format!("{}", l.source.display())),
    }
}

/// In a pipeline, says which launch an error comes from (the error itself names the kernel).
fn in_launch(spec: &Spec, n: usize, e: LaunchError) -> LaunchError {
    if spec.launches.len() == 1 {
        e
    } else {
        LaunchError::Context {
            what: format!("launch {} of {}", n + 1, spec.launches.len()),
            source: Box::new(e),
        }
    }
}

/// Refuses, before anything runs, a launch whose outputs would overwrite one of its inputs (the
/// spec, a source, a `from = FILE` buffer) or something that is not a regular file.
fn check_outputs(spec: &Spec, opts: &LaunchOptions) -> Result<()> {
    let mut inputs: Vec<&Path> = vec![opts.spec.as_path()];
    inputs.extend(spec.launches.iter().map(|l| l.source.as_path()));
    inputs.extend(spec.buffers.iter().filter_map(|b| b.input.as_deref()));
    let mut outputs: Vec<PathBuf> = [trace::RUN_FILE_NAME, "config.toml", trace::TRACE_FILE_NAME]
        .iter()
        .map(|f| opts.out.join(f))
        .collect();
    outputs.extend(
        spec.buffers
            .iter()
            .filter_map(|b| b.output.as_ref().map(|o| opts.out.join(o))),
    );
    for (n, l) in spec.launches.iter().enumerate() {
        outputs.extend(l.write.iter().map(|&b| {
            opts.out
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
                other => invalid!(
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
        (true, Some(ProbeMode::Off)) | (true, None) => invalid!(
            "kernel {} reads its ws::Log parameter {:?}, so it was built with probes; name the \
             mode it was built with: --mode naive|fence|dummy|auto",
            entry.name,
            log_param.map_or("", |p| p.name.as_str())
        ),
        (true, Some(mode)) => Ok(mode),
        (false, None | Some(ProbeMode::Off)) => Ok(ProbeMode::Off),
        (false, Some(mode)) => invalid!(
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
