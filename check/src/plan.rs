//! `warpscope gpu-check`: one command that validates warpscope on a GPU machine (or runs the same
//! plan on the emulator), step by step in priority order, under a time budget.
//!
//! Why one command with a budget: the GPU machines this project can use are lent for minutes, with
//! no Rust and no network, so what runs there is the release binary of `scripts/gpu-bundle` and
//! everything must fit one call. Each step writes `gpu-results.json` and `gpu-report.md` before
//! the next starts, so whatever the budget cuts off, the steps before it are on disk. A watchdog
//! thread ends the process at the deadline with the running step marked "cut off": a step that
//! does not return in time (a hung launch, a slow emulator run) cannot eat the machine's loan.
//!
//! Every step runs the same code on both backends (`--backend gpu|emu`); only the sizes of the
//! study differ (the paper's geometry on a GPU, the quick one on the emulator).

mod corpus;
mod micro;
mod report;
mod steps;
mod verdict;

use anyhow::{Context, Result};
use clap::Args;
use device::{CudaDevice, Device, EmuDevice};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The file names the plan writes into `--out`.
pub const RESULTS_JSON: &str = "gpu-results.json";
pub const REPORT_MD: &str = "gpu-report.md";

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

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    NotStarted,
    Running,
    Done,
    Failed,
    /// Stopped by the budget (its partial results, if any, are kept).
    CutOff,
}

impl StepStatus {
    pub fn word(self) -> &'static str {
        match self {
            StepStatus::NotStarted => "not started",
            StepStatus::Running => "running",
            StepStatus::Done => "done",
            StepStatus::Failed => "FAILED",
            StepStatus::CutOff => "CUT OFF by the budget",
        }
    }
}

/// One step's record in `gpu-results.json`.
#[derive(Debug, Clone, Serialize)]
pub struct StepResult {
    pub id: u32,
    pub title: String,
    pub status: StepStatus,
    pub seconds: f64,
    /// Why it failed or what it left out.
    pub notes: Vec<String>,
    pub data: Option<steps::StepData>,
}

/// `gpu-results.json`: the whole plan's results (the report is rendered from this alone).
#[derive(Debug, Clone, Serialize)]
pub struct GpuResults {
    pub warpscope_version: String,
    pub nvcc_version: String,
    pub backend: String,
    /// The emulator preset the calibration compares against (and the emulator backend runs).
    pub preset: String,
    pub preset_note: String,
    pub budget_minutes: f64,
    pub host: String,
    /// Seconds since the Unix epoch when the plan started.
    pub started_unix: u64,
    pub steps: Vec<StepResult>,
}

impl GpuResults {
    /// Whether every step finished and passed its checks.
    pub fn all_passed(&self) -> bool {
        self.steps
            .iter()
            .all(|s| s.status == StepStatus::Done && s.data.as_ref().is_none_or(|d| d.passed()))
    }
}

/// What every step gets: the backend, the preset, the output folder and the clock.
pub struct Ctx {
    pub gpu: bool,
    pub preset: emulator::GpuConfig,
    pub out: PathBuf,
    deadline: Instant,
}

impl Ctx {
    /// A fresh device of the plan's backend (the emulator: fresh caches too).
    pub fn open(&self) -> Result<Box<dyn Device>> {
        if self.gpu {
            Ok(Box::new(
                CudaDevice::open(0).context("opening the GPU (--backend gpu)")?,
            ))
        } else {
            Ok(Box::new(self.emulator()))
        }
    }

    /// The emulator with the plan's preset, whatever the backend.
    pub fn emulator(&self) -> EmuDevice {
        EmuDevice::new(self.preset.clone())
    }

    /// Time left before the plan's deadline.
    pub fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// The preset that models `gpu_name`, and why. The H200 is the H100's GH100 with more and faster
/// HBM (141 GB HBM3e at 4.8 TB/s against 80 GB HBM3 at 3.35 TB/s; same 132 SMs and 1.98 GHz
/// boost, per NVIDIA's H100 and H200 product briefs), so it runs on the h100 preset, although the
/// H200 here reported a 60 MiB L2 to the driver against the preset's 50 MiB (2026-11-26):
/// latencies, the subject of the calibration, are the die's.
pub fn matching_preset(gpu_name: &str) -> (&'static str, String) {
    let n = gpu_name.to_ascii_lowercase();
    for (key, preset) in [
        ("h200", "h100"),
        ("h100", "h100"),
        ("a100", "a100"),
        ("v100", "v100"),
        ("gtx 480", "gtx480"),
    ] {
        if n.contains(key) {
            let why = if key == "h200" {
                "the H200 is modelled by the h100 preset (the same GH100 die and 132 SMs; its HBM is faster and its L2 is 60 MiB, not 50)".to_string()
            } else {
                format!("matches the GPU's name ({gpu_name})")
            };
            return (preset, why);
        }
    }
    (
        "h100",
        format!("no preset matches {gpu_name:?}; h100 (the GPU machines' die) is used"),
    )
}

struct Plan {
    results: Mutex<GpuResults>,
    out: PathBuf,
}

impl Plan {
    /// Writes gpu-results.json and gpu-report.md (atomically: a reader never sees half a file).
    fn write(&self, r: &GpuResults) -> Result<()> {
        let json = serde_json::to_vec_pretty(r)?;
        trace::write_bytes_atomic(&self.out.join(RESULTS_JSON), &json)?;
        trace::write_bytes_atomic(&self.out.join(REPORT_MD), report::markdown(r).as_bytes())?;
        Ok(())
    }

    fn update(&self, f: impl FnOnce(&mut GpuResults)) -> Result<()> {
        let mut r = self
            .results
            .lock()
            .map_err(|_| anyhow::anyhow!("results lock poisoned"))?;
        f(&mut r);
        self.write(&r)
    }
}

/// The steps, in priority order.
const STEP_TITLES: [&str; 6] = [
    "Device, driver, clocks, SM count, L2",
    "Corpus kernels against their CPU references",
    "Probes on silicon: pointer chase per level, independent loads per mode",
    "Emulator beside the device: calibration table",
    "Volume-rendering study: 8 shapes × 2 views × 2 modes",
    "One run exported as CSV, CLOG2 and Chrome trace, read back",
];

/// Seconds kept for the last step (export) when the study runs: the study stops starting runs
/// when only this much is left.
const EXPORT_RESERVE_SECONDS: u64 = 45;

pub fn run(args: &GpuCheckArgs) -> Result<()> {
    let started = Instant::now();
    if !(args.budget_minutes > 0.0 && args.budget_minutes <= 60.0) {
        anyhow::bail!(
            "--budget-minutes {}: give a number of minutes in (0, 60]",
            args.budget_minutes
        );
    }
    let deadline = started + Duration::from_secs_f64(args.budget_minutes * 60.0);
    let gpu = args.backend == "gpu";
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;

    // The device's name picks the preset; on the emulator the preset is the device.
    let gpu_name = if gpu {
        match CudaDevice::open(0) {
            Ok(d) => Some(d.name()),
            Err(e) => {
                eprintln!("warpscope: gpu-check: no usable GPU ({e}); every GPU step will fail");
                None
            }
        }
    } else {
        None
    };
    let (preset_name, preset_note) = match (&args.preset, &gpu_name) {
        (Some(p), _) => (p.clone(), "given with --preset".to_string()),
        (None, Some(name)) => {
            let (p, why) = matching_preset(name);
            (p.to_string(), why)
        }
        (None, None) => (
            "h100".to_string(),
            "the default: the GPU machines are H100 and H200".to_string(),
        ),
    };
    let preset = emulator::GpuConfig::preset(&preset_name)?;
    let ctx = Ctx {
        gpu,
        preset,
        out: args.out.clone(),
        deadline,
    };
    let results = GpuResults {
        warpscope_version: env!("CARGO_PKG_VERSION").into(),
        nvcc_version: kernels::nvcc_version().into(),
        backend: args.backend.clone(),
        preset: preset_name,
        preset_note,
        budget_minutes: args.budget_minutes,
        host: std::fs::read_to_string("/etc/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        started_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        steps: STEP_TITLES
            .iter()
            .zip(1..)
            .map(|(t, id)| StepResult {
                id,
                title: (*t).into(),
                status: StepStatus::NotStarted,
                seconds: 0.0,
                notes: Vec::new(),
                data: None,
            })
            .collect(),
    };
    let plan = Arc::new(Plan {
        results: Mutex::new(results),
        out: args.out.clone(),
    });
    plan.update(|_| ())?;
    spawn_watchdog(Arc::clone(&plan), deadline, started);

    for (i, title) in STEP_TITLES.iter().enumerate() {
        let step_start = Instant::now();
        if ctx.left().is_zero() {
            plan.update(|r| {
                r.steps[i].status = StepStatus::CutOff;
                r.steps[i]
                    .notes
                    .push("not started: the budget was spent".into());
            })?;
            continue;
        }
        eprintln!(
            "warpscope: gpu-check: step {} of {}: {} ({:.0} s left)",
            i + 1,
            STEP_TITLES.len(),
            title,
            ctx.left().as_secs_f64()
        );
        plan.update(|r| r.steps[i].status = StepStatus::Running)?;
        let outcome = steps::run_step(i + 1, &ctx, &plan_snapshot(&plan)?);
        plan.update(|r| {
            let s = &mut r.steps[i];
            s.seconds = step_start.elapsed().as_secs_f64();
            match outcome {
                Ok(o) => {
                    s.status = if o.cut_off {
                        StepStatus::CutOff
                    } else {
                        StepStatus::Done
                    };
                    s.notes.extend(o.notes);
                    s.data = Some(o.data);
                }
                Err(e) => {
                    s.status = StepStatus::Failed;
                    s.notes.push(format!("{e:#}"));
                }
            }
        })?;
    }
    let r = plan_snapshot(&plan)?;
    println!(
        "warpscope: gpu-check on {} finished in {:.0} s: {} -> {}",
        r.backend,
        started.elapsed().as_secs_f64(),
        if r.all_passed() {
            "every step done and passed"
        } else {
            "see the report for failed, cut-off or disagreeing steps"
        },
        args.out.join(REPORT_MD).display()
    );
    Ok(())
}

fn plan_snapshot(plan: &Plan) -> Result<GpuResults> {
    Ok(plan
        .results
        .lock()
        .map_err(|_| anyhow::anyhow!("results lock poisoned"))?
        .clone())
}

/// At the deadline, marks the running step cut off, writes the report and ends the process
/// (exit status 3): the budget is a promise to the machine's loan, not a hint.
fn spawn_watchdog(plan: Arc<Plan>, deadline: Instant, started: Instant) {
    std::thread::spawn(move || {
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        let Ok(mut r) = plan.results.lock() else {
            std::process::exit(3);
        };
        let Some(s) = r.steps.iter_mut().find(|s| s.status == StepStatus::Running) else {
            return;
        };
        s.status = StepStatus::CutOff;
        s.notes
            .push("stopped by the watchdog at the end of the budget".into());
        let when = started.elapsed().as_secs_f64();
        for s in r.steps.iter_mut() {
            if s.status == StepStatus::NotStarted {
                s.status = StepStatus::CutOff;
                s.notes.push("not started: the budget was spent".into());
            }
        }
        if let Err(e) = plan.write(&r) {
            eprintln!("warpscope: gpu-check: writing the report at the deadline: {e:#}");
        }
        eprintln!(
            "warpscope: gpu-check: budget spent after {when:.0} s; report: {}",
            plan.out.join(REPORT_MD).display()
        );
        std::process::exit(3);
    });
}

/// A folder for one step's files, created.
pub fn step_dir(ctx: &Ctx, name: &str) -> Result<PathBuf> {
    let d = ctx.out.join(name);
    std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
    Ok(d)
}

/// Deterministic pseudo-random numbers (SplitMix64): the same inputs on every machine.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0; the modulo bias is irrelevant for test data).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_follow_the_gpu_name() {
        assert_eq!(matching_preset("NVIDIA H100 80GB HBM3").0, "h100");
        let (p, why) = matching_preset("NVIDIA H200");
        assert_eq!(p, "h100");
        assert!(why.contains("H200"), "{why}");
        assert_eq!(matching_preset("Tesla V100-SXM2-16GB").0, "v100");
        let (p, why) = matching_preset("NVIDIA L4");
        assert_eq!(p, "h100");
        assert!(why.contains("L4"), "{why}");
    }

    #[test]
    fn the_rng_is_deterministic_and_bounded() {
        let a: Vec<u64> = (0..8).map(|_| Rng(5).below(10)).collect();
        let mut r = Rng(5);
        assert_eq!(a[0], r.below(10));
        let mut r = Rng(9);
        assert!((0..1000).all(|_| r.below(7) < 7));
    }
}
