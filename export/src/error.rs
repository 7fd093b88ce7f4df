//! The crate's one error type: every variant carries the context (file, format, offset, field)
//! needed to act on it without a backtrace.

use std::path::PathBuf;

/// Why an export, or reading one back, failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading the trace store failed (the inner error names the file).
    #[error(transparent)]
    Trace(#[from] trace::TraceError),
    /// A file operation on an output or input path failed.
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Writing to (or reading from) the caller's stream failed.
    #[error("{format} stream")]
    Stream {
        format: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The csv crate failed to write or read a row.
    #[error("CSV")]
    Csv(#[from] csv::Error),
    /// serde_json failed to write or read JSON.
    #[error("Chrome trace JSON")]
    Json(#[from] serde_json::Error),
    /// The launch's clock rate cannot turn cycles into seconds.
    #[error(
        "launch clock_mhz = {clock_mhz} cannot convert cycles to seconds (needs a finite value > 0)"
    )]
    BadClock { clock_mhz: f64 },
    /// An option is out of its valid range.
    #[error("export option {field} = {value}: {reason}")]
    BadOption {
        field: &'static str,
        value: u64,
        reason: &'static str,
    },
    /// A value does not fit the output format's field (e.g. a CLOG2 rank is an i32).
    #[error("{what} = {value} does not fit the {format} field (at most {max})")]
    TooLarge {
        format: &'static str,
        what: &'static str,
        value: u64,
        max: u64,
    },
    /// polars failed to build or write the Parquet file.
    #[cfg(feature = "parquet")]
    #[error("{path}: Parquet")]
    Parquet {
        path: PathBuf,
        #[source]
        source: polars::error::PolarsError,
    },
    /// No OTF2 library loads (OTF2 is loaded at run time, see `formats/otf2/ffi.rs`).
    #[error(
        "OTF2 export needs the OTF2 3 library ({tried}), which does not load here: install it (Debian 12: apt-get install libopen-trace-format2-10) or put Score-P's libotf2.so.10 on LD_LIBRARY_PATH"
    )]
    Otf2Missing {
        tried: String,
        #[source]
        source: Option<libloading::Error>,
    },
    /// The library loaded but lacks a function of the OTF2 3 API.
    #[error("{library} is not OTF2 3: it has no {symbol}")]
    Otf2Symbol {
        library: &'static str,
        symbol: &'static str,
        #[source]
        source: libloading::Error,
    },
    /// An OTF2 call failed while writing the archive at `path`.
    #[error("{path}: OTF2 {call} failed: {code} ({description})")]
    Otf2 {
        path: PathBuf,
        call: &'static str,
        /// OTF2's name of the error code (`OTF2_ERROR_…`).
        code: String,
        description: String,
    },
    /// An output folder that must not be replaced.
    #[error("{path}: refusing to write the OTF2 archive there: {reason}")]
    ArchiveOutput { path: PathBuf, reason: String },
    /// An input file is not valid in the format it claims to be.
    #[error("{format} input at {location}: {what}")]
    Parse {
        format: &'static str,
        /// Byte offset, line number or event index, spelled out (e.g. "byte 1056").
        location: String,
        what: String,
    },
}

impl ExportError {
    pub(crate) fn stream(format: &'static str) -> impl Fn(std::io::Error) -> ExportError {
        move |source| ExportError::Stream { format, source }
    }

    pub(crate) fn parse(
        format: &'static str,
        location: impl Into<String>,
        what: impl Into<String>,
    ) -> ExportError {
        ExportError::Parse {
            format,
            location: location.into(),
            what: what.into(),
        }
    }
}
