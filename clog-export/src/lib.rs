//! Exporters (and readers, for tests) of warpscope traces: CSV for spreadsheets, CLOG2 for MPE's
//! Jumpshot, Chrome Trace Event JSON for Perfetto.
//!
//! placeholder docs
mod clog2;
mod clog2_write;
mod error;
mod options;
mod source;
mod timeline;

pub use clog2::{
    CLOG2_VERSION, Clog2Log, Clog2Reader, CommEntry, Preamble, RecBody, RecHeader, Uuid, rectype,
};
pub use clog2_write::{ACCESS_FORMAT, Clog2Access, DROPPED_ETYPE, LIFETIME_FORMAT, write_clog2};
pub use error::ExportError;
pub use options::{
    DEFAULT_CLOG2_BLOCK_BYTES, ExportOptions, ExportSummary, Format, TimelineMapping,
};
pub use source::{RecordStream, TraceSource};
