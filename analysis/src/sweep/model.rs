//! What the analysis of one sweep holds between reading the runs and writing the report: the
//! analysed runs, the correlations, the tables and the sections, and the choices every file of
//! the room makes the same way (which mode measures a view, the order values are first seen in).
//! Its own file so that the orchestration (`analyze.rs`), the report's assembly (`report.rs`) and
//! the findings (`findings.rs`, `paper.rs`) all read it without importing each other.

use crate::figures::Drawn;
use crate::fmt::{pretty_shape, pretty_view};
use crate::report::Section;
use crate::sweep::perturbation::Perturbation;
use crate::sweep::runs::{RunFiles, Skipped};
use crate::sweep::runstats::{Breakdown, RunStats};
use crate::table::Table;
use std::collections::BTreeSet;
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
    /// What measuring changed (`perturbation.rs`).
    pub perturbation: Perturbation,
    /// The paper side by side (`paper.rs`).
    pub paper: Section,
    /// The other rooms' sections, in the report's order: roofline and bound, working set,
    /// regression.
    pub companions: Vec<Section>,
}

/// Below this |r| a correlation "hardly correlates" (findings and the paper side-by-side).
pub(crate) const WEAK_CORRELATION: f64 = 0.3;

/// Modes that measure completion, best first; naive last (it measures issue only).
const MODE_PREFERENCE: [&str; 4] = ["auto", "dummy", "fence", "naive"];

/// A mode's place in [`MODE_PREFERENCE`] (unknown modes after all of them).
pub(crate) fn mode_rank(mode: &str) -> usize {
    MODE_PREFERENCE
        .iter()
        .position(|m| *m == mode)
        .unwrap_or(MODE_PREFERENCE.len())
}

/// The measuring mode of a view: the most preferred non-naive mode present.
pub(crate) fn measured_mode(runs: &[Run], view: &str) -> Option<String> {
    runs.iter()
        .filter(|r| r.files.row.view == view && r.files.row.mode != "naive")
        .map(|r| r.files.row.mode.clone())
        .min_by_key(|m| (mode_rank(m), m.clone()))
}

/// Distinct values in order of first appearance.
pub(crate) fn first_seen(it: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    it.filter(|v| seen.insert(v.clone())).collect()
}
