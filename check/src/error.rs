//! The one error type of the check: what stopped the plan, or one of its steps, and where.

use std::fmt;
use std::path::PathBuf;

/// What can go wrong in the check. A step's error does not stop the plan: it becomes a note of
/// that step in `gpu-results.json` (its chain of causes, [`trace::error_chain`]); the other
/// variants come from setting the plan up or writing its files. A variant with a `source` leaves
/// the cause out of its own message, so each cause is said once.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// A budget outside (0, 60] minutes.
    #[error("--budget-minutes {minutes}: give a number of minutes in (0, 60]")]
    Budget { minutes: f64 },
    #[error("cannot create {path}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("reading {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Preset(#[from] emulator::ConfigError),
    #[error("opening the GPU (--backend gpu)")]
    OpenGpu(#[source] device::DeviceError),
    #[error(transparent)]
    Device(#[from] device::DeviceError),
    #[error("launching {entry}")]
    Launch {
        entry: String,
        #[source]
        source: device::DeviceError,
    },
    #[error(transparent)]
    Instrument(#[from] instrument::InstrumentError),
    /// The study's errors are large; boxed, they keep every result of the check small.
    #[error(transparent)]
    Study(Box<study::StudyError>),
    #[error("sweep shard {shard}")]
    Shard {
        shard: study::Shard,
        #[source]
        source: Box<study::StudyError>,
    },
    #[error(transparent)]
    Trace(#[from] trace::TraceError),
    /// Building or running one of the programs of the `warpscope run` step.
    #[error("{what}: {reason}")]
    Program { what: String, reason: String },
    #[error("exporting {path}")]
    Export {
        path: PathBuf,
        #[source]
        source: export::ExportError,
    },
    #[error("reading back {path}")]
    ReadBack {
        path: PathBuf,
        #[source]
        source: export::ExportError,
    },
    /// A kernel file the binary was built without (the `kernels` crate embeds them).
    #[error("{what} is not embedded")]
    NotEmbedded { what: String },
    #[error("no microbenchmark build for mode {mode}")]
    NoMicroBuild { mode: &'static str },
    #[error("{kernel}: the log holds no warp")]
    NoWarp { kernel: &'static str },
    #[error("{kernel}: {records} records for {expected} probed accesses")]
    Records {
        kernel: &'static str,
        records: usize,
        expected: u32,
    },
    /// Microbenchmark cases of the probes step that failed (the step keeps none of its rows).
    #[error("{}", failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Probes { failures: Vec<MicroFailure> },
    #[error("{path}: JSON")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A thread panicked while holding the results: they can no longer be trusted.
    #[error("the plan's results were poisoned by a panic")]
    Poisoned,
}

impl From<study::StudyError> for CheckError {
    fn from(e: study::StudyError) -> Self {
        CheckError::Study(Box::new(e))
    }
}

/// One microbenchmark case that failed, with the chain of causes of its error.
#[derive(Debug)]
pub struct MicroFailure {
    pub case: &'static str,
    pub mode: &'static str,
    pub error: Box<CheckError>,
}

impl fmt::Display for MicroFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.case,
            self.mode,
            trace::error_chain(self.error.as_ref())
        )
    }
}
