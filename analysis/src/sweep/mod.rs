//! One sweep's analysis, `warpscope analyze`: reading the run folders (`runs.rs`), the per-run
//! statistics (`runstats.rs`) and hot spots (`hotspots.rs`), the orchestration with its tables
//! and figures (`analyze.rs`), the findings (`findings.rs`: the report's sentences; `paper.rs`:
//! the paper side by side; `perturbation.rs`: what measuring changed), and the report's assembly
//! (`report.rs`). `model.rs` holds what they share. `one_run.rs` gives a single launch's trace the
//! same answer, for `warpscope launch`; `program.rs` a profiled program's launches theirs, for
//! `warpscope run`.

pub(crate) mod analyze;
mod findings;
mod hotspots;
mod model;
pub(crate) mod one_run;
mod paper;
mod perturbation;
pub(crate) mod program;
mod report;
mod runs;
mod runstats;
