//! `warpscope export`: a run's `trace.wst` as CSV, per-warp CSV, CLOG2 (Jumpshot), Chrome trace
//! JSON (Perfetto) or Parquet, written atomically.

use anyhow::{Context, Result};
use clap::Args;
use export::{ExportOptions, Format, TimelineMapping};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use trace::{RunMetrics, TRACE_FILE_NAME, TraceReader};

/// A log format: one of the export crate's streaming formats, or Parquet (its `parquet` feature).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Log(Format),
    Parquet,
}

impl ExportFormat {
    fn file_name(self) -> &'static str {
        match self {
            ExportFormat::Log(f) => f.default_file_name(),
            ExportFormat::Parquet => "records.parquet",
        }
    }
}

impl FromStr for ExportFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "parquet" {
            return Ok(ExportFormat::Parquet);
        }
        s.parse::<Format>()
            .map(ExportFormat::Log)
            .map_err(|e| format!("{e} (or parquet)"))
    }
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A run folder (with trace.wst), as render, sweep and launch write.
    #[arg(long = "in")]
    pub input: PathBuf,
    /// csv, warp-csv, clog2, chrome or parquet.
    #[arg(long)]
    pub format: ExportFormat,
    /// Output file (default: RUNDIR/<records.csv | warps.csv | trace.clog2 | trace.json | records.parquet>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// CLOG2/Chrome timelines: sm-slot (rank = SM, thread = warp slot) or block-warp.
    #[arg(long, default_value = "sm-slot")]
    pub mapping: String,
}

fn mapping(s: &str) -> Result<TimelineMapping> {
    match s {
        "sm-slot" => Ok(TimelineMapping::SmSlot),
        "block-warp" => Ok(TimelineMapping::BlockWarp),
        _ => anyhow::bail!("--mapping {s:?}: expected sm-slot or block-warp"),
    }
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
    // Never over an input: the trace itself, the run.json read beside it, or a link to either.
    let run_json = reader.path().with_file_name("run.json");
    trace::check_output_against(out, &[reader.path(), &run_json])?;
    match format {
        ExportFormat::Log(f) => {
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
        ExportFormat::Parquet => {
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
    let opts = ExportOptions::default().with_mapping(mapping(&args.mapping)?);
    write(&reader, args.format, &out, &opts)
        .with_context(|| format!("exporting {}", args.input.display()))?;
    eprintln!("warpscope: wrote {}", out.display());
    Ok(())
}

/// Writes each format into the run folder under its default name (render and sweep's `--formats`).
pub fn export_run(run_dir: &Path, formats: &[ExportFormat]) -> Result<()> {
    if formats.is_empty() {
        return Ok(());
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
    Ok(())
}
