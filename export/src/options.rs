//! Export configuration ([`ExportOptions`], built once and then read-only), the output
//! [`Format`]s, and what an export reports back ([`ExportSummary`]).

use crate::error::ExportError;
use std::fmt;
use std::str::FromStr;
use trace::{LaunchInfo, WarpTrace};

/// An output format of [`crate::export`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// One CSV row per record ([`crate::write_records_csv`]).
    Csv,
    /// One CSV row per warp with access-time statistics ([`crate::write_warps_csv`]).
    WarpCsv,
    /// MPE's CLOG2 for Jumpshot ([`crate::write_clog2`]).
    Clog2,
    /// Chrome Trace Event JSON for Perfetto ([`crate::write_chrome`]).
    Chrome,
    /// An OTF2 archive (a folder) for Vampir and the Score-P tools ([`crate::write_otf2`]).
    Otf2,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::Csv,
        Format::WarpCsv,
        Format::Clog2,
        Format::Chrome,
        Format::Otf2,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::WarpCsv => "warp-csv",
            Format::Clog2 => "clog2",
            Format::Chrome => "chrome",
            Format::Otf2 => "otf2",
        }
    }

    /// The usual name of this format's output in a run folder: a file, or for OTF2 the
    /// archive's folder (Vampir opens its `traces.otf2`).
    pub fn default_file_name(self) -> &'static str {
        match self {
            Format::Csv => "records.csv",
            Format::WarpCsv => "warps.csv",
            Format::Clog2 => "trace.clog2",
            Format::Chrome => "trace.json",
            Format::Otf2 => "otf2",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!("unknown format {s:?}; expected csv, warp-csv, clog2, chrome or otf2")
            })
    }
}

/// How warps map onto timelines (CLOG2 rank/thread, Chrome pid/tid, OTF2 location group and
/// location).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TimelineMapping {
    /// rank = SM (`%smid`), thread = hardware warp slot (`%warpid`): one line per slot, so the
    /// waves of warps an SM runs one after another share a line, as on the hardware. Default.
    #[default]
    SmSlot,
    /// rank = linear block index (x + y·gx + z·gx·gy), thread = warp within the block: one line
    /// per warp, grouped by block.
    BlockWarp,
}

impl TimelineMapping {
    /// `(rank, thread)` of a warp.
    pub fn line(self, launch: &LaunchInfo, w: &WarpTrace) -> (u64, u64) {
        match self {
            TimelineMapping::SmSlot => (w.sm.0 as u64, w.hw_warp as u64),
            TimelineMapping::BlockWarp => {
                let g = launch.grid;
                let [x, y, z] = w.block.map(u64::from);
                (
                    x + y * g.x as u64 + z * g.x as u64 * g.y as u64,
                    w.warp as u64,
                )
            }
        }
    }

    /// What a rank is, for timeline names ("SM 3").
    pub fn rank_word(self) -> &'static str {
        match self {
            TimelineMapping::SmSlot => "SM",
            TimelineMapping::BlockWarp => "block",
        }
    }

    /// What a thread is, for timeline names ("warp slot 5").
    pub fn thread_word(self) -> &'static str {
        match self {
            TimelineMapping::SmSlot => "warp slot",
            TimelineMapping::BlockWarp => "warp",
        }
    }
}

/// Options of every writer. Build with `ExportOptions::default().with_…(…)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportOptions {
    mapping: TimelineMapping,
    block_bytes: u32,
    cursor_buffer_bytes: usize,
    max_open_warp_files: usize,
}

/// MPE's default `CLOG_BLOCK_SIZE`.
pub const DEFAULT_CLOG2_BLOCK_BYTES: u32 = 65536;

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            mapping: TimelineMapping::SmSlot,
            block_bytes: DEFAULT_CLOG2_BLOCK_BYTES,
            cursor_buffer_bytes: 4096,
            max_open_warp_files: 256,
        }
    }
}

impl ExportOptions {
    pub fn with_mapping(mut self, mapping: TimelineMapping) -> Self {
        self.mapping = mapping;
        self
    }

    /// CLOG2 block size in bytes: a multiple of 8, at least 160 (largest record 136 + its
    /// 24-byte terminator), at most 1 GiB.
    pub fn with_clog2_block_bytes(mut self, bytes: u32) -> Self {
        self.block_bytes = bytes;
        self
    }

    /// Read buffer per warp during the time-ordered CLOG2 merge (memory ≈ this × warps whose
    /// lifetimes overlap).
    pub fn with_cursor_buffer_bytes(mut self, bytes: usize) -> Self {
        self.cursor_buffer_bytes = bytes;
        self
    }

    /// Most warps the CLOG2 merge streams from their own open file at once. Warps that
    /// overlap in time beyond this many are read into memory whole instead, so a
    /// high-occupancy GPU trace (thousands of resident warps) never hits the open-file limit;
    /// memory then grows by those warps' records (24 bytes each).
    pub fn with_max_open_warp_files(mut self, n: usize) -> Self {
        self.max_open_warp_files = n;
        self
    }

    pub fn max_open_warp_files(&self) -> usize {
        self.max_open_warp_files
    }

    pub fn mapping(&self) -> TimelineMapping {
        self.mapping
    }

    pub fn clog2_block_bytes(&self) -> u32 {
        self.block_bytes
    }

    pub fn cursor_buffer_bytes(&self) -> usize {
        self.cursor_buffer_bytes
    }

    pub(crate) fn validate(&self) -> Result<(), ExportError> {
        let b = self.block_bytes;
        if !b.is_multiple_of(8) || !(160..=1 << 30).contains(&b) {
            return Err(ExportError::BadOption {
                field: "clog2_block_bytes",
                value: b as u64,
                reason: "must be a multiple of 8 between 160 and 1073741824",
            });
        }
        Ok(())
    }
}

/// What an export wrote, and the anomalies it marked in the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExportSummary {
    /// Warps read.
    pub warps: u64,
    /// Records written (every record of the trace).
    pub records: u64,
    /// Records the probe log had no room for (marked per warp in every format).
    pub dropped: u64,
    /// Records whose end clock is before their start clock (marked per record).
    pub wrapped: u64,
    /// CLOG2 and OTF2: records drawn later than their clock says so that time never goes
    /// backwards on a timeline (they start before the previous event of their warp, or for OTF2
    /// of their location); marked per record.
    pub reordered: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Checks that the launch's clock can convert cycles to seconds.
pub(crate) fn clock_hz(launch: &LaunchInfo) -> Result<f64, ExportError> {
    let mhz = launch.clock_mhz;
    if mhz.is_finite() && mhz > 0.0 {
        Ok(mhz * 1e6)
    } else {
        Err(ExportError::BadClock { clock_mhz: mhz })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::{Dim3, SmId};

    #[test]
    fn format_names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>().unwrap(), f);
        }
        assert!("parquet".parse::<Format>().unwrap_err().contains("parquet"));
    }

    #[test]
    fn block_warp_mapping_is_linear_block_index() {
        let l = LaunchInfo::new("k", Dim3::new(4, 3, 2), Dim3::new(64, 1, 1));
        let mut w = WarpTrace::new([1, 2, 1], 1, 0, SmId(5));
        w.hw_warp = 7;
        assert_eq!(TimelineMapping::BlockWarp.line(&l, &w), (1 + 2 * 4 + 12, 1));
        assert_eq!(TimelineMapping::SmSlot.line(&l, &w), (5, 7));
    }

    #[test]
    fn block_size_is_validated() {
        for bad in [100, 65537, (1 << 30) + 8] {
            let e = ExportOptions::default()
                .with_clog2_block_bytes(bad)
                .validate();
            assert!(matches!(e, Err(ExportError::BadOption { value, .. }) if value == bad as u64));
        }
        assert!(ExportOptions::default().validate().is_ok());
    }
}
