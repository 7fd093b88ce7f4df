//! `gpu-results.json`: the plan's results, one typed record per step, from which the report is
//! rendered alone (so the two files never disagree).

use crate::corpus::CorpusRow;
use crate::micro::{MicroCase, MicroRow};
use crate::programs::{ProgramRow, ProgramsStep};
use device::DeviceProperties;
use serde::Serialize;
use trace::{ProbeMode, SweepRow};

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
    /// Whether the budget cut a step off (while it ran, or before it could start).
    pub fn cut_off(&self) -> bool {
        self.steps.iter().any(|s| s.status == StepStatus::CutOff)
    }

    pub fn all_passed(&self) -> bool {
        self.steps
            .iter()
            .all(|s| s.status == StepStatus::Done && s.data.as_ref().is_none_or(|d| d.passed()))
    }
}

/// One step's results.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum StepData {
    Device(DeviceStep),
    Corpus { rows: Vec<CorpusRow> },
    Probes(ProbesStep),
    Calibration { rows: Vec<CalibrationRow> },
    Study(StudyStep),
    Export(ExportStep),
    Programs(ProgramsStep),
}

impl StepData {
    /// Whether the step's own checks passed (a step without checks passes).
    pub fn passed(&self) -> bool {
        match self {
            StepData::Device(_) | StepData::Calibration { .. } => true,
            StepData::Corpus { rows } => rows
                .iter()
                .all(|r| r.matches_reference && r.matches_emulator != Some(false)),
            StepData::Probes(p) => p.verdicts.iter().all(|v| v.passed),
            StepData::Study(s) => {
                s.rows.iter().all(|r| r.image_matches_bare != Some(false))
                    && (!s.counters_expected || s.rows.iter().all(has_counters))
            }
            StepData::Programs(p) => p.rows.iter().all(ProgramRow::passed),
            StepData::Export(e) => {
                e.records > 0 && e.formats.iter().all(|f| f.read_back == e.records)
            }
        }
    }
}

/// Whether a study row has the texture hit rates of both its builds.
fn has_counters(r: &SweepRow) -> bool {
    r.tex_hit_rate.is_some() && (r.mode == ProbeMode::Off.name() || r.tex_hit_rate_bare.is_some())
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceStep {
    pub properties: DeviceProperties,
    /// `nvidia-smi --query-gpu=…` (driver version, clocks), when it is on the PATH.
    pub nvidia_smi: Option<String>,
    /// Architectures with SASS in the embedded fatbins, and the PTX's.
    pub sass_archs: Vec<u32>,
    pub ptx_arch: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub check: String,
    pub passed: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProbesStep {
    pub rows: Vec<MicroRow>,
    pub verdicts: Vec<Verdict>,
}

/// One line of the calibration table: the device's number beside the emulator preset's.
#[derive(Debug, Clone, Serialize)]
pub struct CalibrationRow {
    pub case: String,
    /// The microbenchmark the row measures (None for a corpus kernel's time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub micro: Option<MicroCase>,
    pub unit: String,
    pub device: f64,
    pub emulator: f64,
    /// emulator ÷ device: above 1 the preset is slower than the silicon.
    pub ratio: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct StudyStep {
    pub scale: String,
    pub geometry: String,
    pub frames: u32,
    pub rows: Vec<SweepRow>,
    /// Whether every run must carry the hardware counters (on a GPU, where the sweep reads them
    /// with Nsight Compute; the emulator's come with every run).
    pub counters_expected: bool,
    /// Why runs have no counters, as the sweep said it.
    pub counters_note: Option<String>,
    /// `warpscope analyze`'s findings on the study (where the memory time goes per mode, what
    /// correlates with frame rate); empty with a note when the analysis failed.
    pub findings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FormatCheck {
    pub format: String,
    pub file: String,
    pub bytes: u64,
    /// Records read back by warpscope's reader of the format.
    pub read_back: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ExportStep {
    pub run: String,
    pub records: u64,
    pub warps: u64,
    pub formats: Vec<FormatCheck>,
}
