//! Reading a sweep directory: `sweep.csv` (one row per run) and each run's folder.
//!
//! The contract (written by the study crate's `sweep`):
//! ```text
//! SWEEPDIR/sweep.csv        header + one row per run; columns read by name, in any order:
//!                           run, shape, view, mode, cycles (required columns); backend, preset,
//!                           kernel_ms, frame_rate, tex_hit_rate, dropped_records, overhead,
//!                           occupancy_bare, occupancy_probed, tex_hit_rate_bare (optional; an
//!                           empty cell or a missing column = unknown). Each run once; shape is
//!                           WIDTHxHEIGHT; counts, times and rates are not negative.
//! SWEEPDIR/<run>/run.json   trace::RunMetrics (fallback for frame_rate / tex_hit_rate); a run
//!                           whose run.json exists but cannot be read is left out, with why
//! SWEEPDIR/<run>/trace.wst  trace::TraceReader
//! SWEEPDIR/<run>/config.toml  the effective emulator config (optional)
//! ```

use crate::AnalysisError;
use std::path::{Path, PathBuf};

/// One row of `sweep.csv` (the type the study writes), with run.json's metrics filling cells the
/// CSV left empty.
pub(crate) use trace::SweepRow;

/// A run's folder contents that the analysis needs besides the trace.
#[derive(Debug, Clone)]
pub(crate) struct RunFiles {
    pub row: SweepRow,
    pub trace: PathBuf,
    /// The effective emulator config, when the run wrote one.
    pub config: Option<String>,
}

/// Why a listed run was left out of the analysis.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Skipped {
    pub run: String,
    pub reason: String,
}

/// Numeric columns that count, time or rate something: a negative value is a damaged file.
const NON_NEGATIVE: [&str; 11] = [
    "cycles",
    "kernel_ms",
    "frame_rate",
    "tex_hit_rate",
    "dropped_records",
    "occupancy_bare",
    "occupancy_probed",
    "tex_hit_rate_bare",
    "overhead",
    "warp_instructions",
    "records",
];

/// Reads `sweep.csv`, rejecting a directory that is not a sweep with a message saying why.
pub(crate) fn read_sweep_csv(dir: &Path) -> Result<Vec<SweepRow>, AnalysisError> {
    let not_sweep = |reason: String| AnalysisError::NotASweep {
        path: dir.to_path_buf(),
        reason,
    };
    if !dir.is_dir() {
        return Err(not_sweep("no such directory".into()));
    }
    let path = dir.join(trace::SWEEP_CSV);
    if !path.is_file() {
        return Err(not_sweep("it has no sweep.csv".into()));
    }
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_path(&path)
        .map_err(|e| csv_error(&path, 1, e))?;
    let headers = rdr.headers().map_err(|e| csv_error(&path, 1, e))?.clone();
    let col = |name: &str| headers.iter().position(|h| h.trim() == name);
    if let Some(missing) = SweepRow::REQUIRED_COLUMNS.iter().find(|c| col(c).is_none()) {
        return Err(not_sweep(format!(
            "sweep.csv has no `{missing}` column (header: {})",
            headers.iter().collect::<Vec<_>>().join(",")
        )));
    }
    let mut rows = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (i, rec) in rdr.records().enumerate() {
        let line = i as u64 + 2;
        let rec = rec.map_err(|e| csv_error(&path, line, e))?;
        let text = |name: &str| {
            col(name)
                .and_then(|c| rec.get(c))
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        let bad = |reason: String| AnalysisError::SweepCsv {
            path: path.clone(),
            line,
            reason,
        };
        let num = |name: &str| -> Result<Option<f64>, AnalysisError> {
            let v = parse_optional(&text(name))
                .map_err(|reason| bad(format!("column `{name}`: {reason}")))?;
            match v {
                Some(x) if x < 0.0 && NON_NEGATIVE.contains(&name) => {
                    Err(bad(format!("column `{name}`: {x} is negative")))
                }
                _ => Ok(v),
            }
        };
        // Counts are whole numbers; a spreadsheet may have written one as `12.0`.
        let count = |name: &str| -> Result<Option<u64>, AnalysisError> {
            match num(name)? {
                Some(x) if x.fract() != 0.0 || x > u64::MAX as f64 => {
                    Err(bad(format!("column `{name}`: {x} is not a whole number")))
                }
                v => Ok(v.map(|x| x as u64)),
            }
        };
        let flag = |name: &str| -> Result<Option<bool>, AnalysisError> {
            match text(name).to_ascii_lowercase().as_str() {
                "" | "nan" | "na" => Ok(None),
                "true" => Ok(Some(true)),
                "false" => Ok(Some(false)),
                other => Err(bad(format!(
                    "column `{name}`: {other:?} is not true or false"
                ))),
            }
        };
        let row = SweepRow {
            run: text("run"),
            backend: text("backend"),
            preset: text("preset"),
            shape: text("shape"),
            view: text("view"),
            mode: text("mode"),
            cycles: count("cycles")?,
            kernel_ms: num("kernel_ms")?,
            frame_rate: num("frame_rate")?,
            tex_hit_rate: num("tex_hit_rate")?,
            dropped_records: count("dropped_records")?,
            overhead: num("overhead")?,
            occupancy_bare: count("occupancy_bare")?,
            occupancy_probed: count("occupancy_probed")?,
            tex_hit_rate_bare: num("tex_hit_rate_bare")?,
            warp_instructions: count("warp_instructions")?,
            records: count("records")?,
            image_matches_bare: flag("image_matches_bare")?,
        };
        if row.run.is_empty() || row.run.contains(['/', '\\']) || row.run == ".." {
            return Err(AnalysisError::SweepCsv {
                path: path.clone(),
                line,
                reason: format!(
                    "`run` must name a folder inside the sweep, got {:?}",
                    row.run
                ),
            });
        }
        if parse_shape(&row.shape).is_none() {
            return Err(bad(format!(
                "column `shape`: {:?} is not WIDTHxHEIGHT (e.g. 16x8)",
                row.shape
            )));
        }
        if let Some(first) = seen.insert(row.run.clone(), line) {
            return Err(bad(format!(
                "run {:?} is listed twice (first on line {first})",
                row.run
            )));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(not_sweep("sweep.csv lists no runs".into()));
    }
    Ok(rows)
}

fn csv_error(path: &Path, line: u64, e: csv::Error) -> AnalysisError {
    AnalysisError::SweepCsv {
        path: path.to_path_buf(),
        line: e.position().map(|p| p.line()).unwrap_or(line),
        reason: e.to_string(),
    }
}

/// A block shape `WIDTHxHEIGHT` (positive integers), as sweep.csv names it.
pub(crate) fn parse_shape(s: &str) -> Option<(u32, u32)> {
    let (x, y) = s.split_once('x')?;
    let (x, y) = (x.trim().parse().ok()?, y.trim().parse().ok()?);
    (x > 0 && y > 0).then_some((x, y))
}

/// An empty cell (or `nan`/`NA`, which spreadsheets write) is unknown; anything else must parse.
fn parse_optional(s: &str) -> Result<Option<f64>, String> {
    if s.is_empty() || s.eq_ignore_ascii_case("nan") || s.eq_ignore_ascii_case("na") {
        return Ok(None);
    }
    s.parse::<f64>()
        .map(Some)
        .map_err(|_| format!("{s:?} is not a number"))
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
        let run_json = run_dir.join("run.json");
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
        let config = std::fs::read_to_string(run_dir.join("config.toml")).ok();
        found.push(RunFiles { row, trace, config });
    }
    (found, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rows_by_column_name_with_empty_cells() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("sweep.csv"),
            "mode,run,shape,view,cycles,tex_hit_rate,frame_rate\nfence,a,16x8,\"0,0,0\",,,12.5\nnaive,b,8x16,\"90,0,90\",7,0.5,nan\n",
        )
        .unwrap();
        let rows = read_sweep_csv(dir.path()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].run, "a");
        assert_eq!(rows[0].view, "0,0,0");
        assert_eq!(rows[0].tex_hit_rate, None);
        assert_eq!(rows[0].frame_rate, Some(12.5));
        assert_eq!(rows[1].tex_hit_rate, Some(0.5));
        assert_eq!(rows[1].frame_rate, None);
    }

    #[test]
    fn rejects_non_sweeps_with_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_sweep_csv(dir.path()).unwrap_err().to_string();
        assert!(e.contains("no sweep.csv"), "{e}");
        std::fs::write(dir.path().join("sweep.csv"), "run,shape\nx,1x1\n").unwrap();
        let e = read_sweep_csv(dir.path()).unwrap_err().to_string();
        assert!(e.contains("`view`"), "{e}");
        std::fs::write(
            dir.path().join("sweep.csv"),
            "run,shape,view,mode,cycles\nx,1x1,0,fence,lots\n",
        )
        .unwrap();
        let e = read_sweep_csv(dir.path()).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("cycles"), "{e}");
        std::fs::write(
            dir.path().join("sweep.csv"),
            "run,shape,view,mode,cycles\n../x,1x1,0,fence,1\n",
        )
        .unwrap();
        assert!(read_sweep_csv(dir.path()).is_err());
    }

    /// Each damaged sweep.csv is refused with the file, the line and the column or run.
    #[test]
    fn refuses_duplicates_missing_columns_negative_counts_and_bad_shapes() {
        let dir = tempfile::tempdir().unwrap();
        let head = "run,shape,view,mode,cycles\n";
        let cases = [
            (
                format!("{head}a,16x8,0,fence,10\nb,8x16,0,fence,10\na,16x8,0,fence,10\n"),
                &[
                    "sweep.csv",
                    "line 4",
                    "\"a\" is listed twice (first on line 2)",
                ][..],
            ),
            (
                "run,shape,view,mode\na,16x8,0,fence\n".to_string(),
                &["sweep.csv", "no `cycles` column"][..],
            ),
            (
                format!("{head}a,16x8,0,fence,-5\n"),
                &["line 2", "column `cycles`: -5 is negative"][..],
            ),
            (
                format!("{head}a,16by8,0,fence,5\n"),
                &["line 2", "column `shape`", "16by8"][..],
            ),
        ];
        for (text, wants) in cases {
            std::fs::write(dir.path().join("sweep.csv"), &text).unwrap();
            let e = read_sweep_csv(dir.path()).unwrap_err().to_string();
            for w in wants {
                assert!(e.contains(w), "{text:?}: {e} should contain {w:?}");
            }
        }
    }

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
