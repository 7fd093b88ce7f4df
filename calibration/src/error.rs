//! The calibration suite's one error type.

use std::path::PathBuf;

/// What can stop reading the table or computing the model's values. A variant with a `source`
/// leaves the cause out of its own message, so each cause is said once.
#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    #[error("reading {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a calibration table")]
    Parse {
        path: PathBuf,
        #[source]
        source: Box<toml::de::Error>,
    },
    #[error("{path}, row {id:?}: {reason}")]
    Row {
        path: PathBuf,
        id: String,
        reason: String,
    },
    #[error("writing the calibration table")]
    Serialize {
        #[source]
        source: Box<toml::ser::Error>,
    },
    #[error("writing the calibration table: its rows as inline tables")]
    Reformat {
        #[source]
        source: Box<toml_edit::TomlError>,
    },
    #[error(transparent)]
    Write(trace::TraceError),
    #[error("reading the trace of {what}")]
    Trace {
        what: String,
        #[source]
        source: trace::TraceError,
    },
    #[error(transparent)]
    Preset(#[from] emulator::ConfigError),
    #[error("compiling {path} for the emulator")]
    Compile {
        path: PathBuf,
        #[source]
        source: kernels::KernelsError,
    },
    #[error("{what}: no entry {entry} in its PTX")]
    NoEntry { what: String, entry: String },
    #[error("{what} on the emulator")]
    Device {
        what: String,
        #[source]
        source: device::DeviceError,
    },
    /// The GPU check's microbenchmarks and corpus, run on the emulator.
    #[error("{what} on the emulator")]
    Check {
        what: String,
        #[source]
        source: Box<check::CheckError>,
    },
    #[error("the study's paper-scale frames on the emulator")]
    Study(#[source] Box<study::StudyError>),
    #[error("{what}: {reason}")]
    Result { what: String, reason: String },
}
