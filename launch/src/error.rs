//! The one error type of the launch library, and the small trait that adds what was being done to
//! a cause.
//!
//! Why a `Context` variant: a spec's mistakes are found deep inside the reading of one field
//! (`arg[2] ("n").value: 300 does not fit u8`), and the field's name is known only above the
//! place that finds the fault. The variant keeps the cause as the error's source, so each cause
//! is said once and a reader of the chain sees both.

use std::path::PathBuf;

/// What can go wrong between reading a spec and writing a run's files.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// A spec, an argument or a source that does not hold; the message names the file and field.
    #[error("{0}")]
    Invalid(String),
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("launch spec {path}")]
    Toml {
        path: PathBuf,
        #[source]
        source: toml::de::Error,
    },
    #[error(transparent)]
    Trace(#[from] trace::TraceError),
    #[error(transparent)]
    Kernels(#[from] kernels::KernelsError),
    #[error(transparent)]
    Device(#[from] device::DeviceError),
    #[error(transparent)]
    Instrument(#[from] instrument::InstrumentError),
    #[error(transparent)]
    Rewrite(#[from] instrument::rewrite::RewriteError),
    #[error(transparent)]
    Emulator(#[from] emulator::EmuError),
    /// What was being done when `source` went wrong.
    #[error("{what}")]
    Context {
        what: String,
        #[source]
        source: Box<LaunchError>,
    },
}

pub type Result<T, E = LaunchError> = std::result::Result<T, E>;

/// `bail!`-like early return with a [`LaunchError::Invalid`] message.
macro_rules! invalid {
    ($($arg:tt)*) => {
        return Err($crate::LaunchError::Invalid(format!($($arg)*)))
    };
}
pub(crate) use invalid;

/// Adds what was being done to an error, or turns a missing value into an error.
pub(crate) trait Context<T> {
    fn context(self, what: impl Into<String>) -> Result<T>;
    fn with_context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T>;
}

impl<T, E: Into<LaunchError>> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl Into<String>) -> Result<T> {
        self.with_context(|| what)
    }

    fn with_context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| LaunchError::Context {
            what: what().into(),
            source: Box::new(e.into()),
        })
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, what: impl Into<String>) -> Result<T> {
        self.with_context(|| what)
    }

    fn with_context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.ok_or_else(|| LaunchError::Invalid(what().into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_keeps_the_cause_as_the_source() {
        let e: Result<()> = Err(LaunchError::Invalid("300 does not fit u8".into()));
        let e = e.context("arg[0] (\"x\").value").unwrap_err();
        assert_eq!(e.to_string(), "arg[0] (\"x\").value");
        assert_eq!(
            trace::error_chain(&e),
            "arg[0] (\"x\").value: 300 does not fit u8"
        );
        let none: Option<u32> = None;
        assert_eq!(
            none.context("no source").unwrap_err().to_string(),
            "no source"
        );
    }
}
