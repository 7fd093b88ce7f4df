//! Turns a sweep of instrumented runs into the answers the paper draws from its logs: where each
//! warp's time goes (memory vs other work), how memory reference frequency tracks texture-cache
//! hit rate and frame rate across block shapes, how access time is spread over warps, and which
//! sites, warps and blocks are hot spots — as CSV tables, figures (PNG + SVG) and one report.
//!
//! Why a crate of its own: the statistics, polars and plotters stay out of every other crate
//! (DESIGN.md); the analysis sees only the `trace` model, so it works the same on emulator and
//! GPU sweeps.
//!
//! Main items: [`analyze`] (a sweep directory in, `breakdown.csv`, `correlation.csv`,
//! `warps.csv`, `hotspots.csv`, figures, `report.html` and `report.md` out), [`AnalyzeOptions`],
//! [`AnalysisSummary`], [`write_parquet`] (one trace's records as Parquet), [`AnalysisError`],
//! and the statistics in [`stats`].
//!
//! Definitions (per warp): memory time = sum of its record durations; other = (kernel end −
//! kernel begin) − memory time; mean access time = memory time / accesses. Per run: memory
//! reference frequency = 1 / (all memory time / all accesses), in accesses per cycle. The
//! single-warp series (fig. 11) shows, by default, the warp with the highest mean access time
//! among the warps with at least the median number of accesses. Hot spots: see `hotspots.csv`'s
//! columns in the report.
//!
//! ```no_run
//! use analysis::{analyze, AnalyzeOptions};
//! use std::path::Path;
//! let summary = analyze(Path::new("sweep"), Path::new("sweep/analysis"), &AnalyzeOptions::default())?;
//! println!("report: {}", summary.report_html.display());
//! for f in &summary.findings {
//!     println!("- {f}");
//! }
//! # Ok::<(), analysis::AnalysisError>(())
//! ```
//!
//! ```
//! // The statistics are plain functions over slices.
//! let r = analysis::stats::spearman(&[1.0, 2.0, 2.0, 3.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
//! assert!(r > 0.9);
//! ```

mod analyze;
mod error;
mod figures;
mod hotspots;
mod output;
mod parquet;
mod report;
mod runstats;
pub mod stats;
mod sweep;
mod table;

pub use analyze::{AnalysisSummary, AnalyzeOptions, analyze};
pub use error::AnalysisError;
pub use parquet::{BATCH_ROWS, write_parquet};
