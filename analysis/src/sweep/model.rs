//! What the analysis of one sweep holds between reading the runs and writing the report: the
//! analysed runs, the correlations and the tables. Its own file so that the orchestration
//! (`analyze.rs`), the report writer (`report.rs`) and the findings (`paper.rs`,
//! `perturbation.rs`) all read it without importing each other.

use crate::figures::Drawn;
use crate::fmt::{pretty_shape, pretty_view};
use crate::sweep::runs::{RunFiles, Skipped};
use crate::sweep::runstats::{Breakdown, RunStats};
use crate::table::Table;
use std::path::PathBuf;

/// One analysed run.
pub(crate) struct Run {
    pub files: RunFiles,
    pub stats: RunStats,
    pub bd: Breakdown,
}

impl Run {
    pub fn label(&self) -> String {
        format!(
            "{} at {}, {}",
            pretty_shape(&self.files.row.shape),
            pretty_view(&self.files.row.view),
            self.files.row.mode
        )
    }
}

/// One correlation (a `correlation.csv` row) with the points it was computed from.
pub(crate) struct Corr {
    pub backend: String,
    pub preset: String,
    pub view: String,
    pub mode: String,
    pub y: &'static str,
    pub pearson: Option<f64>,
    pub spearman: Option<f64>,
    /// Indices into the runs used.
    pub used: Vec<usize>,
    pub excluded: Vec<String>,
    /// How many of `excluded` lack the y value itself (not the access records).
    pub missing_y: usize,
}

/// Everything the report needs.
pub(crate) struct Analysis {
    pub sweep_dir: PathBuf,
    pub runs: Vec<Run>,
    pub skipped: Vec<Skipped>,
    pub site_ids: Vec<u16>,
    pub breakdown: Table,
    pub correlation: Table,
    pub corrs: Vec<Corr>,
    pub hot: Table,
    pub verdict: Vec<String>,
    pub findings: Vec<String>,
    pub notes: Vec<String>,
    pub figures: Vec<Drawn>,
    pub views: Vec<String>,
    /// Roofline and throughput-bound section (`roofline/report.rs`).
    pub roofline: crate::report::Section,
    /// Working-set and regression sections (`reuse/report.rs`).
    pub reuse_regress: crate::report::Section,
    /// What measuring changed (perturbation.rs).
    pub perturbation: crate::sweep::perturbation::Perturbation,
}

/// Below this |r| a correlation "hardly correlates" (findings and the paper side-by-side).
pub(crate) const WEAK_CORRELATION: f64 = 0.3;
