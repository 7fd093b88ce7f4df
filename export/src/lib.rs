//! Exporters of warpscope traces — CSV for spreadsheets and dataframes, CLOG2 for MPE's Jumpshot
//! timeline viewer (the paper's choice), Chrome Trace Event JSON for Perfetto, OTF2 archives for
//! Vampir and the Score-P tools — and readers of each but OTF2, so tests can prove that no record
//! is lost and that the genuine MPE files decode. OTF2 is written through its reference library,
//! loaded at run time (nothing of it is needed to build); its own readers, `otf2-print` and the
//! `otf2` Python module, read archives back in the tests.
//!
//! Why streaming: a trace can hold 10⁸ records. Every writer reads warps one at a time from a
//! [`TraceSource`] (the on-disk [`trace::TraceReader`] or an in-memory [`trace::Trace`]) and, but
//! OTF2's (whose library writes its own files, one location at a time), is generic over
//! [`std::io::Write`]; CLOG2, which needs all events in time order, merges per-warp cursors with
//! a heap and holds one output block. [`export`] writes a file (or OTF2's folder) atomically
//! (temp name, then rename), so an interrupted export leaves no truncated file.
//!
//! Main items: [`export`] with [`Format`] and [`ExportOptions`] (timeline mapping, CLOG2 block
//! size); the writers [`write_records_csv`], [`write_warps_csv`], [`write_clog2`],
//! [`write_chrome`], [`write_otf2`] (a folder, written atomically by [`write_atomic_dir`]); the
//! readers [`read_records_csv`], [`read_warps_csv`], [`Clog2Log`] /
//! [`Clog2Reader`], [`read_chrome`]; [`ExportSummary`] (counts, including the dropped and
//! wrapped records each format marks). Byte layouts and column meanings are in the docs of each
//! writer function and of [`Clog2Reader`].
//!
//! ```
//! use export::{write_clog2, Clog2Log, ExportOptions};
//! use trace::{Cycles, Dim3, LaunchInfo, Record, SmId, Trace, WarpTrace};
//! let mut w = WarpTrace::new([0, 0, 0], 0, 0, SmId(0));
//! w.end = Cycles(1000);
//! w.records.push(Record { site: 0, seq: 0, start: Cycles(100), end: Cycles(540) });
//! let t = Trace { launch: LaunchInfo::new("k", Dim3::new(1, 1, 1), Dim3::new(32, 1, 1)), warps: vec![w] };
//! let mut file = std::io::Cursor::new(Vec::new());
//! let summary = write_clog2(&t, &mut file, &ExportOptions::default()).unwrap();
//! assert_eq!(summary.records, 1);
//! let log = Clog2Log::read(&file.get_ref()[..]).unwrap();
//! assert_eq!(log.accesses()[0].record, t.warps[0].records[0]);
//! ```

mod error;
mod export;
mod formats;
mod options;
mod source;
#[cfg(feature = "test-support")]
mod synthetic;
mod timeline;

pub use error::ExportError;
pub use export::{
    check_archive_output, check_output, export, temp_path, write_atomic, write_atomic_dir,
};
pub use formats::chrome::{ChromeSlice, ChromeTrace, SliceArgs, read_chrome, write_chrome};
#[cfg(feature = "clog2-read")]
pub use formats::clog2::{CLOG2_VERSION, CommEntry, Preamble, RecBody, RecHeader, Uuid, rectype};
#[cfg(feature = "clog2-read")]
pub use formats::clog2_read::{Clog2Log, Clog2Reader};
#[cfg(feature = "clog2-read")]
pub use formats::clog2_write::Clog2Access;
pub use formats::clog2_write::{ACCESS_FORMAT, DROPPED_ETYPE, LIFETIME_FORMAT, write_clog2};
pub use formats::csv::{
    RecordRow, WarpRow, read_records_csv, read_warps_csv, write_records_csv, write_warps_csv,
};
pub use formats::otf2::{ARCHIVE_NAME, write_otf2};
#[cfg(feature = "parquet")]
pub use formats::parquet::{BATCH_ROWS, write_parquet};
pub use options::{
    DEFAULT_CLOG2_BLOCK_BYTES, ExportOptions, ExportSummary, Format, TimelineMapping,
};
pub use source::{RecordStream, TraceSource};
#[cfg(feature = "test-support")]
pub use synthetic::SyntheticTrace;
