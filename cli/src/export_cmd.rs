//! `warpscope export`: a run's `trace.wst` as CSV, per-warp CSV, CLOG2 (Jumpshot), Chrome trace
//! JSON (Perfetto), an OTF2 archive (Vampir) or Parquet, written atomically.

use anyhow::{Context, Result};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};
use export::{ExportOptions, RunFolder, RunLog, TimelineMapping};
use std::path::PathBuf;

/// `--format`'s parser: the export crate's log names, each with what it holds in `--help`.
fn log_parser() -> impl TypedValueParser<Value = RunLog> {
    let values = RunLog::all()
        .into_iter()
        .map(|l| PossibleValue::new(l.name()).help(l.contents()));
    PossibleValuesParser::new(values).try_map(|s| s.parse::<RunLog>())
}

/// One value of `--formats`: a log, or `none` for no log at all.
pub fn format_or_none(s: &str) -> Result<Option<RunLog>, String> {
    if s == "none" {
        return Ok(None);
    }
    s.parse().map(Some).map_err(|e| format!("{e} or none"))
}

/// How warps map onto CLOG2 ranks/threads, Chrome pids/tids and OTF2 location groups/locations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mapping {
    /// One timeline per hardware warp slot, grouped by SM: the warps an SM runs one after
    /// another share a line, as on the hardware.
    SmSlot,
    /// One timeline per warp, grouped by block.
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
    /// A run folder (with trace.wst), as render, sweep, launch and run write.
    #[arg(long = "in", value_name = "RUNDIR")]
    pub input: PathBuf,
    /// The output format.
    #[arg(long, value_parser = log_parser())]
    pub format: RunLog,
    /// Output file, or for otf2 the archive's folder (default: the format's file in RUNDIR:
    /// records.csv, warps.csv, trace.clog2, trace.json, otf2 or records.parquet; Vampir opens
    /// otf2/traces.otf2).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// How warps map onto the timelines of CLOG2, Chrome and OTF2.
    #[arg(long, value_enum, default_value_t = Mapping::SmSlot)]
    pub mapping: Mapping,
}

pub fn run(args: &ExportArgs) -> Result<()> {
    let folder = RunFolder::open(&args.input)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.input.join(args.format.default_file_name()));
    let opts = ExportOptions::default().with_mapping(args.mapping.into());
    let s = folder
        .export(args.format, &out, &opts)
        .with_context(|| format!("exporting {}", args.input.display()))?;
    if s.dropped > 0 || s.wrapped > 0 {
        eprintln!(
            "warpscope: {}: {} records dropped by full logs and {} with wrapped clocks are marked in the output",
            out.display(),
            s.dropped,
            s.wrapped
        );
    }
    eprintln!("warpscope: wrote {}", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--formats` takes the export crate's names, and `none` means no log.
    #[test]
    fn formats_are_the_export_crates_logs_or_none() {
        for l in RunLog::all() {
            assert_eq!(format_or_none(l.name()), Ok(Some(l)));
        }
        assert_eq!(format_or_none("none"), Ok(None));
        let e = format_or_none("pdf").unwrap_err();
        assert!(
            e.contains("\"pdf\"") && e.contains("parquet") && e.contains("none"),
            "{e}"
        );
    }
}
