//! `warpscope launch`: any kernel — or a pipeline of kernels sharing buffers — from a spec, on
//! either backend (the work is the `launch` library's).

use crate::EmuArgs;
use anyhow::Result;
use clap::Args;
use instrument::{AccessPeriod, WarpSelection};
use std::path::PathBuf;
use trace::ProbeMode;

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
    /// Warps that also keep every access; a traced warp is always timed. Global warp indices and
    /// ranges (`0-3,17`), `every:N`, `all` or `none`.
    #[arg(long, default_value = "all")]
    pub trace_warps: WarpSelection,
    /// Warps that time their accesses and keep per-site statistics; the others run the bare path
    /// at every probe (the plain load alone). A kernel of one wave ends with its slowest timed
    /// warp, so there this lowers little of the cost; --time-accesses lowers it. Same grammar as
    /// --trace-warps; every traced warp is timed too, so sampling needs --trace-warps to select
    /// fewer than all. Anything but `all`
    /// needs probes with the bare path: a .cu is then compiled with -DWS_SAMPLED=1, and
    /// --instrument adds it; a .ptx must have been instrumented with --sampled. `every:N` picks
    /// warp g when N divides g, so an N that divides a row of the grid's warps picks the same
    /// columns in every row.
    #[arg(long, default_value = "all")]
    pub time_warps: WarpSelection,
    /// Which of its accesses a timed warp times: `all`, or `every:N` with N 1, 2, 4 or 8 (one
    /// access in N, all sites together, traced warps included; warp g times its k-th access when
    /// g + k is a multiple of N).
    /// Where the kernel's one wave ends with its slowest warp, this, not --time-warps, lowers
    /// what fenced probes cost. Anything but `all` needs probes that sample, as --time-warps does.
    #[arg(long, default_value_t = AccessPeriod::ALL)]
    pub time_accesses: AccessPeriod,
    /// Output folder: run.json, trace.wst, config.toml and the spec's output buffers.
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

pub fn run(args: &LaunchArgs) -> Result<()> {
    let opts = launch::LaunchOptions {
        spec: args.spec.clone(),
        from_dir: args.from_dir.clone(),
        mode: args.mode,
        instrument: args.instrument,
        trace_warps: args.trace_warps.clone(),
        time_warps: args.time_warps.clone(),
        time_accesses: args.time_accesses,
        out: args.out.clone(),
        cache: match (&args.cache, args.no_cache) {
            (_, true) => launch::Cache::Off,
            (Some(dir), false) => launch::Cache::Dir(dir.clone()),
            (None, false) => launch::Cache::Default,
        },
        measure_overhead: !args.no_overhead,
        backend: args.emu.backend,
        emu_config: args.emu.gpu_config()?,
        limits: args.emu.limits(true),
    };
    let metrics = launch::run(&opts, &|note| eprintln!("warpscope: {note}"))?;
    eprintln!("warpscope: wrote {}", args.out.display());
    if metrics.probes.is_some() {
        crate::print_run_verdict(&args.out, &metrics);
    }
    Ok(())
}
