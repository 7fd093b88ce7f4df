//! The one error type of this crate: what went wrong with a CUDA tool, and where.

use std::path::PathBuf;

/// Errors from locating or running the CUDA tools (nvcc, cuobjdump, nvdisasm) at run time.
#[derive(Debug, thiserror::Error)]
pub enum KernelsError {
    /// The tool is not installed where we look for it.
    #[error(
        "{tool} not found (looked at $NVCC / $CUDA_HOME/bin / the workspace .cuda folder / PATH); run scripts/setup-cuda"
    )]
    ToolNotFound { tool: &'static str },
    /// Reading or writing a file failed.
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The tool ran and failed.
    #[error("{command} failed ({status}):\n{stderr}")]
    ToolFailed {
        command: String,
        status: String,
        stderr: String,
    },
    /// A mode number outside the header's range.
    #[error("invalid probe mode {mode} (WS_MODE is 0 to 4)")]
    BadConfig { mode: u32 },
}
