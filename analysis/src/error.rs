use std::path::PathBuf;

/// Everything that can go wrong while analysing a sweep; each variant names the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error(
        "{path}: not a warpscope sweep directory: {reason} (expected sweep.csv and one folder per run, as written by `warpscope sweep`)"
    )]
    NotASweep { path: PathBuf, reason: String },
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Trace(#[from] trace::TraceError),
    #[error("{path}: cannot write CSV")]
    Csv {
        path: PathBuf,
        #[source]
        source: csv::Error,
    },
    #[error("{path}: cannot draw the figure: {reason}")]
    Plot { path: PathBuf, reason: String },
    #[error("{origin}: {message}")]
    Toml { origin: String, message: String },
    #[error("{origin}: {field}: {message}")]
    Invalid {
        origin: String,
        field: String,
        message: String,
    },
    #[error("{path}: no run of the sweep could be analysed: {reason}")]
    NoRuns { path: PathBuf, reason: String },
}

impl AnalysisError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        AnalysisError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn csv(path: impl Into<PathBuf>, source: csv::Error) -> Self {
        AnalysisError::Csv {
            path: path.into(),
            source,
        }
    }
}
