//! `warpscope run -- APP [ARGS...]`: profile an unmodified CUDA program, as `ncu ./app` does (the
//! work is the `profile` crate's and the library it injects).

use anyhow::{Context, Result, bail};
use clap::Args;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use trace::{Outcome, ProbeMode};

#[derive(Args, Debug)]
#[command(
    after_help = "Each selected launch runs with probes in place of the original, on the program's own \
                  stream; the program's output, errors and exit status are its own. A launch that \
                  cannot be probed (no PTX in the program, a stream being captured, launch attributes) \
                  runs as it was and the index says why. Needs an NVIDIA GPU and its driver."
)]
pub struct RunArgs {
    /// Kernels to profile: a name (mangled, demangled, or the function's base name) or
    /// `regex:EXPR`, as Nsight Compute's --kernel-name [default: every kernel].
    #[arg(long, short = 'k', value_name = "NAME")]
    pub kernel_name: Option<String>,
    /// Launches of each selected kernel to skip before profiling.
    #[arg(long, short = 's', default_value_t = 0, value_name = "N")]
    pub launch_skip: u64,
    /// Launches of each selected kernel to profile, after the skipped ones; 0 for every one.
    #[arg(long, short = 'c', default_value_t = 1, value_name = "N")]
    pub launch_count: u64,
    /// How the probes time each load: naive, fence, dummy, or auto (fence for writable memory,
    /// dummy for read-only memory).
    #[arg(long, default_value = "auto")]
    pub mode: ProbeMode,
    /// Warps that also keep every access; a traced warp is always timed. Global warp indices and
    /// ranges (`0-3,17`), `every:N`, `all` or `none`.
    #[arg(long, default_value = "none")]
    pub trace_warps: String,
    /// Warps that time their accesses and keep per-site statistics; the others run the bare path
    /// at every probe (the plain load alone). A kernel of one wave ends with its slowest timed
    /// warp, so there this lowers little of the cost; --time-accesses lowers it. Same grammar as
    /// --trace-warps; every traced warp is timed too. Anything but `all` gives every probe the
    /// bare path, which the probes timing all warps do without. `every:N` picks warp g when N
    /// divides g, so an N that divides a row of the grid's warps picks the same columns in every
    /// row.
    #[arg(long, default_value = "all")]
    pub time_warps: String,
    /// Which of its accesses a timed warp times: `all`, or `every:N` with N 1, 2, 4 or 8 (one
    /// access in N, all sites together, traced warps included; warp g times its k-th access when
    /// g + k is a multiple of N).
    /// Where the kernel's one wave ends with its slowest warp, this, not --time-warps, lowers
    /// what fenced probes cost. Anything but `all` needs probes that sample, as --time-warps does.
    #[arg(long, default_value = "all")]
    pub time_accesses: String,
    /// Loads to time: global, texture, readonly, constant, shared, local (comma-separated).
    #[arg(long, default_value = profile::DEFAULT_SITES)]
    pub sites: String,
    /// Result folder: one run folder per profiled launch, launches.jsonl, index.json.
    #[arg(long, default_value = "warpscope-run")]
    pub out: PathBuf,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "APP [ARGS]...")]
    pub app: Vec<OsString>,
}

/// Runs the program; returns its exit code, which `warpscope run` exits with.
pub fn run(args: &RunArgs) -> Result<i32> {
    // One line and a non-zero exit where there is no GPU: the program is not started.
    if let Err(e) = device::CudaDevice::open(0) {
        let why = match e {
            device::DeviceError::NoDriver => "libcuda.so.1 could not be loaded".to_string(),
            device::DeviceError::NoGpu(why) => why,
            other => trace::error_chain(&other),
        };
        bail!("warpscope run needs an NVIDIA GPU and its driver (libcuda.so.1): {why}");
    }
    let exe = std::env::current_exe().context("finding the warpscope executable")?;
    let (program, app_args) = args
        .app
        .split_first()
        .context("no program given after --")?;
    let run = profile::AppRun {
        program: program.clone(),
        args: app_args.to_vec(),
        config: profile::RunConfig {
            out: args.out.clone(),
            mode: args.mode,
            trace_warps: args.trace_warps.clone(),
            time_warps: args.time_warps.clone(),
            time_accesses: args.time_accesses.clone(),
            sites: args.sites.clone(),
            kernel_name: args.kernel_name.clone(),
            launch_skip: args.launch_skip,
            launch_count: (args.launch_count > 0).then_some(args.launch_count),
            ..profile::RunConfig::default()
        },
        library: profile::find_library(&exe)?,
    };
    let index = profile::run_app(&run)?;
    report(&args.out, &index);
    Ok(match (index.exit_code, index.signal) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    })
}

/// What the program's launches became, on stderr (stdout is the program's): the report's verdict
/// and where the report is, each profiled launch's folder, then the launches left unprofiled,
/// once per reason.
fn report(out: &std::path::Path, index: &trace::ProgramIndex) {
    match analysis::program_report(out) {
        Ok((verdict, md)) => {
            verdict.iter().for_each(|l| eprintln!("warpscope: {l}"));
            eprintln!("warpscope: report: {}", md.display());
        }
        Err(e) => eprintln!("warpscope: no report: {}", trace::error_chain(&e)),
    }
    let mut unprofiled: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in &index.launches {
        match &r.outcome {
            Outcome::Profiled {
                run,
                ptx_target,
                kernel_ms,
            } => eprintln!(
                "warpscope: {} (launch {}, {ptx_target}, {kernel_ms:.4} ms probed) -> {}",
                r.demangled,
                r.seq,
                out.join(run).display()
            ),
            Outcome::Unprofiled { reason } => {
                unprofiled.entry(reason).or_default().push(&r.demangled);
            }
            Outcome::Timed { .. } | Outcome::Passed => {}
        }
    }
    for (reason, kernels) in &unprofiled {
        let mut names = kernels.clone();
        names.sort_unstable();
        names.dedup();
        eprintln!(
            "warpscope: {} launch{} not profiled ({}): {reason}",
            kernels.len(),
            if kernels.len() == 1 { "" } else { "es" },
            names.join(", ")
        );
    }
    if index.truncated_records > 0 {
        eprintln!(
            "warpscope: the program ended while a launch record was being written; that launch is left out"
        );
    }
}
