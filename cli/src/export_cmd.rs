//! `warpscope export`: a run's `trace.wst` as CSV, per-warp CSV, CLOG2 (Jumpshot), Chrome trace
//! JSON (Perfetto), an OTF2 archive (Vampir) or Parquet, written atomically.

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use export::{ExportOptions, Format, TimelineMapping};
use std::path::{Path, PathBuf};
use trace::{ProbeMode, RunMetrics, TRACE_FILE_NAME, TraceReader};

/// A log format: one of the export crate's streaming formats, or Parquet (its `parquet` feature).
/// The names are the export crate's [`Format::name`]s (a test holds them together).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Csv,
    WarpCsv,
    Clog2,
    Chrome,
    Otf2,
    Parquet,
}

impl ExportFormat {
    /// The streaming format of the export crate, or `None` for Parquet.
    fn log(self) -> Option<Format> {
        match self {
            ExportFormat::Csv => Some(Format::Csv),
            ExportFormat::WarpCsv => Some(Format::WarpCsv),
            ExportFormat::Clog2 => Some(Format::Clog2),
            ExportFormat::Chrome => Some(Format::Chrome),
            ExportFormat::Otf2 => Some(Format::Otf2),
            ExportFormat::Parquet => None,
        }
    }

    fn file_name(self) -> &'static str {
        self.log()
            .map_or("records.parquet", Format::default_file_name)
    }
}

/// One value of `--formats`: a format, or `none` for no log at all.
pub fn format_or_none(s: &str) -> Result<Option<ExportFormat>, String> {
    if s == "none" {
        return Ok(None);
    }
    ExportFormat::from_str(s, false).map(Some).map_err(|_| {
        let names: Vec<String> = ExportFormat::value_variants()
            .iter()
            .filter_map(|f| f.to_possible_value().map(|v| v.get_name().to_string()))
            .collect();
        format!("{s:?}: expected {} or none", names.join(", "))
    })
}

/// How warps map onto CLOG2 ranks/threads, Chrome pids/tids and OTF2 location groups/locations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mapping {
    /// rank = SM, thread = warp slot.
    SmSlot,
    /// rank = block, thread = warp within the block.
    BlockWarp,
}

impl From<Mapping> for TimelineMapping {
    fn from(m: Mapping) -> TimelineMapping {
        match m {
            Mapping::SmSlot => TimelineMapping::SmSlot,
            Mapping::BlockWarp => TimelineMapping::BlockWarp,
        }
    }
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A run folder (with trace.wst), as render, sweep and launch write.
    #[arg(long = "in")]
    pub input: PathBuf,
    /// The output format.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Output file, or for otf2 the archive's folder (default: RUNDIR/<records.csv | warps.csv |
    /// trace.clog2 | trace.json | otf2 | records.parquet>; Vampir opens otf2/traces.otf2).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// CLOG2/Chrome/OTF2 timelines.
    #[arg(long, value_enum, default_value_t = Mapping::SmSlot)]
    pub mapping: Mapping,
}

fn open(run_dir: &Path) -> Result<TraceReader> {
    let path = run_dir.join(TRACE_FILE_NAME);
    if !path.exists() {
        anyhow::bail!(
            "{} has no {TRACE_FILE_NAME}: not a run folder (render, sweep and launch write one per run)",
            run_dir.display()
        );
    }
    let reader = TraceReader::open(&path)?;
    refuse_stale(run_dir, &reader)?;
    Ok(reader)
}

/// The run's own `run.json` is the marker that says whether `trace.wst` is current: a launch that
/// fails into an old output folder leaves the previous run's trace beside a run.json that lists
/// the error and counts none of the trace's records. Such a trace is refused rather than exported
/// as if it were the new run's. A run that failed after writing its trace (its run.json counts
/// the same records for the same kernel) is still exported.
fn refuse_stale(run_dir: &Path, reader: &TraceReader) -> Result<()> {
    let run_json = run_dir.join("run.json");
    if !run_json.exists() {
        return Ok(());
    }
    let m = RunMetrics::read(&run_json)?;
    let same_run = m.kernel == reader.launch().kernel && m.records == reader.record_count();
    if let (Some(error), false) = (m.errors.first(), same_run) {
        anyhow::bail!(
            "{}: left over from an earlier run: the last run in {} failed ({error}) and {} does not describe this trace; re-run it",
            reader.path().display(),
            run_dir.display(),
            run_json.display()
        );
    }
    Ok(())
}

fn write(
    reader: &TraceReader,
    format: ExportFormat,
    out: &Path,
    opts: &ExportOptions,
) -> Result<()> {
    // Never over an input: the trace itself, the run.json read beside it, or a link to either
    // (or, for an OTF2 archive's folder, a folder holding either).
    let run_json = reader.path().with_file_name("run.json");
    let inputs = [reader.path(), run_json.as_path()];
    match format.log() {
        Some(f) => {
            export::check_output(f, out, &inputs)?;
            let s = export::export(reader, f, out, opts)?;
            if s.dropped > 0 || s.wrapped > 0 {
                eprintln!(
                    "warpscope: {}: {} records dropped by full logs and {} with wrapped clocks are marked in the output",
                    out.display(),
                    s.dropped,
                    s.wrapped
                );
            }
        }
        None => {
            trace::check_output_against(out, &inputs)?;
            export::write_parquet(reader, out)?;
        }
    }
    Ok(())
}

pub fn run(args: &ExportArgs) -> Result<()> {
    let reader = open(&args.input)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.input.join(args.format.file_name()));
    let opts = ExportOptions::default().with_mapping(args.mapping.into());
    write(&reader, args.format, &out, &opts)
        .with_context(|| format!("exporting {}", args.input.display()))?;
    eprintln!("warpscope: wrote {}", out.display());
    Ok(())
}

/// What [`export_run`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exported {
    /// Every log asked for (none when no format was).
    AsAsked,
    /// No log although some were asked for: a run with the probes off records nothing.
    ProbesOff,
}

/// Writes each format into the run folder under its default name (render and sweep's
/// `--formats`). A run with the probes off (`mode`) records nothing and has no log to write.
pub fn export_run(run_dir: &Path, mode: ProbeMode, formats: &[ExportFormat]) -> Result<Exported> {
    if formats.is_empty() {
        return Ok(Exported::AsAsked);
    }
    if mode == ProbeMode::Off {
        return Ok(Exported::ProbesOff);
    }
    let reader = open(run_dir)?;
    for &f in formats {
        write(
            &reader,
            f,
            &run_dir.join(f.file_name()),
            &ExportOptions::default(),
        )
        .with_context(|| format!("exporting {}", run_dir.display()))?;
    }
    Ok(Exported::AsAsked)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command line's format names are the export crate's, and `none` means no log.
    #[test]
    fn format_names_are_the_export_crates_and_none_is_no_log() {
        for f in Format::ALL {
            let ours = format_or_none(f.name()).unwrap().unwrap();
            assert_eq!(ours.log(), Some(f));
            assert_eq!(ours.file_name(), f.default_file_name());
        }
        assert_eq!(format_or_none("parquet"), Ok(Some(ExportFormat::Parquet)));
        assert_eq!(format_or_none("none"), Ok(None));
        let e = format_or_none("pdf").unwrap_err();
        assert!(
            e.contains("\"pdf\"") && e.contains("warp-csv") && e.contains("none"),
            "{e}"
        );
    }
}
