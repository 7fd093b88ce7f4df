use std::path::PathBuf;

/// Everything the study can refuse or fail at. Each variant carries what the user needs to act on
/// it: the file, the sizes, the value that did not parse.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// A command-line style value (shape, view, dims, dtype, volume kind) that does not parse.
    #[error("invalid {what} {value:?}: {reason}")]
    Parse {
        what: &'static str,
        value: String,
        reason: String,
    },
    /// A raw volume file whose size is not dims × element size.
    #[error(
        "{path}: the file has {actual_bytes} bytes but dims {dims} of {dtype} need {expected_bytes} bytes"
    )]
    RawSize {
        path: PathBuf,
        dims: String,
        dtype: &'static str,
        expected_bytes: u64,
        actual_bytes: u64,
    },
    /// A volume or image that does not fit in device or host memory, refused before allocating.
    #[error(
        "{what} does not fit in {memory} memory: {needed_bytes} bytes needed, {available_bytes} available"
    )]
    TooLarge {
        what: String,
        memory: &'static str,
        needed_bytes: u64,
        available_bytes: u64,
    },
    /// A configuration value out of its valid range.
    #[error("invalid configuration: {field} = {value}: {reason}")]
    Config {
        field: &'static str,
        value: String,
        reason: String,
    },
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: PNG encoding failed: {reason}")]
    Png { path: PathBuf, reason: String },
    #[error("{path}: CSV: {reason}")]
    Csv { path: PathBuf, reason: String },
    /// Nsight Compute output that is not the `--csv` long format.
    #[error("ncu CSV output: {0}")]
    Ncu(String),
    /// The driver keeps the performance counters from this user.
    #[error(
        "the GPU's performance counters are open to administrators only (ERR_NVGPUCTRPERM): run as root, or allow every user with the nvidia module option NVreg_RestrictProfilingToAdminUsers=0"
    )]
    NcuPermission,
    /// Nsight Compute neither finished nor failed within its limit; it and the program it
    /// profiled were killed.
    #[error(
        "{} did not finish within {} s and was stopped, with the program it profiled",
        ncu.display(),
        limit.as_secs_f64()
    )]
    NcuTimedOut {
        ncu: PathBuf,
        limit: std::time::Duration,
    },
    #[error("run {run}")]
    Instrument {
        run: String,
        #[source]
        source: instrument::InstrumentError,
    },
    #[error("run {run}")]
    Device {
        run: String,
        #[source]
        source: device::DeviceError,
    },
    #[error(transparent)]
    Trace(#[from] trace::TraceError),
    /// A roofline microbenchmark failed on the emulator.
    #[error("roofline microbenchmark {bench}: {reason}")]
    Bench { bench: String, reason: String },
    /// The kernels crate has no build of the volume renderer for this probe mode and record kind.
    #[error("no build of kernel source {source_name:?} for probe mode {mode}")]
    NoBuild {
        source_name: &'static str,
        mode: String,
    },
    /// A file of ours (`plan.json`, `complete.json`) that does not parse.
    #[error("{path}: {reason}")]
    BadFile { path: PathBuf, reason: String },
    /// Another process holds the sweep folder's lock.
    #[error(
        "{path} is held by {holder}: one writer per sweep folder; wait for it to finish, or use \
         another --out folder (shards of one sweep each write their own folder, then `warpscope merge`)"
    )]
    Locked { path: PathBuf, holder: String },
    /// A sweep folder (or a shard's output) made with other parameters than the ones given.
    #[error(
        "{dir} holds a sweep with other parameters ({}); {advice}",
        differences.join("; ")
    )]
    PlanMismatch {
        dir: PathBuf,
        /// `field: there -> here`, one per differing parameter.
        differences: Vec<String>,
        advice: String,
    },
    /// Runs of the plan that no shard folder holds complete.
    #[error(
        "{missing} of {total} runs are missing or incomplete in every shard folder: {}{}; \
         rerun the shards that hold them (a sweep resumes), then merge again",
        runs.join(", "),
        if *missing > runs.len() { ", …" } else { "" }
    )]
    MergeMissing {
        missing: usize,
        total: usize,
        /// The first of them, `NAME (#index: why)`.
        runs: Vec<String>,
    },
    /// The rendered image differs between probe modes: the probes changed the output (C3).
    #[error("run {run}: the image of mode {mode} differs from the bare build's in {pixels} pixels")]
    ImageChanged {
        run: String,
        mode: String,
        pixels: usize,
    },
}

impl StudyError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StudyError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn parse(what: &'static str, value: &str, reason: impl Into<String>) -> Self {
        StudyError::Parse {
            what,
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}
