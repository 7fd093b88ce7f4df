use std::path::PathBuf;

/// What can go wrong in profiling a program: a configuration that does not hold, a kernel whose
/// PTX or parameters cannot be read, a file that cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Ptx(String),
    #[error("{0}")]
    Params(String),
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Trace(#[from] trace::TraceError),
}
