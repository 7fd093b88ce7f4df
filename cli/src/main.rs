//! `warpscope`: the command line. Arguments become plain config structs here; the work is done
//! by the library crates. This is the only crate that uses `anyhow`; `main` prints an error once,
//! with its chain of causes, and exits non-zero.

mod companion_cmd;
mod export_cmd;
mod instrument_cmd;
mod launch_cmd;
mod run_cmd;
mod study_cmd;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "warpscope",
    version,
    about = "Measure how long memory accesses inside CUDA kernels really take, warp by warp"
)]
struct Cli {
    /// Host threads for work that runs in parallel — the SMs of one emulated launch, a sweep's
    /// runs, a run's bare frame beside its probed frame, the reuse study's renders, volume
    /// generation [default: every core]. Results do not depend on this.
    #[arg(long, global = true, value_parser = clap::value_parser!(u32).range(1..))]
    threads: Option<u32>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The main job: the volume-rendering study (sweep + analysis report), on the emulator by default.
    Demo(study_cmd::DemoArgs),
    /// Render one frame of the volume renderer with probes: image, trace, run.json.
    // A later occurrence of an option wins: the ncu re-run appends its own --frames, --out, …
    #[command(args_override_self = true)]
    Render(study_cmd::RenderArgs),
    /// Render the cross product of block shapes × viewpoints × probe modes: a folder per run and
    /// sweep.csv.
    Sweep(study_cmd::SweepArgs),
    /// Join the folders of a sweep's shards (`sweep --shard K/N`) into one sweep folder.
    Merge(study_cmd::MergeArgs),
    /// Analyse a sweep: breakdown, correlations, per-warp distributions, hot spots, figures, report.
    Analyze {
        /// The sweep folder (with sweep.csv).
        sweep: PathBuf,
        /// Output folder (default SWEEP/report).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Measure the roofline ceilings on the emulator with microbenchmark kernels.
    Roofline(companion_cmd::RooflineArgs),
    /// Working set and LRU reuse distance of the volume renderer's texture stream.
    Reuse(companion_cmd::ReuseArgs),
    /// Which architecture-neutral features explain each platform's frame time (sweeps of a parameter).
    Compare(companion_cmd::CompareArgs),
    /// Write a run's records as csv, warp-csv, clog2 (Jumpshot), chrome (Perfetto), otf2 (Vampir) or parquet.
    Export(export_cmd::ExportArgs),
    /// Run any kernel described by a launch spec (TOML) on the GPU or the emulator.
    Launch(launch_cmd::LaunchArgs),
    /// The frames of a GPU sweep's hardware-counter pass, which the sweep runs under Nsight
    /// Compute (not for users).
    #[command(hide = true)]
    CounterFrames {
        /// The sweep folder, holding counter-frames.json.
        dir: PathBuf,
    },
    /// Profile an unmodified CUDA program: `warpscope run [OPTIONS] -- ./app [ARGS]`.
    Run(run_cmd::RunArgs),
    /// Put the probes into an unmodified kernel: writes PTX with every selected load timed.
    Instrument(instrument_cmd::InstrumentArgs),
    /// Validate warpscope on a GPU machine in one budgeted run: device, corpus, probes,
    /// calibration, study, exports → gpu-report.md (the same plan on the emulator with --backend emu).
    GpuCheck(GpuCheckArgs),
    /// List the emulator presets, or print one preset's effective configuration as TOML.
    Presets {
        /// Print this preset's configuration.
        name: Option<String>,
    },
}

/// Options shared by every command that can run the emulator.
#[derive(Args, Clone, Debug)]
pub struct EmuArgs {
    /// gpu, emu, or auto (the GPU when one is usable).
    #[arg(long, default_value = "auto")]
    pub backend: device::BackendChoice,
    /// Emulator preset: gtx480, v100, a100, h100, h200.
    #[arg(long, default_value = "gtx480", conflicts_with = "config")]
    pub preset: String,
    /// Emulator configuration file (TOML), instead of a preset: a whole one, or a preset's
    /// values changed (`base = "h100"` and the keys that differ).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Emulator: end a launch with an error after this many warp instructions (a runaway
    /// guard; one paper-scale frame of the volume renderer is ~4.5·10⁷).
    #[arg(long, default_value_t = device::DEFAULT_MAX_WARP_INSTRUCTIONS)]
    pub max_warp_instructions: u64,
    /// Emulator: end a launch with an error once it has run this many seconds.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub time_limit: Option<Duration>,
}

fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    Duration::try_from_secs_f64(secs)
        .map_err(|_| format!("{s:?}: give a positive number of seconds"))
}

#[derive(Args, Debug, Clone)]
pub struct GpuCheckArgs {
    /// Output folder (gpu-report.md, gpu-results.json, and one folder per step).
    #[arg(long, default_value = "gpu-check-out")]
    pub out: PathBuf,
    /// gpu (the default: what the bundle is for) or emu (the whole plan on the emulator).
    #[arg(long, default_value = "gpu", value_parser = ["gpu", "emu"])]
    pub backend: String,
    /// Wall-clock budget for the whole plan; the step running at the end is cut off.
    #[arg(long, default_value_t = 8.0)]
    pub budget_minutes: f64,
    /// Emulator preset beside the GPU (default: the one matching the GPU's name, else h100).
    #[arg(long)]
    pub preset: Option<String>,
}

/// The exit status of a `gpu-check` stopped at the end of its budget.
const BUDGET_SPENT_EXIT: i32 = 3;

/// `warpscope gpu-check`: the plan of the `check` crate, its progress on stderr. At the deadline
/// the process ends with status 3 (the budget is a promise to the machine's loan, not a hint: a
/// hung step cannot be stopped otherwise); the report says which step was cut off. A plan whose
/// budget ran out between steps ends with the same status, so that the status says whether the
/// plan was whole, however the steps' times fell.
fn gpu_check(args: &GpuCheckArgs) -> Result<()> {
    let cfg = check::CheckConfig {
        out: args.out.clone(),
        backend: if args.backend == "gpu" {
            check::CheckBackend::Gpu
        } else {
            check::CheckBackend::Emu
        },
        budget_minutes: args.budget_minutes,
        preset: args.preset.clone(),
        program: std::env::current_exe().context("cannot find the warpscope executable")?,
    };
    let progress = |p: check::Progress<'_>| match p {
        check::Progress::NoGpu { error } => {
            eprintln!("warpscope: gpu-check: no usable GPU ({error}); every GPU step will fail")
        }
        check::Progress::Step {
            number,
            of,
            title,
            left,
        } => eprintln!(
            "warpscope: gpu-check: step {number} of {of}: {title} ({:.0} s left)",
            left.as_secs_f64()
        ),
        check::Progress::StudyShard { shard, runs, left } => eprintln!(
            "warpscope: gpu-check: study shard {shard} done: {runs} runs ({:.0} s left)",
            left.as_secs_f64()
        ),
        check::Progress::Deadline {
            after,
            report,
            written,
        } => {
            if let Err(e) = written {
                eprintln!(
                    "warpscope: gpu-check: writing the report at the deadline: {}",
                    trace::error_chain(e)
                );
            }
            eprintln!(
                "warpscope: gpu-check: budget spent after {:.0} s; report: {}",
                after.as_secs_f64(),
                report.display()
            );
            std::process::exit(BUDGET_SPENT_EXIT);
        }
    };
    let done = check::run(&cfg, &progress)?;
    println!(
        "warpscope: gpu-check on {} finished in {:.0} s: {} -> {}",
        done.results.backend,
        done.elapsed.as_secs_f64(),
        if done.results.all_passed() {
            "every step done and passed"
        } else {
            "see the report for failed, cut-off or disagreeing steps"
        },
        done.report.display()
    );
    if done.results.cut_off() {
        eprintln!("warpscope: gpu-check: the budget cut the plan short; see the report");
        std::process::exit(BUDGET_SPENT_EXIT);
    }
    Ok(())
}

/// Seconds between two progress lines of a long emulator launch.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

impl EmuArgs {
    /// The runaway guards of this command's launches. With `progress`, a long launch prints a
    /// line to stderr every ten seconds (lines, not a redrawn bar, so a log file shows them too).
    pub fn limits(&self, progress: bool) -> device::EmuLimits {
        let progress = progress.then(|| {
            let started = Instant::now();
            let last = Mutex::new(started);
            let report: emulator::ProgressFn = Arc::new(move |p: &emulator::Progress| {
                let Ok(mut last) = last.lock() else { return };
                if last.elapsed() < PROGRESS_EVERY {
                    return;
                }
                *last = Instant::now();
                eprintln!(
                    "warpscope: emulating: {:.1} M warp instructions, {} of {} blocks started, cycle {}, {:.0} s",
                    p.warp_instructions as f64 / 1e6,
                    p.blocks_started,
                    p.blocks_total,
                    p.cycle,
                    started.elapsed().as_secs_f64()
                );
            });
            report
        });
        device::EmuLimits {
            max_warp_instructions: self.max_warp_instructions,
            watch: emulator::Watch {
                time_limit: self.time_limit,
                progress,
            },
        }
    }

    pub fn gpu_config(&self) -> Result<emulator::GpuConfig> {
        match &self.config {
            Some(path) => Ok(emulator::GpuConfig::from_file(path)?),
            None => Ok(emulator::GpuConfig::preset(&self.preset)?),
        }
    }
}

/// Prints one probed run's verdict (where its warps' time went, per site) and, where a bare run
/// beside it measured them, what the probes cost; `launch` and `render` end with it. A trace it
/// cannot read loses only these lines.
pub fn print_run_verdict(run_dir: &Path, m: &trace::RunMetrics) {
    match analysis::run_verdict(&run_dir.join(trace::TRACE_FILE_NAME)) {
        Ok(lines) => lines.iter().for_each(|l| println!("  {l}")),
        Err(e) => eprintln!("warpscope: no verdict: {}", trace::error_chain(&e)),
    }
    if let Some(line) = analysis::probe_cost(m.kernel_ms, m.bare_kernel_ms()) {
        println!("  {line}");
    }
}

/// Runs the analysis and tells the user what it left out.
pub fn analyze_sweep(sweep: &Path, out: &Path) -> Result<analysis::AnalysisSummary> {
    let summary = analysis::analyze(sweep, out, &analysis::AnalyzeOptions::default())
        .with_context(|| format!("analysing {}", sweep.display()))?;
    for s in &summary.skipped {
        eprintln!("warpscope: analysis left out {s}");
    }
    for n in &summary.notes {
        eprintln!("warpscope: note: {n}");
    }
    for v in &summary.verdict {
        println!("  {v}");
    }
    for f in &summary.findings {
        println!("  * {f}");
    }
    Ok(summary)
}

/// Runs the command; `warpscope run` exits with its program's status, every other command with
/// success.
fn run() -> Result<ExitCode> {
    let cli = Cli::parse();
    if let Some(n) = cli.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n as usize)
            .build_global()
            .context("setting up the thread pool")?;
    }
    if let Command::Run(args) = &cli.command {
        let code = run_cmd::run(args)?;
        return Ok(ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX)));
    }
    match cli.command {
        Command::Run(_) => unreachable!("handled above"),
        Command::Demo(args) => study_cmd::demo(&args),
        Command::CounterFrames { dir } => study_cmd::counter_frames(&dir),
        Command::Render(args) => study_cmd::render(&args),
        Command::Sweep(args) => study_cmd::sweep(&args),
        Command::Merge(args) => study_cmd::merge(&args),
        Command::Analyze { sweep, out } => {
            let out = out.unwrap_or_else(|| sweep.join("report"));
            let summary = analyze_sweep(&sweep, &out)?;
            println!("warpscope: report: {}", summary.report_html.display());
            Ok(())
        }
        Command::Roofline(args) => companion_cmd::roofline(&args),
        Command::Reuse(args) => companion_cmd::reuse(&args),
        Command::Compare(args) => companion_cmd::compare(&args),
        Command::Export(args) => export_cmd::run(&args),
        Command::Launch(args) => launch_cmd::run(&args),
        Command::Instrument(args) => instrument_cmd::run(&args),
        Command::GpuCheck(args) => gpu_check(&args),
        Command::Presets { name: None } => {
            for name in emulator::GpuConfig::preset_names() {
                println!("{name}");
            }
            Ok(())
        }
        Command::Presets { name: Some(name) } => {
            print!("{}", emulator::GpuConfig::preset(&name)?.to_toml());
            Ok(())
        }
    }
    .map(|()| ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("warpscope: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// `docs/reference/` is generated from the code (the `reference` crate); a committed page
    /// that differs from what the code says now fails here.
    #[test]
    fn reference_pages_are_current() {
        let pages = reference::pages(&Cli::command()).expect("the pages");
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent();
        let dir = root
            .expect("cli sits in the workspace")
            .join("docs/reference");
        if std::env::var_os("WARPSCOPE_BLESS").is_some() {
            reference::write(&dir, &pages).expect("writing the pages");
        }
        let stale = reference::stale(&dir, &pages).expect("reading the pages");
        assert!(
            stale.is_empty(),
            "these reference pages differ from the code: {stale:?}; rewrite them with `{}`",
            reference::BLESS_COMMAND
        );
    }
}
