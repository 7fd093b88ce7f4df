//! `merge`: one sweep from the folders of its shards. Every folder must hold the same plan (by
//! hash; a different one is refused with the differing parameters named); every run of the plan
//! must be complete in one of them (or already in the output) — else nothing is written and the
//! missing runs are named; a run complete in two folders is taken from the first given and
//! reported. Run folders are copied file by file, atomically, the completion marker last; runs
//! already complete in the output are left alone, so merging again is a no-op and the output may
//! be one of the shard folders. `sweep.csv` is then written in plan order from the runs' `run.json`,
//! exactly as an unsharded sweep writes it.

use crate::StudyError;
use crate::complete::{COMPLETE_JSON, RunState, clear_marker, run_state};
use crate::lock::FolderLock;
use crate::plan::{PLAN_JSON, SweepPlan};
use crate::sweep::{open_sweep_folder, read_rows, write_csv};
use std::path::{Path, PathBuf};
use trace::TRACE_FILE_NAME;
use trace::{SWEEP_CSV, SweepRow};

/// What a merge did.
#[derive(Debug, Clone)]
pub struct MergeSummary {
    pub csv: PathBuf,
    pub rows: Vec<SweepRow>,
    /// Runs copied into the output now, and runs that were already complete there.
    pub copied: usize,
    pub in_place: usize,
    /// Runs complete in more than one folder: which was used, and whether their records agree.
    pub duplicates: Vec<String>,
    pub plan_hash: String,
}

/// At most this many missing runs are named in the error.
const NAMED_MISSING: usize = 20;

fn same_folder(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Whether two copies of a run hold the same records and image (`run.json` also holds the wall
/// time, so it is not compared byte for byte).
fn same_results(a: &Path, b: &Path) -> bool {
    [TRACE_FILE_NAME, "image.png"].iter().all(|f| {
        match (std::fs::read(a.join(f)), std::fs::read(b.join(f))) {
            (Ok(x), Ok(y)) => x == y,
            (Err(_), Err(_)) => true,
            _ => false,
        }
    })
}

/// Copies the run folder `src` into `dst`: every plain file but the marker, each atomically, then
/// the marker, so an interrupted copy is an incomplete run.
fn copy_run(src: &Path, dst: &Path) -> Result<(), StudyError> {
    std::fs::create_dir_all(dst).map_err(|e| StudyError::io(dst, e))?;
    clear_marker(dst)?;
    let mut names = Vec::new();
    for entry in std::fs::read_dir(src).map_err(|e| StudyError::io(src, e))? {
        let entry = entry.map_err(|e| StudyError::io(src, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_file = entry
            .file_type()
            .map_err(|e| StudyError::io(entry.path(), e))?;
        if is_file.is_file() && !name.starts_with('.') && name != COMPLETE_JSON {
            names.push(name);
        }
    }
    names.sort();
    names.push(COMPLETE_JSON.to_string());
    for name in names {
        let from = src.join(&name);
        let to = dst.join(&name);
        let mut input = std::fs::File::open(&from).map_err(|e| StudyError::io(&from, e))?;
        trace::write_atomic_with(
            &to,
            |w| std::io::copy(&mut input, w).map_err(|e| StudyError::io(&from, e)),
            |p: &Path, e| StudyError::io(p, e),
        )?;
    }
    Ok(())
}

/// Merges the shard folders `dirs` into the sweep folder `out` (see the module documentation).
pub fn merge(out: &Path, dirs: &[PathBuf]) -> Result<MergeSummary, StudyError> {
    let Some(first) = dirs.first() else {
        return Err(StudyError::Config {
            field: "merge",
            value: String::new(),
            reason: "no shard folder given".into(),
        });
    };
    let plan = SweepPlan::read(&first.join(PLAN_JSON))?;
    for d in &dirs[1..] {
        let other = SweepPlan::read(&d.join(PLAN_JSON))?;
        if other.hash != plan.hash {
            return Err(StudyError::PlanMismatch {
                dir: d.clone(),
                differences: plan.differences(&other),
                advice: format!(
                    "differences are {}'s -> this folder's; merge only shards of one sweep",
                    first.display()
                ),
            });
        }
    }
    // The output's own complete runs come first: merging again copies nothing.
    let mut sources: Vec<&Path> = vec![out];
    sources.extend(
        dirs.iter()
            .map(PathBuf::as_path)
            .filter(|d| !same_folder(d, out)),
    );
    // Shards still writing hold their lock: refuse rather than take a half-done folder.
    let _source_locks = sources[1..]
        .iter()
        .map(|d| FolderLock::share(d))
        .collect::<Result<Vec<_>, _>>()?;

    let mut chosen = Vec::with_capacity(plan.runs.len());
    let mut missing = Vec::new();
    let mut duplicates = Vec::new();
    for run in &plan.runs {
        let mut complete = Vec::new();
        let mut why = None;
        for &src in &sources {
            match run_state(&src.join(&run.name), run) {
                RunState::Complete => complete.push(src),
                RunState::Incomplete(w) if why.is_none() => why = Some(w),
                _ => {}
            }
        }
        let Some(&from) = complete.first() else {
            missing.push(format!(
                "{} (#{}: {})",
                run.name,
                run.index,
                why.unwrap_or_else(|| "in no folder".into())
            ));
            continue;
        };
        let shards: Vec<&Path> = complete.iter().copied().filter(|s| *s != out).collect();
        if shards.len() > 1 {
            let agree = shards[1..]
                .iter()
                .all(|s| same_results(&shards[0].join(&run.name), &s.join(&run.name)));
            duplicates.push(format!(
                "{} is complete in {}; {} taken from {}",
                run.name,
                shards
                    .iter()
                    .map(|s| s.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" and "),
                if agree {
                    "identical records,"
                } else {
                    "their records DIFFER (a GPU measures anew each time),"
                },
                from.display()
            ));
        }
        chosen.push((run, from));
    }
    if !missing.is_empty() {
        return Err(StudyError::MergeMissing {
            missing: missing.len(),
            total: plan.runs.len(),
            runs: missing.into_iter().take(NAMED_MISSING).collect(),
        });
    }

    let _lock = open_sweep_folder(out, &plan, "merge")?;
    let (mut copied, mut in_place) = (0, 0);
    for (run, from) in chosen {
        if from == out {
            in_place += 1;
        } else {
            copy_run(&from.join(&run.name), &out.join(&run.name))?;
            // the copy is checked like any run folder before it counts
            if let RunState::Incomplete(w) = run_state(&out.join(&run.name), run) {
                return Err(StudyError::BadFile {
                    path: out.join(&run.name),
                    reason: format!("copied from {} but not complete: {w}", from.display()),
                });
            }
            copied += 1;
        }
    }
    let (rows, _) = read_rows(out, plan.runs.iter())?;
    let csv = out.join(SWEEP_CSV);
    write_csv(&csv, &rows)?;
    Ok(MergeSummary {
        csv,
        rows,
        copied,
        in_place,
        duplicates,
        plan_hash: plan.hash,
    })
}
