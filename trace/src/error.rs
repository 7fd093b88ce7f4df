use std::path::PathBuf;

/// Errors of the trace store and run files; each names the file and what is wrong with it. A
/// variant with a `source` leaves the cause out of its own message: the reporting point prints
/// the chain (`{:#}` in the binary, [`crate::error_chain`] in a report), so each cause is said once.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path}: not a warpscope trace (bad magic {found:?}); expected a file written by warpscope"
    )]
    BadMagic { path: PathBuf, found: [u8; 8] },
    #[error("{path}: written by an older warpscope (format {found}); re-run the launch")]
    OldFormat { path: PathBuf, found: u32 },
    #[error(
        "{path}: trace format {found} is newer than this build reads ({supported}); update warpscope"
    )]
    Version {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("{path}: truncated or corrupt at byte {offset}: {what}")]
    Corrupt {
        path: PathBuf,
        offset: u64,
        what: String,
    },
    #[error("{path}: invalid JSON")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A `.npy` input that is not what it claims to be.
    #[error("{path}: invalid .npy at byte {offset}: {what}")]
    Npy {
        path: PathBuf,
        offset: u64,
        what: String,
    },
    /// An output path that must not be written: an input, a directory, a device node, a link.
    #[error("{path}: refusing to write here: {reason}")]
    Output { path: PathBuf, reason: String },
    /// A `sweep.csv` line that is not what its columns say (line 1 is the header).
    #[error("{path}: line {line}: {reason}")]
    SweepCsv {
        path: PathBuf,
        line: u64,
        reason: String,
    },
}

impl TraceError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        TraceError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// An error and its causes as one line, `outer: cause: cause`, for reports and logs that are
/// not the binary's reporting point (which prints the same chain with anyhow's `{:#}`).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}
