//! The paper's experiment as a sweep: the cross product of block shapes × viewpoints × probe modes,
//! one run folder each, plus `sweep.csv` with one row per run.
//!
//! Why this shape: the paper's findings are correlations *across* shapes and views (memory
//! reference frequency vs texture hit rate vs frame rate), so the unit of analysis is the table of
//! runs. On the emulator runs are independent and deterministic, so they run in parallel (rayon),
//! one emulator instance per (shape, view) group — the group shares its bare `WS_OFF` frame for
//! the overhead of every mode. The runs and their order are the [`SweepPlan`]'s; the folder keeps
//! it as `plan.json` and refuses a sweep of other parameters, and `sweep.lock` admits one writer.
//! An interrupted sweep resumes: a run whose folder holds a valid completion marker
//! (`complete.json`, written last; see [`crate::run_state`]) is not redone, any other is redone.
//!
//! `sweep.csv`'s columns are [`trace::SweepRow`]'s.
//! Rows follow the plan's order, shapes × views × modes as configured (a shard's table holds its
//! runs only).
//!
//! ```no_run
//! let cfg = study::demo_config(std::path::Path::new("warpscope-demo/sweep"), study::Scale::Quick)
//!     .unwrap();
//! let summary = study::sweep(&cfg, &|done, total| eprintln!("{done}/{total}")).unwrap();
//! println!("{} runs, table at {}", summary.rows.len(), summary.csv.display());
//! ```

use crate::StudyError;
use crate::complete::{RunMarker, RunState, clear_marker, run_state};
use crate::config::SweepConfig;
use crate::counters::{CounterPass, frames_for};
use crate::lock::FolderLock;
use crate::plan::{PLAN_JSON, PlannedRun, Shard, SweepPlan};
use crate::render::{Frame, RenderConfig, Session};
use crate::volume::Volume;
use device::{BackendChoice, Device, EmuDevice};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use trace::{ProbeMode, RunMetrics, SWEEP_CSV, SweepRow};

/// The `sweep.csv` row of the run in folder `run`, from its `run.json`.
fn row_from_metrics(run: &str, m: &RunMetrics) -> SweepRow {
    let study = m.study.as_ref();
    let bare = m.bare.as_ref();
    let truth = m.truth.as_ref().map(|t| &t.run);
    SweepRow {
        run: run.to_string(),
        backend: m.backend.clone(),
        preset: m.preset.clone().unwrap_or_default(),
        shape: study.map(|s| s.shape.clone()).unwrap_or_default(),
        view: study.map(|s| s.view.clone()).unwrap_or_default(),
        mode: m.mode.name().to_string(),
        cycles: m.cycles,
        kernel_ms: m.kernel_ms,
        frame_rate: m.frame_rate,
        tex_hit_rate: m.tex_hit_rate,
        dropped_records: Some(m.dropped_records),
        overhead: m.overhead,
        // A run without probes is its own bare build.
        occupancy_bare: match m.mode {
            ProbeMode::Off => m.occupancy,
            _ => bare.and_then(|b| b.occupancy),
        }
        .map(u64::from),
        occupancy_probed: m.occupancy.map(u64::from),
        tex_hit_rate_bare: bare.and_then(|b| b.tex_hit_rate),
        warp_instructions: m.warp_instructions,
        records: Some(m.records),
        image_matches_bare: bare.and_then(|b| b.image_matches),
        l2_hit_rate: m.l2_hit_rate,
        dram_bytes: m.dram_bytes,
        l2_hit_rate_bare: bare.and_then(|b| b.l2_hit_rate),
        dram_bytes_bare: bare.and_then(|b| b.dram_bytes),
        probe_error: truth.map(|t| t.probe_error),
        probe_bias_cycles: truth.map(|t| t.probe_bias_cycles),
        truth_shift: truth.and_then(|t| t.truth_shift),
        achieved_occupancy: m.achieved_occupancy,
        achieved_occupancy_bare: match m.mode {
            ProbeMode::Off => m.achieved_occupancy,
            _ => bare.and_then(|b| b.achieved_occupancy),
        },
        load_shift: m.truth.as_ref().and_then(|t| t.load_shift),
        sm_clock_mhz: m.sm_clock_mhz,
        sm_clock_mhz_bare: match m.mode {
            ProbeMode::Off => m.sm_clock_mhz,
            _ => bare.and_then(|b| b.sm_clock_mhz),
        },
    }
}

/// What a sweep did.
#[derive(Debug, Clone)]
pub struct SweepSummary {
    pub csv: PathBuf,
    pub rows: Vec<SweepRow>,
    /// Runs rendered now, and runs found complete from an earlier, interrupted sweep.
    pub rendered: usize,
    pub resumed: usize,
    /// Runs found incomplete (`NAME: why`) and rendered again.
    pub redone: Vec<String>,
    /// Which backend ran, and why (from `device::open_device`).
    pub backend_note: String,
    /// The plan's hash (`plan.json`), and the part of it this sweep ran.
    pub plan_hash: String,
    pub shard: Shard,
    /// Each run's `sim_warp_instructions_per_second` (run.json), where it has one (emulator).
    pub sim_rates: Vec<f64>,
    /// Why the runs of a GPU sweep have no hardware counters, in one line (`None` where they
    /// have them, or on the emulator, whose counters come with every run). A sweep on a GPU
    /// without a [`CounterPass`] is one without ncu.
    pub counters_note: Option<String>,
}

/// Opens `dir` for writing the sweep of `plan`: creates it, takes its lock (refusing a second
/// writer) and checks its `plan.json` — refusing a folder of another sweep with the differing
/// parameters named — or writes it. `what` says who holds the lock (`sweep shard 2/3`).
pub fn open_sweep_folder(
    dir: &Path,
    plan: &SweepPlan,
    what: &str,
) -> Result<FolderLock, StudyError> {
    std::fs::create_dir_all(dir).map_err(|e| StudyError::io(dir, e))?;
    let lock = FolderLock::acquire(dir, what)?;
    let plan_path = dir.join(PLAN_JSON);
    if plan_path.exists() {
        let there = SweepPlan::read(&plan_path)?;
        if there.hash != plan.hash {
            return Err(StudyError::PlanMismatch {
                dir: dir.to_path_buf(),
                differences: there.differences(plan),
                advice: "use another --out folder, or the same parameters to resume this one"
                    .into(),
            });
        }
    } else {
        plan.write(&plan_path)?;
    }
    Ok(lock)
}

/// Runs the sweep into `cfg.out_dir`, calling `progress(done, total)` after each run (from worker
/// threads), and writes `sweep.csv`. The same as [`sweep_shard`] with the whole plan.
pub fn sweep(
    cfg: &SweepConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<SweepSummary, StudyError> {
    sweep_shard(cfg, Shard::WHOLE, progress)
}

/// Runs the runs of `shard` of the sweep's plan into `cfg.out_dir` (a folder per shard: the lock
/// admits one writer), resuming finished runs and redoing incomplete ones, and writes `plan.json`
/// (the whole plan) and `sweep.csv` (this shard's rows, in plan order).
pub fn sweep_shard(
    cfg: &SweepConfig,
    shard: Shard,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<SweepSummary, StudyError> {
    let plan = SweepPlan::new(cfg)?;
    let what = if shard == Shard::WHOLE {
        "sweep".to_string()
    } else {
        format!("sweep shard {shard}")
    };
    let _lock = open_sweep_folder(&cfg.out_dir, &plan, &what)?;
    let configs = cfg.runs();
    let mine: Vec<(&RenderConfig, &PlannedRun)> = shard
        .range(plan.runs.len())
        .map(|i| (&configs[i], &plan.runs[i]))
        .collect();
    let total = mine.len();
    let mut redone = Vec::new();
    let mut pending = Vec::new();
    for &(r, p) in &mine {
        let dir = cfg.out_dir.join(&p.name);
        match run_state(&dir, p) {
            RunState::Complete => {}
            RunState::Missing => pending.push((r, p)),
            RunState::Incomplete(why) => {
                clear_marker(&dir)?;
                redone.push(format!("{}: {why}", p.name));
                pending.push((r, p));
            }
        }
    }
    let resumed = total - pending.len();
    let done = AtomicUsize::new(resumed);
    progress(resumed, total);
    let tick = || progress(done.fetch_add(1, Ordering::SeqCst) + 1, total);

    let mut backend_note = String::from("nothing to run: every run was complete");
    let mut on_gpu = false;
    if !pending.is_empty() {
        let volume = cfg.volume.load()?;
        // groups of the same shape and view share one device and one bare frame
        let mut groups: Vec<Vec<(&RenderConfig, &PlannedRun)>> = Vec::new();
        for &(r, p) in &pending {
            match groups
                .iter_mut()
                .find(|g| g[0].0.shape == r.shape && g[0].0.view == r.view)
            {
                Some(g) => g.push((r, p)),
                None => groups.push(vec![(r, p)]),
            }
        }
        let emu = || EmuDevice::new(cfg.emu_config.clone()).with_limits(cfg.limits.clone());
        let use_gpu = match cfg.backend {
            BackendChoice::Emu => None,
            choice => {
                let (dev, note) =
                    device::open_device(choice, cfg.emu_config.clone(), cfg.limits.clone())
                        .map_err(|source| StudyError::Device {
                            run: "sweep".into(),
                            source,
                        })?;
                backend_note = note;
                (dev.backend() == device::Backend::Gpu).then_some(dev)
            }
        };
        match use_gpu {
            Some(mut dev) => {
                on_gpu = true;
                // one GPU: runs in sequence, the volume uploaded once
                let mut session = Session::new(dev.as_mut(), &volume);
                for g in &groups {
                    let mut bare = None;
                    for &(r, p) in g {
                        let dir = cfg.out_dir.join(&p.name);
                        session.render_run(r, &dir, &mut bare)?;
                        RunMarker::write_for(&dir, p)?;
                        tick();
                    }
                }
            }
            None => {
                if cfg.backend == BackendChoice::Emu {
                    backend_note = "emulator (--backend emu)".into();
                }
                groups.par_iter().try_for_each(|g| {
                    let mut dev = emu();
                    run_group(&mut dev, &volume, g, &cfg.out_dir, &tick)
                })?;
            }
        }
    }

    let missing = match &cfg.counters {
        Some(pass) if on_gpu => {
            add_counters(&cfg.out_dir, &plan, mine.iter().map(|(_, p)| *p), pass)
                .err()
                .map(|e| trace::error_chain(&e))
        }
        None if on_gpu => Some(
            "ncu (Nsight Compute) is not on the PATH, nor under $CUDA_HOME/bin or /usr/local/cuda/bin".into(),
        ),
        _ => None,
    };
    // Each run without counters says why in its run.json, where the analysis reads it.
    if let Some(why) = &missing {
        for (_, p) in &mine {
            let run_dir = cfg.out_dir.join(&p.name);
            let path = run_dir.join(trace::RUN_FILE_NAME);
            let mut m = RunMetrics::read(&path)?;
            if m.tex_hit_rate.is_none() {
                m.hit_rate_source = Some(format!("unavailable: {why}"));
                m.write(&path)?;
                RunMarker::write_for(&run_dir, p)?;
            }
        }
    }
    let counters_note = missing.map(|why| format!("no hardware counters in this sweep: {why}"));
    let (rows, sim_rates) = read_rows(&cfg.out_dir, mine.iter().map(|(_, p)| *p))?;
    let csv_path = cfg.out_dir.join(SWEEP_CSV);
    write_csv(&csv_path, &rows)?;
    Ok(SweepSummary {
        csv: csv_path,
        rows,
        rendered: total - resumed,
        resumed,
        redone,
        backend_note,
        plan_hash: plan.hash,
        shard,
        sim_rates,
        counters_note,
    })
}

/// The counter pass over `runs` that lack the GPU's counters: each run's run.json gets its
/// probed and bare builds' counters, and its completion marker is written again for the new
/// run.json.
fn add_counters<'a>(
    dir: &Path,
    plan: &SweepPlan,
    runs: impl Iterator<Item = &'a PlannedRun>,
    pass: &CounterPass,
) -> Result<(), StudyError> {
    let mut missing = Vec::new();
    for p in runs {
        let m = RunMetrics::read(&dir.join(&p.name).join(trace::RUN_FILE_NAME))?;
        if !m
            .hit_rate_source
            .as_deref()
            .is_some_and(|s| s.starts_with("ncu"))
        {
            missing.push((p, m));
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let frames = frames_for(missing.iter().map(|(p, _)| *p));
    let counted = crate::counters::collect(dir, &plan.inputs.common, &frames, pass)?;
    let of = |p: &PlannedRun, mode: ProbeMode| {
        counted
            .iter()
            .find(|(f, _)| f.shape == p.shape && f.view == p.view && f.mode == mode)
            .map(|(_, l)| l)
    };
    for (p, mut m) in missing {
        let (Some(probed), Some(bare)) = (of(p, p.mode), of(p, ProbeMode::Off)) else {
            continue;
        };
        m.set_counters(probed.counters);
        m.hit_rate_source = Some(probed.source());
        if p.mode != ProbeMode::Off {
            m.bare
                .get_or_insert_with(Default::default)
                .set_counters(bare.counters);
        }
        let run_dir = dir.join(&p.name);
        m.write(&run_dir.join(trace::RUN_FILE_NAME))?;
        RunMarker::write_for(&run_dir, p)?;
    }
    Ok(())
}

/// The `sweep.csv` rows of `runs`, in the order given, from each run folder's `run.json`, and
/// the simulation speeds those runs recorded.
pub(crate) fn read_rows<'a>(
    dir: &Path,
    runs: impl Iterator<Item = &'a PlannedRun>,
) -> Result<(Vec<SweepRow>, Vec<f64>), StudyError> {
    let (mut rows, mut rates) = (Vec::new(), Vec::new());
    for p in runs {
        let m = RunMetrics::read(&dir.join(&p.name).join(trace::RUN_FILE_NAME))?;
        rows.push(row_from_metrics(&p.name, &m));
        rates.extend(m.sim_warp_instructions_per_second);
    }
    Ok((rows, rates))
}

fn run_group(
    dev: &mut dyn Device,
    volume: &Volume,
    group: &[(&RenderConfig, &PlannedRun)],
    out_dir: &Path,
    tick: &(dyn Fn() + Sync),
) -> Result<(), StudyError> {
    let mut session = Session::new(dev, volume);
    let mut bare: Option<Frame> = None;
    for &(r, p) in group {
        let dir = out_dir.join(&p.name);
        session.render_run(r, &dir, &mut bare)?;
        RunMarker::write_for(&dir, p)?;
        tick();
    }
    Ok(())
}

/// Writes the rows as CSV (header from [`SweepRow`]'s fields; None as an empty cell), atomically.
pub fn write_csv(path: &Path, rows: &[SweepRow]) -> Result<(), StudyError> {
    Ok(SweepRow::write_csv(path, rows)?)
}

/// Any serializable rows as CSV (header from the fields; None as an empty cell), atomically.
pub(crate) fn write_csv_rows<T: serde::Serialize>(
    path: &Path,
    rows: &[T],
) -> Result<(), StudyError> {
    let csv_err = |e: csv::Error| StudyError::Csv {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r).map_err(csv_err)?;
    }
    let bytes = w.into_inner().map_err(|e| StudyError::Csv {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    Ok(trace::write_bytes_atomic(path, &bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Scale, demo_config};

    #[test]
    fn runs_cross_shapes_views_modes_in_order_with_unique_names() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = demo_config(dir.path(), Scale::Quick).unwrap();
        let runs = cfg.runs();
        assert_eq!(runs.len(), 8 * 2 * 2);
        assert_eq!(runs[0].run_name(), "128x1_v0-0-0_naive");
        assert_eq!(runs[1].run_name(), "128x1_v0-0-0_fence");
        assert_eq!(runs[2].run_name(), "128x1_v90-0-90_naive");
        let mut names: Vec<String> = runs.iter().map(|r| r.run_name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), runs.len());
        assert_eq!(cfg.emu_config.name, "gtx480");
    }

    #[test]
    fn a_run_folder_is_complete_only_with_its_marker_and_files_of_the_marked_sizes() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = demo_config(dir.path(), Scale::Quick).unwrap();
        let plan = SweepPlan::new(&cfg).unwrap();
        let (run, other) = (&plan.runs[0], &plan.runs[1]);
        let d = dir.path().join(&run.name);
        assert_eq!(run_state(&d, run), RunState::Missing);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("run.json"), "{\"backend\":").unwrap();
        assert!(
            matches!(run_state(&d, run), RunState::Incomplete(w) if w.contains("complete.json"))
        );
        let m = RunMetrics::new(
            "emu",
            "d_render",
            trace::Dim3::new(1, 1, 1),
            trace::Dim3::new(32, 1, 1),
            ProbeMode::Fence,
        );
        m.write(&d.join("run.json")).unwrap();
        std::fs::write(d.join("image.png"), b"png bytes").unwrap();
        RunMarker::write_for(&d, run).unwrap();
        assert_eq!(run_state(&d, run), RunState::Complete);
        assert!(
            matches!(run_state(&d, other), RunState::Incomplete(w) if w.contains("not of these inputs"))
        );
        std::fs::write(d.join("image.png"), b"png").unwrap();
        assert!(
            matches!(run_state(&d, run), RunState::Incomplete(w) if w.contains("image.png has 3 bytes, 9"))
        );
    }

    #[test]
    fn empty_axes_are_refused_with_the_field_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = demo_config(dir.path(), Scale::Quick).unwrap();
        cfg.modes.clear();
        let e = sweep(&cfg, &|_, _| {}).unwrap_err().to_string();
        assert!(e.contains("modes"), "{e}");
    }
}
