//! The seven steps of the plan, each storing its typed results (`crate::results`).

use crate::context::{Ctx, Progress};
use crate::corpus::{self, CorpusRow};
use crate::error::{CheckError, MicroFailure};
use crate::micro::{self, MicroRow};
use crate::results::{
    CalibrationRow, DeviceStep, ExportStep, FormatCheck, GpuResults, ProbesStep, StepData,
    StudyStep, Verdict,
};
use device::Device;
use export::{ExportOptions, Format};
use std::path::Path;
use std::time::Duration;
use study::Scale;
use trace::SweepRow;
use trace::TraceReader;

/// What a step returned.
pub(crate) struct Outcome {
    pub data: StepData,
    pub cut_off: bool,
    pub notes: Vec<String>,
}

impl Outcome {
    fn done(data: StepData) -> Outcome {
        Outcome {
            data,
            cut_off: false,
            notes: Vec::new(),
        }
    }
}

type Result<T> = std::result::Result<T, CheckError>;

/// One step of the plan: its title and what it runs, given the results of the steps before it.
pub(crate) struct Step {
    pub title: &'static str,
    pub run: fn(&Ctx<'_>, &GpuResults) -> Result<Outcome>,
}

/// The steps, in priority order.
pub(crate) const STEPS: [Step; 7] = [
    Step {
        title: "Device, driver, clocks, SM count, L2",
        run: |ctx, _| device(ctx),
    },
    Step {
        title: "Corpus kernels against their CPU references",
        run: |ctx, _| corpus_step(ctx),
    },
    Step {
        title: "Probes on silicon: pointer chase per level, independent loads per mode",
        run: |ctx, _| probes(ctx),
    },
    Step {
        title: "Emulator beside the device: calibration table",
        run: calibration,
    },
    Step {
        title: "Volume-rendering study: 8 shapes × 2 views × 2 modes",
        run: |ctx, _| study_step(ctx),
    },
    Step {
        title: "One run exported as CSV, CLOG2 and Chrome trace, read back",
        run: |ctx, _| export(ctx),
    },
    Step {
        title: "Unmodified programs under warpscope run: cuda-samples on the runtime API (static cudart), the driver API, in a shared library, SASS only",
        run: |ctx, _| crate::programs::programs(ctx).map(|p| Outcome::done(StepData::Programs(p))),
    },
];

/// Seconds kept for the last step (export) when the study runs: the study stops starting runs
/// when only this much is left.
const EXPORT_RESERVE_SECONDS: u64 = 45;

// ---------------------------------------------------------------- 1. device

fn device(ctx: &Ctx<'_>) -> Result<Outcome> {
    let dev = ctx.open()?;
    let properties = dev.properties();
    let nvidia_smi = if ctx.gpu {
        std::process::Command::new("nvidia-smi")
            .args([
                "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit",
                "--format=csv",
            ])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    } else {
        None
    };
    let mut out = Outcome::done(StepData::Device(DeviceStep {
        properties: properties.clone(),
        nvidia_smi,
        sass_archs: kernels::SASS_ARCHS.to_vec(),
        ptx_arch: kernels::PTX_ARCH,
    }));
    if let Some(cc) = &properties.compute_capability {
        let sm: u32 = cc.replace('.', "").parse().unwrap_or(0);
        if !kernels::SASS_ARCHS.contains(&sm) {
            out.notes.push(format!(
                "no SASS for sm_{sm} in the fatbins: the driver JIT-compiles the compute_{} PTX",
                kernels::PTX_ARCH
            ));
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------- 2. corpus

fn corpus_step(ctx: &Ctx<'_>) -> Result<Outcome> {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for case in corpus::cases() {
        let mut dev = ctx.open()?;
        let mut emu = ctx.gpu.then(|| ctx.emulator());
        let row = match corpus::check(
            case,
            dev.as_mut(),
            emu.as_mut().map(|e| e as &mut dyn Device),
        ) {
            Ok(r) => r,
            Err(e) => CorpusRow {
                file: case.file.into(),
                entries: case.entries.join(", "),
                matches_reference: false,
                matches_emulator: None,
                kernel_ms: 0.0,
                problem: Some(trace::error_chain(&e)),
            },
        };
        if let Some(p) = &row.problem {
            notes.push(format!("{}: {p}", row.file));
        }
        rows.push(row);
    }
    Ok(Outcome {
        data: StepData::Corpus { rows },
        cut_off: false,
        notes,
    })
}

// ---------------------------------------------------------------- 3. probes

fn probes(ctx: &Ctx<'_>) -> Result<Outcome> {
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for (case, mode) in micro::PLAN {
        let mut dev = ctx.open()?;
        match micro::measure(dev.as_mut(), &ctx.preset, case, mode) {
            Ok(r) => rows.push(r),
            Err(e) => failures.push(MicroFailure {
                case: case.label(),
                mode: mode.name(),
                error: Box::new(e),
            }),
        }
    }
    if !failures.is_empty() {
        return Err(CheckError::Probes { failures });
    }
    let verdicts = micro::verdicts(&rows)
        .into_iter()
        .map(|(check, passed)| Verdict { check, passed })
        .collect();
    Ok(Outcome::done(StepData::Probes(ProbesStep {
        rows,
        verdicts,
    })))
}

// ---------------------------------------------------------------- 4. calibration

fn calibration(ctx: &Ctx<'_>, so_far: &GpuResults) -> Result<Outcome> {
    let measured: Vec<MicroRow> = so_far
        .steps
        .iter()
        .find_map(|s| match &s.data {
            Some(StepData::Probes(p)) => Some(p.rows.clone()),
            _ => None,
        })
        .unwrap_or_default();
    let mut notes = Vec::new();
    if !ctx.gpu {
        notes.push(
            "emulator backend: the device column is the emulator itself, so every ratio is 1 by \
             construction (a check of determinism); the hardware run is pending"
                .into(),
        );
    }
    let mut rows = Vec::new();
    for (case, mode) in micro::PLAN {
        let Some(dev_row) = measured.iter().find(|r| r.case == case && r.mode == mode) else {
            notes.push(format!(
                "{} ({}): no device measurement from step 3",
                case.label(),
                mode.name()
            ));
            continue;
        };
        let mut emu = ctx.emulator();
        let emu_row = micro::measure(&mut emu, &ctx.preset, case, mode)?;
        rows.push(CalibrationRow {
            case: format!("{} ({})", case.label(), mode.name()),
            micro: Some(case),
            unit: if case.chase_level().is_some() {
                "cycles/step".into()
            } else {
                "cycles/load".into()
            },
            device: dev_row.mean_cycles,
            emulator: emu_row.mean_cycles,
            ratio: emu_row.mean_cycles / dev_row.mean_cycles,
        });
    }
    for case in corpus::calibration_cases() {
        let file = case.file;
        let mut dev = ctx.open()?;
        let (device_ms, mismatch) = corpus::timed(case, dev.as_mut())?;
        let emulator_ms = if ctx.gpu {
            let mut emu = ctx.emulator();
            corpus::timed(case, &mut emu)?.0
        } else {
            device_ms
        };
        if let Some(m) = mismatch {
            notes.push(format!("{file} (timing size): {m}"));
        }
        rows.push(CalibrationRow {
            case: format!("{} ({}), kernel time", case.entries.join(", "), file),
            micro: None,
            unit: "µs".into(),
            device: device_ms * 1000.0,
            emulator: emulator_ms * 1000.0,
            ratio: emulator_ms / device_ms,
        });
    }
    Ok(Outcome {
        data: StepData::Calibration { rows },
        cut_off: false,
        notes,
    })
}

// ---------------------------------------------------------------- 5. study

fn study_step(ctx: &Ctx<'_>) -> Result<Outcome> {
    let dir = ctx.step_dir("study")?;
    // The paper's geometry takes seconds on a GPU and ~30 minutes on the emulator.
    let scale = if ctx.gpu { Scale::Paper } else { Scale::Quick };
    let mut cfg = study::demo_config(&dir, scale)?;
    cfg.emu_config = ctx.preset.clone();
    cfg.backend = if ctx.gpu {
        device::BackendChoice::Gpu
    } else {
        device::BackendChoice::Emu
    };
    cfg.frames = if ctx.gpu { 10 } else { 1 };
    // The sweep's own counter pass (GPU): Nsight Compute on both builds of every run.
    cfg.counters = match (ctx.gpu, study::ncu_path()) {
        (true, Some(ncu)) => Some(study::CounterPass {
            program: ctx.program.to_path_buf(),
            ncu,
            limit: study::NCU_LIMIT,
        }),
        _ => None,
    };
    let mut counters_note = None;
    let reserve = Duration::from_secs(EXPORT_RESERVE_SECONDS);
    let mut rows: Vec<SweepRow> = Vec::new();
    let mut notes = Vec::new();
    let mut cut_off = false;
    // On the emulator one shape at a time (a shard of the plan: its views and modes), so the
    // budget is checked between shapes; the shards are merged into one sweep for the analysis. A
    // GPU renders all 32 runs in seconds, and each sweep call generates the paper's 1 GiB volume
    // anew: one call (the watchdog still bounds it).
    let shards = if ctx.gpu { 1 } else { cfg.shapes.len() as u32 };
    let mut shard_dirs = Vec::new();
    for k in 1..=shards {
        let shard = study::Shard::new(k, shards)?;
        if ctx.left() <= reserve {
            cut_off = true;
            notes.push(format!(
                "stopped before shard {shard} of the plan to keep {} s for the export step",
                reserve.as_secs()
            ));
            break;
        }
        let mut part = cfg.clone();
        if shards > 1 {
            part.out_dir = dir.join(format!("shard-{k}"));
        }
        let swept =
            study::sweep_shard(&part, shard, &|_, _| {}).map_err(|source| CheckError::Shard {
                shard,
                source: Box::new(source),
            })?;
        (ctx.progress)(Progress::StudyShard {
            shard,
            runs: swept.rows.len(),
            left: ctx.left(),
        });
        counters_note = counters_note.or(swept.counters_note);
        rows.extend(swept.rows);
        shard_dirs.push(part.out_dir);
    }
    // The sweep the analysis reads: the whole plan, where the budget let it finish.
    let sweep_dir = match (cut_off, shards) {
        (true, _) => None,
        (false, 1) => Some(cfg.out_dir.clone()),
        (false, _) => {
            let all = dir.join("all");
            rows = study::merge(&all, &shard_dirs)?.rows;
            Some(all)
        }
    };
    let volume = scale.geometry().volume_bytes();
    if volume < ctx.preset.l2.size_bytes {
        notes.push(format!(
            "the {} volume ({} MiB) fits in the {} preset's L2: misses stay on chip, unlike the \
             paper's 1 GiB volume",
            scale.name(),
            volume >> 20,
            ctx.preset.name
        ));
    }
    let analysis_reserve = reserve + Duration::from_secs(ANALYSIS_SECONDS);
    let findings = match &sweep_dir {
        Some(_) if ctx.left() <= analysis_reserve => {
            notes.push("analysis not run: the budget was nearly spent".into());
            Vec::new()
        }
        Some(d) => analyze_study(d, &mut notes),
        None => Vec::new(),
    };
    Ok(Outcome {
        data: StepData::Study(StudyStep {
            scale: scale.name().into(),
            geometry: scale
                .geometry()
                .describe(&ctx.preset.name, ctx.preset.l2.size_bytes),
            frames: cfg.frames,
            rows,
            counters_expected: ctx.gpu,
            counters_note,
            findings,
        }),
        cut_off,
        notes,
    })
}

/// Seconds the study keeps for `warpscope analyze` on its sweep (besides the export's reserve).
const ANALYSIS_SECONDS: u64 = 40;

/// `warpscope analyze` on the study's sweep (tables only), for its findings.
fn analyze_study(sweep_dir: &Path, notes: &mut Vec<String>) -> Vec<String> {
    let opts = analysis::AnalyzeOptions {
        figures: false,
        ..Default::default()
    };
    match analysis::analyze(sweep_dir, &sweep_dir.join("report"), &opts) {
        Ok(summary) => summary.findings,
        Err(e) => {
            notes.push(format!("analysis: {}", trace::error_chain(&e)));
            Vec::new()
        }
    }
}

// ---------------------------------------------------------------- 6. export

fn export(ctx: &Ctx<'_>) -> Result<Outcome> {
    let dir = ctx.step_dir("export")?;
    let mut dev = ctx.open()?;
    // A small render (64³ shell, 64×64, 16×8, fence) with every warp traced: seconds on both
    // backends, independent of whether the study finished.
    let cfg = study::RenderConfig {
        params: study::RenderParams::with_size(64, 64),
        trace_warps: instrument::WarpSelection::all(),
        frames: if ctx.gpu { 3 } else { 1 },
        emu_config: Some(ctx.preset.clone()),
        ..study::RenderConfig::default()
    };
    let result = study::render(dev.as_mut(), &cfg, &dir)?;
    let run_dir = result.run_dir;
    let reader = TraceReader::open(&run_dir.join(trace::TRACE_FILE_NAME))?;
    let records = reader.record_count();
    let warps = reader.warp_count() as u64;
    let mut formats = Vec::new();
    for f in [Format::Csv, Format::Clog2, Format::Chrome] {
        let path = run_dir.join(f.default_file_name());
        export::export(&reader, f, &path, &ExportOptions::default()).map_err(|source| {
            CheckError::Export {
                path: path.clone(),
                source,
            }
        })?;
        let file = std::fs::File::open(&path).map_err(|source| CheckError::Read {
            path: path.clone(),
            source,
        })?;
        let input = std::io::BufReader::new(file);
        let read_back = match f {
            Format::Csv => export::read_records_csv(input).map(|r| r.len()),
            Format::Clog2 => export::Clog2Log::read(input).map(|l| l.accesses().len()),
            _ => export::read_chrome(input).map(|c| c.slices.len()),
        }
        .map_err(|source| CheckError::ReadBack {
            path: path.clone(),
            source,
        })? as u64;
        formats.push(FormatCheck {
            format: f.to_string(),
            file: path
                .strip_prefix(&ctx.out)
                .unwrap_or(&path)
                .display()
                .to_string(),
            bytes: std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
            read_back,
        });
    }
    let run = run_dir
        .strip_prefix(&ctx.out)
        .unwrap_or(&run_dir)
        .display()
        .to_string();
    let mut out = Outcome::done(StepData::Export(ExportStep {
        run,
        records,
        warps,
        formats,
    }));
    if records == 0 {
        out.notes
            .push("the run traced no records: the read-back check is empty".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(shape: &str, view: &str, mode: &str) -> SweepRow {
        SweepRow {
            shape: shape.into(),
            view: view.into(),
            mode: mode.into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_gpu_study_passes_only_with_every_runs_counters() {
        let counted = SweepRow {
            tex_hit_rate: Some(0.7),
            tex_hit_rate_bare: Some(0.71),
            ..row("16x8", "0,0,0", "fence")
        };
        let study = |rows: Vec<SweepRow>, counters_expected| {
            StepData::Study(StudyStep {
                scale: "paper".into(),
                geometry: String::new(),
                frames: 10,
                rows,
                counters_expected,
                counters_note: None,
                findings: Vec::new(),
            })
        };
        assert!(study(vec![counted.clone()], true).passed());
        let bare_only = SweepRow {
            tex_hit_rate: None,
            ..counted.clone()
        };
        assert!(!study(vec![counted.clone(), bare_only.clone()], true).passed());
        assert!(study(vec![counted, bare_only], false).passed());
    }
}
