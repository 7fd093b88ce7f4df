//! The six steps of the plan and the typed results each one stores in `gpu-results.json`.

use crate::corpus::{self, CorpusRow};
use crate::error::{CheckError, MicroFailure};
use crate::micro::{self, MicroCase, MicroRow};
use crate::plan::{Ctx, Progress};
use crate::results::GpuResults;
use device::{Device, DeviceProperties};
use export::{ExportOptions, Format};
use serde::Serialize;
use std::path::Path;
use std::time::Duration;
use study::{Scale, View};
use trace::TraceReader;
use trace::{ProbeMode, SweepRow};

/// One step's results.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum StepData {
    Device(DeviceStep),
    Corpus { rows: Vec<CorpusRow> },
    Probes(ProbesStep),
    Calibration { rows: Vec<CalibrationRow> },
    Study(StudyStep),
    Export(ExportStep),
}

impl StepData {
    /// Whether the step's own checks passed (a step without checks passes).
    pub fn passed(&self) -> bool {
        match self {
            StepData::Device(_) | StepData::Calibration { .. } => true,
            StepData::Corpus { rows } => rows
                .iter()
                .all(|r| r.matches_reference && r.matches_emulator != Some(false)),
            StepData::Probes(p) => p.verdicts.iter().all(|v| v.passed),
            StepData::Study(s) => s.rows.iter().all(|r| r.image_matches_bare != Some(false)),
            StepData::Export(e) => {
                e.records > 0 && e.formats.iter().all(|f| f.read_back == e.records)
            }
        }
    }
}

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
pub(crate) const STEPS: [Step; 6] = [
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
];

/// Seconds kept for the last step (export) when the study runs: the study stops starting runs
/// when only this much is left.
const EXPORT_RESERVE_SECONDS: u64 = 45;

// ---------------------------------------------------------------- 1. device

#[derive(Debug, Clone, Serialize)]
pub struct DeviceStep {
    pub properties: DeviceProperties,
    /// `nvidia-smi --query-gpu=…` (driver version, clocks), when it is on the PATH.
    pub nvidia_smi: Option<String>,
    /// Architectures with SASS in the embedded fatbins, and the PTX's.
    pub sass_archs: Vec<u32>,
    pub ptx_arch: u32,
}

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

#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub check: String,
    pub passed: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProbesStep {
    pub rows: Vec<MicroRow>,
    pub verdicts: Vec<Verdict>,
}

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

/// One line of the calibration table: the device's number beside the emulator preset's.
#[derive(Debug, Clone, Serialize)]
pub struct CalibrationRow {
    pub case: String,
    /// The microbenchmark the row measures (None for a corpus kernel's time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub micro: Option<MicroCase>,
    pub unit: String,
    pub device: f64,
    pub emulator: f64,
    /// emulator ÷ device: above 1 the preset is slower than the silicon.
    pub ratio: f64,
}

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

#[derive(Debug, Clone, Serialize)]
pub struct NcuRow {
    pub shape: String,
    pub view: String,
    /// The build profiled: `Off` (bare) or the probe mode.
    pub mode: ProbeMode,
    pub metric: String,
    pub hit_rate: f64,
    /// Where the texture misses went, where ncu reported it: L2 sector hit rate (0–1) and the
    /// bytes read from DRAM by the frame.
    pub l2_hit_rate: Option<f64>,
    pub dram_read_bytes: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StudyStep {
    pub scale: String,
    pub geometry: String,
    pub frames: u32,
    pub rows: Vec<SweepRow>,
    /// Texture hit rates from Nsight Compute (GPU, ncu on the PATH): the bare build's for every
    /// shape and view first, then each probed build's, while the budget lasts.
    pub ncu: Vec<NcuRow>,
    pub ncu_note: String,
    /// `warpscope analyze`'s findings on the study (where the memory time goes per mode, what
    /// correlates with frame rate); empty with a note when the analysis failed.
    pub findings: Vec<String>,
}

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
    // Profiling stops in time for the analysis (which reads 32 traces at paper scale: tens of
    // seconds) and the export; the analysis runs only while it leaves the export its time.
    let analysis_reserve = reserve + Duration::from_secs(ANALYSIS_SECONDS);
    let (ncu, ncu_note) = ncu_rates(ctx, &cfg, &dir, analysis_reserve)?;
    // Nsight Compute's rates go where the emulator puts its counters' (bare and probed), in the
    // rows and in the sweep.csv that `warpscope analyze` reads.
    if !ncu.is_empty() {
        join_ncu(&mut rows, &ncu);
        if let Some(d) = &sweep_dir {
            SweepRow::write_csv(&d.join(trace::SWEEP_CSV), &rows)?;
        }
    }
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
            ncu,
            ncu_note,
            findings,
        }),
        cut_off,
        notes,
    })
}

/// Puts Nsight Compute's rates into the sweep's rows: the bare build's as `tex_hit_rate_bare`,
/// the row's own build's as `tex_hit_rate` (None where that profile is missing).
fn join_ncu(rows: &mut [SweepRow], ncu: &[NcuRow]) {
    let rate = |r: &SweepRow, mode: &str| {
        ncu.iter()
            .find(|n| n.shape == r.shape && n.view == r.view && n.mode.name() == mode)
            .map(|n| n.hit_rate)
    };
    for r in rows.iter_mut() {
        let (bare, own) = (rate(r, ProbeMode::Off.name()), rate(r, &r.mode));
        r.tex_hit_rate_bare = bare;
        r.tex_hit_rate = own;
    }
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

/// On a GPU with `ncu`: the texture hit rate per shape and view, one profiled frame each
/// (`warpscope render … --mode M --frames 1` under ncu), while the budget lasts: the bare build
/// (`off`) for every shape and view first, then each probe mode's build — what probing changed.
fn ncu_rates(
    ctx: &Ctx<'_>,
    cfg: &study::SweepConfig,
    dir: &Path,
    reserve: Duration,
) -> Result<(Vec<NcuRow>, String)> {
    if !ctx.gpu {
        return Ok((
            Vec::new(),
            "not run: emulator backend (the hit rates are the emulator's counters)".into(),
        ));
    }
    let Some(ncu) = study::ncu_path() else {
        return Ok((Vec::new(), "not run: ncu is not on the PATH".into()));
    };
    let mut rows = Vec::new();
    let mut skipped = 0;
    let views: &[View] = &cfg.views;
    let modes = std::iter::once(ProbeMode::Off).chain(cfg.modes.iter().copied());
    for mode in modes {
        for (view, shape) in views
            .iter()
            .flat_map(|v| cfg.shapes.iter().map(move |s| (v, s)))
        {
            // A profiled paper-scale frame regenerates the 1 GiB volume in a new process.
            if ctx.left() <= reserve + Duration::from_secs(60) {
                skipped += 1;
                continue;
            }
            let args: Vec<String> = [
                "render",
                "--backend",
                "gpu",
                "--scale",
                "paper",
                "--frames",
                "1",
                "--no-overhead",
                "--formats",
                "none",
                "--no-ncu",
            ]
            .iter()
            .map(|s| s.to_string())
            .chain([
                "--mode".into(),
                mode.name().into(),
                "--shape".into(),
                shape.name(),
                format!("--view={}", view.name()),
                "--out".into(),
                dir.join("ncu-scratch").display().to_string(),
            ])
            .collect();
            // An ncu that hangs (one did, on an H100 machine whose counters it could not read)
            // must not take the rest of the budget: it gets what is left above the reserve.
            let limit = ctx.left().saturating_sub(reserve).min(study::NCU_LIMIT);
            match study::run_ncu(&ncu, study::KERNEL_NAME, ctx.program, &args, limit) {
                Ok(Some(h)) => rows.push(NcuRow {
                    shape: shape.name(),
                    view: view.to_string(),
                    mode,
                    metric: h.metric,
                    hit_rate: h.rate,
                    l2_hit_rate: h.l2_hit_rate,
                    dram_read_bytes: h.dram_read_bytes,
                }),
                Ok(None) => skipped += 1,
                Err(e) => return Ok((rows, format!("ncu failed: {e}"))),
            }
        }
    }
    let note = if skipped == 0 {
        format!("{} profiled with {}", rows.len(), ncu.display())
    } else {
        format!(
            "{} profiled with {}, {skipped} left out (budget, or no value)",
            rows.len(),
            ncu.display()
        )
    };
    Ok((rows, note))
}

// ---------------------------------------------------------------- 6. export

#[derive(Debug, Clone, Serialize)]
pub struct FormatCheck {
    pub format: String,
    pub file: String,
    pub bytes: u64,
    /// Records read back by warpscope's reader of the format.
    pub read_back: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ExportStep {
    pub run: String,
    pub records: u64,
    pub warps: u64,
    pub formats: Vec<FormatCheck>,
}

fn export(ctx: &Ctx<'_>) -> Result<Outcome> {
    let dir = ctx.step_dir("export")?;
    let mut dev = ctx.open()?;
    // A small render (64³ shell, 64×64, 16×8, fence) with every warp traced: seconds on both
    // backends, independent of whether the study finished.
    let cfg = study::RenderConfig {
        params: study::RenderParams::with_size(64, 64),
        trace_warps: instrument::TraceWarps::all(),
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

    fn ncu(shape: &str, view: &str, mode: ProbeMode, hit_rate: f64) -> NcuRow {
        NcuRow {
            shape: shape.into(),
            view: view.into(),
            mode,
            metric: study::TEX_HIT_RATE_METRIC.into(),
            hit_rate,
            l2_hit_rate: None,
            dram_read_bytes: None,
        }
    }

    fn row(shape: &str, view: &str, mode: &str) -> SweepRow {
        SweepRow {
            shape: shape.into(),
            view: view.into(),
            mode: mode.into(),
            ..Default::default()
        }
    }

    #[test]
    fn ncu_rates_join_by_shape_view_and_build() {
        let profiles = [
            ncu("16x8", "0,0,0", ProbeMode::Off, 0.68),
            ncu("16x8", "0,0,0", ProbeMode::Fence, 0.67),
            ncu("16x8", "90,0,90", ProbeMode::Off, 0.74),
            ncu("1x128", "0,0,0", ProbeMode::Naive, 0.25),
        ];
        let mut rows = vec![
            row("16x8", "0,0,0", "fence"),
            row("16x8", "0,0,0", "naive"),
            row("16x8", "90,0,90", "fence"),
            row("1x128", "0,0,0", "naive"),
        ];
        join_ncu(&mut rows, &profiles);
        let got: Vec<(Option<f64>, Option<f64>)> = rows
            .iter()
            .map(|r| (r.tex_hit_rate_bare, r.tex_hit_rate))
            .collect();
        assert_eq!(
            got,
            [
                (Some(0.68), Some(0.67)),
                (Some(0.68), None),
                (Some(0.74), None),
                (None, Some(0.25)),
            ]
        );
    }
}
