//! The GPU check: one budgeted plan that validates warpscope on a GPU machine (or runs the same
//! plan on the emulator) — device, corpus kernels, probes on silicon, the emulator's calibration
//! beside the device, the volume-rendering study, the exports, unmodified programs under
//! `warpscope run` — writing `gpu-results.json` and
//! `gpu-report.md` after every step.
//!
//! Why a library: the plan is execution logic (devices, launches, the study, the report), which
//! the `warpscope gpu-check` command only configures and prints. The plan reports what it does
//! through a callback ([`Progress`]) and prints nothing itself; at the end of the budget it says
//! so ([`Progress::Deadline`]) and leaves ending the process to the caller.
//!
//! Every step runs the same code on both backends ([`CheckBackend`]); only the sizes of the
//! study differ (the paper's geometry on a GPU, the quick one on the emulator).
//!
//! Main items: [`run`] with its [`CheckConfig`], [`Finished`] and [`GpuResults`] (the JSON file's
//! one definition), [`CheckError`]; [`micro`] and [`corpus`], the microbenchmarks and the corpus
//! on any device, which the calibration suite also runs on the emulator.
//!
//! ```no_run
//! use check::{CheckBackend, CheckConfig, Progress};
//! let cfg = CheckConfig {
//!     out: "gpu-check-out".into(),
//!     backend: CheckBackend::Emu,
//!     budget_minutes: 8.0,
//!     preset: None,
//!     program: std::env::current_exe().unwrap(),
//! };
//! let done = check::run(&cfg, &|p| {
//!     if let Progress::Step { number, title, .. } = p {
//!         eprintln!("step {number}: {title}");
//!     }
//! })
//! .unwrap();
//! assert!(done.results.all_passed());
//! ```

mod context;
pub mod corpus;
mod error;
pub mod micro;
mod plan;
mod programs;
mod report;
mod results;
mod steps;
mod verdict;

pub use corpus::CorpusRow;
pub use error::{CheckError, MicroFailure};
pub use micro::{MicroCase, MicroRow};
pub use plan::{CheckBackend, CheckConfig, Finished, Progress, run};
pub use programs::{ProgramRow, ProgramsStep};
pub use results::{
    CalibrationRow, DeviceStep, ExportStep, FormatCheck, ProbesStep, StepData, StudyStep, Verdict,
};
pub use results::{GpuResults, REPORT_MD, RESULTS_JSON, StepResult, StepStatus};
