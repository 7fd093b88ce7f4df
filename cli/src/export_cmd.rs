//! `warpscope export`: a run's `trace.wst` as CSV, per-warp CSV, CLOG2 (Jumpshot), Chrome trace
//! JSON (Perfetto) or Parquet, written atomically.

use anyhow::{Context, Result};
use clap::Args;
use clog_export::{ExportOptions, Format, TimelineMapping};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use trace::{TRACE_FILE_NAME, TraceReader};

/// A log format: one of clog-export's, or Parquet (written by the analysis crate, which owns polars).
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
    Ok(TraceReader::open(&path)?)
}

fn write(
    reader: &TraceReader,
    format: ExportFormat,
    out: &Path,
    opts: &ExportOptions,
) -> Result<()> {
    match format {
        ExportFormat::Log(f) => {
            let s = clog_export::export(reader, f, out, opts)?;
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
            analysis::write_parquet(reader, out)?;
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
