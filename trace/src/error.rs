use std::path::PathBuf;

/// Errors of the trace store and run files; each names the file and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path}: not a warpscope trace (bad magic {found:?}); expected a file written by warpscope"
    )]
    BadMagic { path: PathBuf, found: [u8; 8] },
    #[error("{path}: trace store version {found} is not supported (this build reads {supported})")]
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
    #[error("{path}: invalid JSON: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
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
