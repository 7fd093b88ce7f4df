//! Launch descriptions and per-warp records.

use crate::units::{Cycles, SmId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How the probe header times a load (`WS_MODE` in `kernels/warpscope.cuh`; same numbers).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ProbeMode {
    /// No probes: the bare kernel, for overhead and image comparison.
    Off = 0,
    /// `clock()` before and after the load: measures issue, not completion (the paper's naive method).
    Naive = 1,
    /// A CTA-scope fence (`fence.acq_rel.cta`) before the closing clock read (writable memory).
    Fence = 2,
    /// A runtime-false dependency on the loaded value before the closing clock read (read-only memory).
    Dummy = 3,
    /// Fence for writable memory, dummy for read-only memory: the paper's choice.
    Auto = 4,
}

impl ProbeMode {
    /// Every mode, in `WS_MODE` order.
    pub const ALL: [ProbeMode; 5] = [
        ProbeMode::Off,
        ProbeMode::Naive,
        ProbeMode::Fence,
        ProbeMode::Dummy,
        ProbeMode::Auto,
    ];

    /// The name used on the command line, in file names and in CSV columns.
    pub fn name(self) -> &'static str {
        match self {
            ProbeMode::Off => "off",
            ProbeMode::Naive => "naive",
            ProbeMode::Fence => "fence",
            ProbeMode::Dummy => "dummy",
            ProbeMode::Auto => "auto",
        }
    }

    /// The `WS_MODE` value of the probe header.
    pub fn ws_mode(self) -> u32 {
        self as u32
    }

    /// The mode with `WS_MODE` value `v`.
    pub fn from_ws_mode(v: u32) -> Option<ProbeMode> {
        ProbeMode::ALL.get(v as usize).copied()
    }
}

impl fmt::Display for ProbeMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ProbeMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ProbeMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                format!("unknown probe mode {s:?}; expected off, naive, fence, dummy or auto")
            })
    }
}

/// What the probes keep: every access, or per-site statistics per warp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RecordKind {
    /// One record (site, start, end) per access: `WS_KIND_TRACE`.
    Trace = 0,
    /// Count, sum, min, max of access cycles per warp and site: `WS_KIND_SUMMARY`.
    Summary = 1,
}

impl RecordKind {
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Trace => "trace",
            RecordKind::Summary => "summary",
        }
    }
}

impl FromStr for RecordKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "trace" => Ok(RecordKind::Trace),
            "summary" => Ok(RecordKind::Summary),
            _ => Err(format!(
                "unknown record kind {s:?}; expected trace or summary"
            )),
        }
    }
}

/// The memory a load site reads (`WS_GLOBAL` … in the probe header; same numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Region {
    Global = 0,
    Texture = 1,
    Constant = 2,
    ReadOnly = 3,
}

impl Region {
    pub fn name(self) -> &'static str {
        match self {
            Region::Global => "global",
            Region::Texture => "texture",
            Region::Constant => "constant",
            Region::ReadOnly => "readonly",
        }
    }

    /// Whether the kernel may write this memory (then `WS_AUTO` fences; otherwise it uses the dummy).
    pub fn is_writable(self) -> bool {
        matches!(self, Region::Global)
    }

    pub fn from_code(v: u32) -> Option<Region> {
        [
            Region::Global,
            Region::Texture,
            Region::Constant,
            Region::ReadOnly,
        ]
        .get(v as usize)
        .copied()
    }
}

/// A 3-component extent or index (grid, block, block index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub struct Dim3 {
    /// Extent or index along x, the fastest-varying dimension.
    pub x: u32,
    /// Extent or index along y.
    pub y: u32,
    /// Extent or index along z.
    pub z: u32,
}

impl Dim3 {
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }

    /// x·y·z, in u64 so that a 2³¹-wide grid does not overflow.
    pub fn volume(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
}

impl fmt::Display for Dim3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.x, self.y, self.z)
    }
}

/// One `WS_LOAD` site of a kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteInfo {
    pub id: u16,
    pub name: String,
    pub region: Region,
}

impl SiteInfo {
    pub fn new(id: u16, name: impl Into<String>, region: Region) -> Self {
        SiteInfo {
            id,
            name: name.into(),
            region,
        }
    }
}

/// What was launched, and how its clocks are to be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchInfo {
    pub kernel: String,
    pub grid: Dim3,
    pub block: Dim3,
    pub mode: ProbeMode,
    pub kind: RecordKind,
    pub sites: Vec<SiteInfo>,
    /// SM clock in MHz, to turn cycles into seconds (the preset's clock on the emulator).
    pub clock_mhz: f64,
    /// `emu` or `gpu`.
    pub backend: String,
    /// Free text: the GPU's name or the emulator preset.
    pub device: String,
    /// Index of this launch within its run (0 for single-frame runs).
    pub launch: u32,
    /// Whether the probe log lived in shared memory (true) or went straight to global memory.
    pub shared_buffer: bool,
    /// Records the log could hold per warp.
    pub slots_per_warp: u32,
    /// Global indices of the warps that ran the bare path at every probe (`--time-warps`),
    /// ascending: they timed nothing, and statistics per warp leave them out. Empty when every
    /// warp was timed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untimed_warps: Vec<u32>,
    /// A timed warp timed one access in this many (`--time-accesses`), all sites together: its
    /// statistics are a sample of its accesses, and sums over them stand for this many times as
    /// much. 1 when every access was timed.
    #[serde(default = "every_access", skip_serializing_if = "is_every_access")]
    pub access_period: u32,
}

/// `access_period` of a trace written before accesses were sampled: every access timed.
fn every_access() -> u32 {
    1
}

fn is_every_access(p: &u32) -> bool {
    *p == 1
}

impl LaunchInfo {
    /// A launch with no probes, 1 GHz clock and emulator backend; refine with the `with_*` methods.
    pub fn new(kernel: impl Into<String>, grid: Dim3, block: Dim3) -> Self {
        LaunchInfo {
            kernel: kernel.into(),
            grid,
            block,
            mode: ProbeMode::Off,
            kind: RecordKind::Trace,
            sites: Vec::new(),
            clock_mhz: 1000.0,
            backend: "emu".into(),
            device: String::new(),
            launch: 0,
            shared_buffer: true,
            slots_per_warp: 0,
            untimed_warps: Vec::new(),
            access_period: 1,
        }
    }

    pub fn with_probe(mut self, mode: ProbeMode, kind: RecordKind) -> Self {
        self.mode = mode;
        self.kind = kind;
        self
    }

    pub fn with_sites(mut self, sites: Vec<SiteInfo>) -> Self {
        self.sites = sites;
        self
    }

    pub fn with_clock(mut self, clock_mhz: f64) -> Self {
        self.clock_mhz = clock_mhz;
        self
    }

    pub fn with_backend(mut self, backend: impl Into<String>, device: impl Into<String>) -> Self {
        self.backend = backend.into();
        self.device = device.into();
        self
    }

    /// Whether the warp with this global index timed its accesses.
    pub fn timed(&self, global_warp: u32) -> bool {
        self.untimed_warps.binary_search(&global_warp).is_err()
    }

    /// Warps per block: threads rounded up to whole warps of 32.
    pub fn warps_per_block(&self) -> u32 {
        self.block.volume().div_ceil(32) as u32
    }

    /// The site with this id, if the launch declared it.
    pub fn site(&self, id: u16) -> Option<&SiteInfo> {
        self.sites.iter().find(|s| s.id == id)
    }
}

/// One timed access of one warp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub site: u16,
    /// Position of this record among the warp's records (0, 1, 2, …), counting dropped ones too.
    pub seq: u32,
    pub start: Cycles,
    pub end: Cycles,
}

impl Record {
    /// `end - start`; zero for a wrapped clock (see [`Record::wrapped`]).
    pub fn duration(&self) -> Cycles {
        self.end.saturating_since(self.start)
    }

    /// The end clock is before the start clock: the 32-bit clock wrapped or the SM clock was reset.
    pub fn wrapped(&self) -> bool {
        self.end < self.start
    }
}

/// Per-site statistics of one warp (the `summary` record kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteSummary {
    pub site: u16,
    pub count: u64,
    pub sum: Cycles,
    pub min: Cycles,
    pub max: Cycles,
}

/// What one warp recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WarpTrace {
    /// The block index (`%ctaid`).
    pub block: [u32; 3],
    /// The warp's index within its block (thread linear index / 32).
    pub warp: u32,
    /// The warp's index in the whole grid: block linear index · warps per block + `warp`.
    pub global_warp: u32,
    pub sm: SmId,
    /// The hardware warp slot on its SM (`%warpid`).
    pub hw_warp: u32,
    /// Clock at `WS_KERNEL_BEGIN` and `WS_KERNEL_END`.
    pub begin: Cycles,
    pub end: Cycles,
    /// Records the log had no room for (never silently lost).
    pub dropped: u32,
    pub records: Vec<Record>,
    pub summaries: Vec<SiteSummary>,
}

impl WarpTrace {
    pub fn new(block: [u32; 3], warp: u32, global_warp: u32, sm: SmId) -> Self {
        WarpTrace {
            block,
            warp,
            global_warp,
            sm,
            hw_warp: 0,
            begin: Cycles(0),
            end: Cycles(0),
            dropped: 0,
            records: Vec::new(),
            summaries: Vec::new(),
        }
    }

    /// Cycles between kernel begin and end of this warp.
    pub fn lifetime(&self) -> Cycles {
        self.end.saturating_since(self.begin)
    }
}

/// A launch with all of its warps, in memory (small traces, tests). Large traces stream through
/// [`crate::TraceReader`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub launch: LaunchInfo,
    pub warps: Vec<WarpTrace>,
}

impl Trace {
    /// Records across all warps.
    pub fn record_count(&self) -> u64 {
        self.warps.iter().map(|w| w.records.len() as u64).sum()
    }

    /// Records the log had no room for, across all warps.
    pub fn dropped_count(&self) -> u64 {
        self.warps.iter().map(|w| w.dropped as u64).sum()
    }

    /// Accesses timed (counted in the per-site statistics), across all warps and sites.
    pub fn timed_access_count(&self) -> u64 {
        (self.warps.iter())
            .flat_map(|w| &w.summaries)
            .map(|s| s.count)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_names_round_trip_and_match_ws_mode() {
        for (i, m) in ProbeMode::ALL.into_iter().enumerate() {
            assert_eq!(m.name().parse::<ProbeMode>().unwrap(), m);
            assert_eq!(m.ws_mode(), i as u32);
            assert_eq!(ProbeMode::from_ws_mode(i as u32), Some(m));
        }
        assert!(
            "fenced"
                .parse::<ProbeMode>()
                .unwrap_err()
                .contains("fenced")
        );
        assert_eq!(ProbeMode::from_ws_mode(5), None);
    }

    #[test]
    fn warps_per_block_rounds_up() {
        let l = LaunchInfo::new("k", Dim3::new(1, 1, 1), Dim3::new(16, 3, 1));
        assert_eq!(l.warps_per_block(), 2);
    }

    #[test]
    fn wrapped_record_has_zero_duration() {
        let r = Record {
            site: 0,
            seq: 0,
            start: Cycles(10),
            end: Cycles(3),
        };
        assert!(r.wrapped());
        assert_eq!(r.duration(), Cycles(0));
    }
}
