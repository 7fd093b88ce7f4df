//! One sweep's analysis: reading the sweep folder (`runs.rs`), the per-run statistics
//! (`runstats.rs`) and hotspots (`hotspots.rs`), the orchestration and its tables
//! (`analyze.rs`), the findings (`findings.rs`: the report's sentences; `paper.rs`: the paper
//! side by side; `perturbation.rs`: what measuring changed), and the report of it all
//! (`report.rs`). `model.rs` holds what they share. `one_run.rs` gives a single launch's trace
//! the same answer, for `warpscope launch`.

pub(crate) mod analyze;
mod findings;
pub(crate) mod hotspots;
pub(crate) mod model;
pub(crate) mod one_run;
pub(crate) mod paper;
pub(crate) mod perturbation;
pub(crate) mod report;
pub(crate) mod runs;
pub(crate) mod runstats;

pub(crate) use runs::SweepRow;
