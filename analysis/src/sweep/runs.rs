//! Each run's folder of a sweep, found from its `sweep.csv` row.
//!
//! The contract (written by the study crate's `sweep`):
//! ```text
//! SWEEPDIR/sweep.csv        trace::SweepRow, read by `sweep_dir.rs` (columns by name, empty
//!                           cells and missing optional columns unknown)
//! SWEEPDIR/<run>/run.json   trace::RunMetrics (fallback for frame_rate / tex_hit_rate; the
//!                           per-site ground truth); a run whose run.json exists but cannot be
//!                           read is left out, with why
//! SWEEPDIR/<run>/trace.wst  trace::TraceReader
//! SWEEPDIR/<run>/config.toml  the effective emulator config (optional)
//! ```

use std::path::{Path, PathBuf};

use trace::SweepRow;

/// A run's folder contents that the analysis needs besides the trace.
#[derive(Debug, Clone)]
pub(crate) struct RunFiles {
    pub row: SweepRow,
    pub trace: PathBuf,
    /// The effective emulator config, when the run wrote one.
    pub config: Option<String>,
    /// Where the run's hit rates come from, or why they are missing (run.json).
    pub hit_rate_source: Option<String>,
    /// The row's texture hit rate is the bare build's: the probed build's was not counted.
    pub tex_from_bare: bool,
    /// The probes beside the true access times, per site (run.json; the emulator's runs).
    pub truth: Option<trace::ProbeTruth>,
}

/// Why a listed run was left out of the analysis.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Skipped {
    pub run: String,
    pub reason: String,
}

/// Locates each run's files; runs without a trace are returned as skipped, with the reason.
pub(crate) fn locate_runs(dir: &Path, rows: Vec<SweepRow>) -> (Vec<RunFiles>, Vec<Skipped>) {
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    for mut row in rows {
        let run_dir = dir.join(&row.run);
        let trace = run_dir.join(trace::TRACE_FILE_NAME);
        if !trace.is_file() {
            skipped.push(Skipped {
                reason: format!("no {} in {}", trace::TRACE_FILE_NAME, run_dir.display()),
                run: row.run,
            });
            continue;
        }
        // run.json fills what sweep.csv left empty; a run without one still has its trace, but
        // one that is there and unreadable is left out (and counted so), not quietly ignored.
        let run_json = run_dir.join(trace::RUN_FILE_NAME);
        let metrics = if run_json.exists() {
            match trace::RunMetrics::read(&run_json) {
                Ok(m) => Some(m),
                Err(e) => {
                    skipped.push(Skipped {
                        reason: trace::error_chain(&e),
                        run: row.run,
                    });
                    continue;
                }
            }
        } else {
            None
        };
        let hit_rate_source = metrics.as_ref().and_then(|m| m.hit_rate_source.clone());
        let truth = metrics.as_ref().and_then(|m| m.truth.clone());
        if let Some(m) = metrics {
            row.frame_rate = row.frame_rate.or(m.frame_rate);
            row.tex_hit_rate = row.tex_hit_rate.or(m.tex_hit_rate);
            row.kernel_ms = row.kernel_ms.or(m.kernel_ms);
            row.cycles = row.cycles.or(m.cycles);
            if row.backend.is_empty() {
                row.backend = m.backend;
            }
            if row.preset.is_empty() {
                row.preset = m.preset.unwrap_or_default();
            }
        }
        // Where only the bare build's counters exist, they stand for the run's (the analysis
        // says so): the probes change the hit rate by little, and that little is measured
        // wherever both exist.
        let tex_from_bare = row.tex_hit_rate.is_none() && row.tex_hit_rate_bare.is_some();
        if tex_from_bare {
            row.tex_hit_rate = row.tex_hit_rate_bare;
        }
        let config = std::fs::read_to_string(run_dir.join("config.toml")).ok();
        found.push(RunFiles {
            row,
            trace,
            config,
            hit_rate_source,
            tex_from_bare,
            truth,
        });
    }
    (found, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep_dir::read_sweep_csv;

    #[test]
    fn a_malformed_run_json_leaves_the_run_out_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("sweep.csv"),
            "run,shape,view,mode,cycles\nbad,1x1,0,fence,\nok,1x1,0,fence,\n",
        )
        .unwrap();
        for run in ["bad", "ok"] {
            std::fs::create_dir_all(dir.path().join(run)).unwrap();
            std::fs::write(dir.path().join(run).join("trace.wst"), b"").unwrap();
        }
        std::fs::write(dir.path().join("bad").join("run.json"), "{\"backend\": 3").unwrap();
        let rows = read_sweep_csv(dir.path()).unwrap();
        let (found, skipped) = locate_runs(dir.path(), rows);
        assert_eq!(found.len(), 1);
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].run, "bad");
        assert!(
            skipped[0].reason.contains("run.json") && skipped[0].reason.contains("invalid JSON"),
            "{}",
            skipped[0].reason
        );
    }

    #[test]
    fn runs_without_trace_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("sweep.csv"),
            "run,shape,view,mode,cycles\nmissing,1x1,0,fence,\n",
        )
        .unwrap();
        let rows = read_sweep_csv(dir.path()).unwrap();
        let (found, skipped) = locate_runs(dir.path(), rows);
        assert!(found.is_empty());
        assert_eq!(skipped[0].run, "missing");
        assert!(skipped[0].reason.contains("trace.wst"));
    }
}
