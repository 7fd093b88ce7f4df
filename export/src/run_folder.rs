//! Exporting a run folder (what render, sweep, launch and `warpscope run` write): its
//! `trace.wst`, checked against the `run.json` beside it, into any log warpscope writes — a
//! streaming [`Format`] or Parquet — never over either input.

use crate::error::ExportError;
use crate::options::{ExportOptions, ExportSummary, Format};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use trace::{ProbeMode, RUN_FILE_NAME, RunMetrics, TRACE_FILE_NAME, TraceReader};

/// A log a run folder can be exported to: one of the streaming [`Format`]s, or Parquet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunLog {
    Stream(Format),
    /// A Parquet table, one row per record ([`crate::write_parquet`]).
    #[cfg(feature = "parquet")]
    Parquet,
}

impl RunLog {
    /// Every log, in the order the command line lists them.
    pub fn all() -> Vec<RunLog> {
        let mut v: Vec<RunLog> = Format::ALL.into_iter().map(RunLog::Stream).collect();
        #[cfg(feature = "parquet")]
        v.push(RunLog::Parquet);
        v
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            RunLog::Stream(f) => f.name(),
            #[cfg(feature = "parquet")]
            RunLog::Parquet => "parquet",
        }
    }

    /// The log's usual name in a run folder (a file, or OTF2's archive folder).
    pub fn default_file_name(self) -> &'static str {
        match self {
            RunLog::Stream(f) => f.default_file_name(),
            #[cfg(feature = "parquet")]
            RunLog::Parquet => crate::PARQUET_FILE_NAME,
        }
    }

    /// What the log holds, in a line (the command line's help).
    pub fn contents(self) -> &'static str {
        match self {
            RunLog::Stream(f) => f.contents(),
            #[cfg(feature = "parquet")]
            RunLog::Parquet => crate::PARQUET_CONTENTS,
        }
    }
}

impl fmt::Display for RunLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for RunLog {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let all = RunLog::all();
        all.iter().copied().find(|l| l.name() == s).ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|l| l.name()).collect();
            format!("unknown format {s:?}; expected {}", names.join(", "))
        })
    }
}

/// What [`RunFolder::export_logs`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exported {
    /// Every log asked for (none when none was).
    AsAsked,
    /// No log although some were asked for: a run with the probes off records nothing.
    ProbesOff,
}

/// A run folder's trace, opened for export.
pub struct RunFolder {
    dir: PathBuf,
    reader: TraceReader,
}

impl RunFolder {
    /// Opens the trace of the run folder `dir`. A trace that the folder's `run.json` says is
    /// left over from an earlier run is refused (see [`ExportError::StaleTrace`]).
    pub fn open(dir: &Path) -> Result<RunFolder, ExportError> {
        let path = dir.join(TRACE_FILE_NAME);
        if !path.exists() {
            return Err(ExportError::NotARunFolder {
                dir: dir.to_path_buf(),
            });
        }
        let reader = TraceReader::open(&path)?;
        let folder = RunFolder {
            dir: dir.to_path_buf(),
            reader,
        };
        folder.refuse_stale()?;
        Ok(folder)
    }

    /// The trace, to read it directly.
    pub fn reader(&self) -> &TraceReader {
        &self.reader
    }

    /// The folder's `run.json` is the marker that says whether `trace.wst` is current: a launch
    /// that fails into an old output folder leaves the previous run's trace beside a run.json
    /// that lists the error and counts none of the trace's records. A run that failed after
    /// writing its trace (its run.json counts the same records for the same kernel) is current.
    fn refuse_stale(&self) -> Result<(), ExportError> {
        let run_json = self.dir.join(RUN_FILE_NAME);
        if !run_json.exists() {
            return Ok(());
        }
        let m = RunMetrics::read(&run_json)?;
        let same_run =
            m.kernel == self.reader.launch().kernel && m.records == self.reader.record_count();
        match (m.errors.first(), same_run) {
            (Some(error), false) => Err(ExportError::StaleTrace {
                trace: self.reader.path().to_path_buf(),
                run_json,
                error: error.clone(),
            }),
            _ => Ok(()),
        }
    }

    /// Writes `log` to `out` (a file, or OTF2's folder), atomically, never over the trace, the
    /// run.json beside it or a link to either. Parquet's summary counts the records only.
    pub fn export(
        &self,
        log: RunLog,
        out: &Path,
        opts: &ExportOptions,
    ) -> Result<ExportSummary, ExportError> {
        let run_json = self.dir.join(RUN_FILE_NAME);
        let inputs = [self.reader.path(), run_json.as_path()];
        match log {
            RunLog::Stream(f) => {
                crate::check_output(f, out, &inputs)?;
                crate::export(&self.reader, f, out, opts)
            }
            #[cfg(feature = "parquet")]
            RunLog::Parquet => {
                trace::check_output_against(out, &inputs)?;
                let records = crate::write_parquet(&self.reader, out)?;
                Ok(ExportSummary {
                    records,
                    ..ExportSummary::default()
                })
            }
        }
    }

    /// Writes each of `logs` into the run folder under its default name (render's and sweep's
    /// `--formats`). A run with the probes off (`mode`) records nothing and has no log to write.
    pub fn export_logs(
        dir: &Path,
        mode: ProbeMode,
        logs: &[RunLog],
    ) -> Result<Exported, ExportError> {
        if logs.is_empty() {
            return Ok(Exported::AsAsked);
        }
        if mode == ProbeMode::Off {
            return Ok(Exported::ProbesOff);
        }
        let folder = RunFolder::open(dir)?;
        for &log in logs {
            folder.export(
                log,
                &dir.join(log.default_file_name()),
                &ExportOptions::default(),
            )?;
        }
        Ok(Exported::AsAsked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_an_unknown_one_lists_them_all() {
        for l in RunLog::all() {
            assert_eq!(l.name().parse::<RunLog>(), Ok(l));
        }
        let e = "pdf".parse::<RunLog>().unwrap_err();
        assert!(e.contains("\"pdf\"") && e.contains("warp-csv"), "{e}");
        #[cfg(feature = "parquet")]
        assert!(e.contains("parquet"), "{e}");
    }

    #[test]
    fn a_folder_without_a_trace_is_not_a_run_folder() {
        let dir = tempfile::tempdir().unwrap();
        let Err(e) = RunFolder::open(dir.path()) else {
            panic!("an empty folder opened as a run folder")
        };
        let e = e.to_string();
        assert!(e.contains("not a run folder"), "{e}");
    }
}
