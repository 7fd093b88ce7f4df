//! The plan: its configuration, the seven steps run in priority order under the budget, the
//! files rewritten after every step, and the watchdog at the deadline.
//!
//! Why a budget and a watchdog: the GPU machines this project can use are lent for minutes, with
//! no Rust and no network, so what runs there is the release binary of `scripts/gpu-bundle` and
//! everything must fit one call. Each step writes `gpu-results.json` and `gpu-report.md` before
//! the next starts, so whatever the budget cuts off, the steps before it are on disk. At the
//! deadline a watchdog thread marks the running step "cut off", writes both files and reports
//! [`Progress::Deadline`], on which the caller ends the process: a step that does not return in
//! time (a hung launch, a slow emulator run) cannot be stopped from inside the process, and must
//! not eat the machine's loan.

use crate::context::Ctx;
pub use crate::context::Progress;
use crate::error::CheckError;
use crate::report;
use crate::results::{GpuResults, REPORT_MD, RESULTS_JSON, StepResult, StepStatus};
use crate::steps::STEPS;
use device::{CudaDevice, Device};
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The device the plan validates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckBackend {
    /// The GPU (what the bundle is for), with the emulator beside it for parity and calibration.
    Gpu,
    /// The whole plan on the emulator.
    Emu,
}

impl CheckBackend {
    /// The name in `gpu-results.json` (`gpu`, `emu`).
    pub fn name(self) -> &'static str {
        match self {
            CheckBackend::Gpu => "gpu",
            CheckBackend::Emu => "emu",
        }
    }
}

/// What the plan needs to run.
#[derive(Debug, Clone)]
pub struct CheckConfig {
    /// The output folder (gpu-report.md, gpu-results.json, and one folder per step); created.
    pub out: PathBuf,
    pub backend: CheckBackend,
    /// Wall-clock budget for the whole plan, in (0, 60] minutes.
    pub budget_minutes: f64,
    /// The emulator preset beside the GPU; None: the one matching the GPU's name, else h100.
    pub preset: Option<String>,
    /// The warpscope executable: on a GPU with Nsight Compute, the study profiles one frame of
    /// its `render` command per shape, view and build.
    pub program: PathBuf,
}

/// A plan that ran to its end.
#[derive(Debug)]
pub struct Finished {
    pub results: GpuResults,
    pub elapsed: Duration,
    /// `gpu-report.md`.
    pub report: PathBuf,
}

/// The preset that models `gpu_name`, and why.
pub(crate) fn matching_preset(gpu_name: &str) -> (&'static str, String) {
    let n = gpu_name.to_ascii_lowercase();
    for (key, preset) in [
        ("h200", "h200"),
        ("h100", "h100"),
        ("a100", "a100"),
        ("v100", "v100"),
        ("gtx 480", "gtx480"),
    ] {
        if n.contains(key) {
            return (preset, format!("matches the GPU's name ({gpu_name})"));
        }
    }
    (
        "h100",
        format!("no preset matches {gpu_name:?}; h100 (the GPU machines' die) is used"),
    )
}

/// The results and whether the watchdog has closed them (after which nothing is written).
struct State {
    results: GpuResults,
    closed: bool,
}

struct Plan {
    state: Mutex<State>,
    out: PathBuf,
}

impl Plan {
    fn lock(&self) -> Result<MutexGuard<'_, State>, CheckError> {
        self.state.lock().map_err(|_| CheckError::Poisoned)
    }

    /// Writes gpu-results.json and gpu-report.md (atomically: a reader never sees half a file).
    fn write(&self, r: &GpuResults) -> Result<(), CheckError> {
        let path = self.out.join(RESULTS_JSON);
        let json = serde_json::to_vec_pretty(r).map_err(|source| CheckError::Json {
            path: path.clone(),
            source,
        })?;
        trace::write_bytes_atomic(&path, &json)?;
        trace::write_bytes_atomic(&self.out.join(REPORT_MD), report::markdown(r).as_bytes())?;
        Ok(())
    }

    /// Changes the results and writes both files, unless the watchdog has closed them.
    fn update(&self, f: impl FnOnce(&mut GpuResults)) -> Result<(), CheckError> {
        let mut s = self.lock()?;
        if s.closed {
            return Ok(());
        }
        f(&mut s.results);
        self.write(&s.results)
    }

    fn snapshot(&self) -> Result<GpuResults, CheckError> {
        Ok(self.lock()?.results.clone())
    }
}

/// Runs the plan: every step in priority order while the budget lasts, `gpu-results.json` and
/// `gpu-report.md` rewritten after each. A step's failure is a note in the results, not an
/// error; the error is for a plan that cannot start or cannot write its files.
pub fn run(
    cfg: &CheckConfig,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Result<Finished, CheckError> {
    let started = Instant::now();
    if !(cfg.budget_minutes > 0.0 && cfg.budget_minutes <= 60.0) {
        return Err(CheckError::Budget {
            minutes: cfg.budget_minutes,
        });
    }
    let deadline = started + Duration::from_secs_f64(cfg.budget_minutes * 60.0);
    let gpu = cfg.backend == CheckBackend::Gpu;
    std::fs::create_dir_all(&cfg.out).map_err(|source| CheckError::CreateDir {
        path: cfg.out.clone(),
        source,
    })?;

    // The device's name picks the preset; on the emulator the preset is the device.
    let gpu_name = if gpu {
        match CudaDevice::open(0) {
            Ok(d) => Some(d.name()),
            Err(error) => {
                progress(Progress::NoGpu { error: &error });
                None
            }
        }
    } else {
        None
    };
    let (preset_name, preset_note) = match (&cfg.preset, &gpu_name) {
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
        out: cfg.out.clone(),
        program: &cfg.program,
        progress,
        deadline,
    };
    let results = GpuResults {
        warpscope_version: env!("CARGO_PKG_VERSION").into(),
        nvcc_version: kernels::nvcc_version().into(),
        backend: cfg.backend.name().into(),
        preset: preset_name,
        preset_note,
        budget_minutes: cfg.budget_minutes,
        host: std::fs::read_to_string("/etc/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        started_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        steps: STEPS
            .iter()
            .zip(1..)
            .map(|(step, id)| StepResult {
                id,
                title: step.title.into(),
                status: StepStatus::NotStarted,
                seconds: 0.0,
                notes: Vec::new(),
                data: None,
            })
            .collect(),
    };
    let plan = Plan {
        state: Mutex::new(State {
            results,
            closed: false,
        }),
        out: cfg.out.clone(),
    };
    plan.update(|_| ())?;
    std::thread::scope(|s| {
        let (finished, wait) = mpsc::channel::<()>();
        let plan = &plan;
        s.spawn(move || {
            if wait.recv_timeout(deadline.saturating_duration_since(Instant::now()))
                == Err(RecvTimeoutError::Timeout)
            {
                at_deadline(plan, started, progress);
            }
        });
        let outcome = run_steps(plan, &ctx);
        drop(finished);
        outcome
    })?;
    Ok(Finished {
        results: plan.snapshot()?,
        elapsed: started.elapsed(),
        report: cfg.out.join(REPORT_MD),
    })
}

fn run_steps(plan: &Plan, ctx: &Ctx<'_>) -> Result<(), CheckError> {
    for (i, step) in STEPS.iter().enumerate() {
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
        (ctx.progress)(Progress::Step {
            number: i + 1,
            of: STEPS.len(),
            title: step.title,
            left: ctx.left(),
        });
        plan.update(|r| r.steps[i].status = StepStatus::Running)?;
        let outcome = (step.run)(ctx, &plan.snapshot()?);
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
                    s.notes.push(trace::error_chain(&e));
                }
            }
        })?;
    }
    Ok(())
}

/// At the deadline with a step running: marks it and the steps not started cut off, writes the
/// files, closes the results to later writes and reports [`Progress::Deadline`] (holding the
/// results, so that nothing is written while the caller ends the process).
fn at_deadline(plan: &Plan, started: Instant, progress: &(dyn Fn(Progress<'_>) + Sync)) {
    let report = plan.out.join(REPORT_MD);
    let mut state = match plan.lock() {
        Ok(s) => s,
        Err(e) => {
            progress(Progress::Deadline {
                after: started.elapsed(),
                report: &report,
                written: Err(&e),
            });
            return;
        }
    };
    let r = &mut state.results;
    let Some(s) = r.steps.iter_mut().find(|s| s.status == StepStatus::Running) else {
        return;
    };
    s.status = StepStatus::CutOff;
    s.notes
        .push("stopped by the watchdog at the end of the budget".into());
    for s in r.steps.iter_mut() {
        if s.status == StepStatus::NotStarted {
            s.status = StepStatus::CutOff;
            s.notes.push("not started: the budget was spent".into());
        }
    }
    let written = plan.write(&state.results);
    state.closed = true;
    progress(Progress::Deadline {
        after: started.elapsed(),
        report: &report,
        written: written.as_ref().map(|_| ()),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn presets_follow_the_gpu_name() {
        assert_eq!(matching_preset("NVIDIA H100 80GB HBM3").0, "h100");
        let (p, why) = matching_preset("NVIDIA H200");
        assert_eq!(p, "h200");
        assert!(why.contains("H200"), "{why}");
        assert_eq!(matching_preset("Tesla V100-SXM2-16GB").0, "v100");
        let (p, why) = matching_preset("NVIDIA L4");
        assert_eq!(p, "h100");
        assert!(why.contains("L4"), "{why}");
    }

    fn config(out: &Path, budget_minutes: f64) -> CheckConfig {
        CheckConfig {
            out: out.to_path_buf(),
            backend: CheckBackend::Emu,
            budget_minutes,
            preset: Some("h100".into()),
            program: PathBuf::from("warpscope"),
        }
    }

    #[test]
    fn a_budget_outside_its_range_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("check");
        for minutes in [0.0, -1.0, 60.5, f64::NAN] {
            let e = run(&config(&out, minutes), &|_| {}).unwrap_err();
            assert!(matches!(e, CheckError::Budget { .. }), "{e}");
        }
        assert!(!out.exists());
    }

    /// A caller that does not end the process at the deadline gets the plan back once the
    /// running step returns, and the files keep what the watchdog wrote: every step after the
    /// deadline is cut off, and whatever step ran at the deadline says the watchdog stopped it.
    #[test]
    fn past_the_deadline_nothing_is_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("check");
        let deadlines = std::sync::atomic::AtomicUsize::new(0);
        let done = run(&config(&out, 0.02), &|p| {
            if let Progress::Deadline { written, .. } = p {
                assert!(written.is_ok());
                deadlines.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        })
        .unwrap();
        // Each step's status and notes (the floats in the data need not round-trip exactly).
        let account = |v: serde_json::Value| -> Vec<(serde_json::Value, serde_json::Value)> {
            v["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| (s["status"].clone(), s["notes"].clone()))
                .collect()
        };
        let on_disk = serde_json::from_slice(&std::fs::read(out.join(RESULTS_JSON)).unwrap());
        assert_eq!(
            account(on_disk.unwrap()),
            account(serde_json::to_value(&done.results).unwrap())
        );
        let steps = &done.results.steps;
        assert_eq!(steps[0].status, StepStatus::Done);
        assert_eq!(steps[5].status, StepStatus::CutOff);
        let stopped: Vec<&StepResult> = steps
            .iter()
            .filter(|s| {
                s.notes
                    .iter()
                    .any(|n| n.contains("stopped by the watchdog"))
            })
            .collect();
        assert_eq!(
            stopped.len(),
            deadlines.load(std::sync::atomic::Ordering::SeqCst)
        );
        // The step that ran on past the deadline left no trace of its end.
        for s in stopped {
            assert_eq!((s.status, s.data.is_none()), (StepStatus::CutOff, true));
        }
        assert!(!done.results.all_passed());
    }
}
