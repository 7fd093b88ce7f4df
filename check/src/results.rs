//! `gpu-results.json`: the plan's results, one typed record per step, from which the report is
//! rendered alone (so the two files never disagree).

use crate::steps::StepData;
use serde::Serialize;

/// The file names the plan writes into its output folder.
pub const RESULTS_JSON: &str = "gpu-results.json";
pub const REPORT_MD: &str = "gpu-report.md";

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    NotStarted,
    Running,
    Done,
    Failed,
    /// Stopped by the budget (its partial results, if any, are kept).
    CutOff,
}

impl StepStatus {
    pub fn word(self) -> &'static str {
        match self {
            StepStatus::NotStarted => "not started",
            StepStatus::Running => "running",
            StepStatus::Done => "done",
            StepStatus::Failed => "FAILED",
            StepStatus::CutOff => "CUT OFF by the budget",
        }
    }
}

/// One step's record in `gpu-results.json`.
#[derive(Debug, Clone, Serialize)]
pub struct StepResult {
    pub id: u32,
    pub title: String,
    pub status: StepStatus,
    pub seconds: f64,
    /// Why it failed or what it left out.
    pub notes: Vec<String>,
    pub data: Option<StepData>,
}

/// `gpu-results.json`: the whole plan's results (the report is rendered from this alone).
#[derive(Debug, Clone, Serialize)]
pub struct GpuResults {
    pub warpscope_version: String,
    pub nvcc_version: String,
    pub backend: String,
    /// The emulator preset the calibration compares against (and the emulator backend runs).
    pub preset: String,
    pub preset_note: String,
    pub budget_minutes: f64,
    pub host: String,
    /// Seconds since the Unix epoch when the plan started.
    pub started_unix: u64,
    pub steps: Vec<StepResult>,
}

impl GpuResults {
    /// Whether every step finished and passed its checks.
    pub fn all_passed(&self) -> bool {
        self.steps
            .iter()
            .all(|s| s.status == StepStatus::Done && s.data.as_ref().is_none_or(|d| d.passed()))
    }
}
