//! The data model every other warpscope crate speaks: what was launched, what each warp recorded,
//! and what a run measured.
//!
//! Why a crate of its own: the CUDA device, the emulator, the exporters and the analysis all meet
//! here, and none of them may depend on another (see docs/ARCHITECTURE.md). Everything is plain data with
//! serde derives; the only behaviour is the on-disk trace store ([`TraceWriter`] /
//! [`TraceReader`]), which lets exporters stream 10⁸ records without holding them in memory.
//!
//! Main types: [`LaunchInfo`] (kernel, grid, block, probe mode, sites, clock rate), [`WarpTrace`]
//! (one warp's kernel begin/end, SM, dropped count and its [`Record`]s or [`SiteSummary`]s),
//! [`RunMetrics`] (the `run.json` of a run).
//!
//! ```
//! use trace::{Cycles, Dim3, LaunchInfo, ProbeMode, Record, RecordKind, Region, SiteInfo, SmId, WarpTrace};
//! let launch = LaunchInfo::new("k", Dim3::new(1, 1, 1), Dim3::new(32, 1, 1))
//!     .with_probe(ProbeMode::Fence, RecordKind::Trace)
//!     .with_sites(vec![SiteInfo::new(0, "p[i]", Region::Global)]);
//! let mut w = WarpTrace::new([0, 0, 0], 0, 0, SmId(3));
//! w.records.push(Record { site: 0, seq: 0, start: Cycles(100), end: Cycles(540) });
//! assert_eq!(w.records[0].duration(), Cycles(440));
//! assert_eq!(launch.warps_per_block(), 1);
//! ```

mod atomic;
mod counters;
mod error;
mod model;
mod npy;
mod program;
mod run;
mod store;
mod sweep;
mod tables;
mod truth;
mod units;

pub use atomic::{
    check_output, check_output_against, temp_path, write_atomic_path, write_atomic_with,
    write_bytes_atomic,
};
pub use counters::{CacheCounters, EmuCounters, HardwareCounters, MemCounters};
pub use error::{TraceError, error_chain};
pub use model::{
    Dim3, LaunchInfo, ProbeMode, Record, RecordKind, Region, SiteInfo, SiteSummary, Trace,
    WarpTrace,
};
pub use npy::{parse_npy, read_npy, write_npy};
pub use program::{
    COUNTS_FILE, INDEX_FILE, LAUNCHES_FILE, LaunchCounts, LaunchRecord, Outcome, ProgramIndex,
    read_launch_records,
};
pub use run::{
    AppFacts, BareRun, LaunchFacts, ProbeFacts, RUN_FILE_NAME, RUN_FORMAT_VERSION, ReferenceDiff,
    RunMetrics, StudyFacts, ThreadSeconds, overhead_ratio, write_json_atomic,
};
pub use store::{TRACE_FILE_NAME, TRACE_FORMAT_VERSION, TraceReader, TraceWriter};
pub use sweep::{SWEEP_CSV, SweepRow};
pub use tables::RECORD_COLUMNS;
pub use truth::{ProbeTruth, SiteTruth, TruthStats};
pub use units::{Cycles, SmId};
