//! `run.json`: what one run measured. One schema for every command (`launch`, `render`, `sweep`)
//! and both backends, so the analysis reads any run the same way. Every key is a typed field here:
//! reading refuses a key it does not know, except inside `extra`, which is for what a user or a
//! script adds (warpscope writes and reads nothing there). Optional fields are `null` when a
//! backend cannot measure them (e.g. the texture hit rate on a GPU without Nsight Compute).
//!
//! Sections: the top level (what ran where, its time, its hit rates, its records); `probes` (how
//! the probes kept their log); `overhead` and `bare` (the same launch built without probes: what
//! measuring changed); `study` (the volume renderer's frame: geometry and parameters); `launches`
//! (each launch of a pipeline); `app` (a launch of an unmodified program); `emulator` (the
//! emulator's counters).

use crate::{Dim3, EmuCounters, HardwareCounters, ProbeMode, ProbeTruth, RecordKind, TraceError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The version of run.json's layout this crate writes and reads. A file without the field was
/// written before the layout was typed (version 1: per-command keys at the top level).
pub const RUN_FORMAT_VERSION: u32 = 2;

/// The name of a run folder's [`RunMetrics`] file.
pub const RUN_FILE_NAME: &str = "run.json";

/// What the probes cost a run: probed ÷ bare kernel time, `None` unless that is a finite,
/// positive number (a time missing, zero or not finite). The one definition behind
/// [`RunMetrics::overhead`], wherever it is written or printed.
pub fn overhead_ratio(probed_ms: f64, bare_ms: f64) -> Option<f64> {
    let ratio = probed_ms / bare_ms;
    (ratio.is_finite() && ratio > 0.0).then_some(ratio)
}

/// `time_warps` and `time_accesses` of a run.json written before timing was sampled: every warp
/// and every access timed.
fn every_warp() -> String {
    "all".into()
}

/// How the probes kept their log in a probed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeFacts {
    /// `trace`: every access of the traced warps; `summary`: per-site statistics of every warp.
    pub kind: RecordKind,
    /// The warps that kept every access (`all`, `none`, `every:N`, a list).
    pub trace_warps: String,
    /// The warps selected to time their accesses (`all`, `every:N`, a list); every traced warp
    /// timed its accesses too. The others ran the bare path at every probe.
    #[serde(default = "every_warp")]
    pub time_warps: String,
    /// Which of its accesses a timed warp timed: `all`, or `every:N` (one in N, all sites
    /// together, traced warps included).
    #[serde(default = "every_warp")]
    pub time_accesses: String,
    /// How many warps timed their accesses (`null` where not recorded).
    #[serde(default)]
    pub timed_warps: Option<u64>,
    /// How many accesses they timed, all sites together: the per-site statistics' sample.
    #[serde(default)]
    pub timed_accesses: Option<u64>,
    /// Records each traced warp could keep; more were counted as dropped.
    pub slots_per_warp: u32,
    /// Dynamic shared memory the probes' state added per block.
    pub shared_bytes: u64,
    /// What the probes' state did to the resident blocks per SM, in words.
    pub occupancy_note: String,
}

/// The same launch built without probes, run beside the probed one: what measuring changed.
/// Every field is `null` where the backend could not measure it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BareRun {
    /// The bare build's kernel time in milliseconds, measured as the probed run's `kernel_ms`.
    pub kernel_ms: Option<f64>,
    /// The bare build's kernel cycles, as the probed run's `cycles`.
    pub cycles: Option<u64>,
    /// Resident blocks per SM of the bare build.
    pub occupancy: Option<u32>,
    /// Registers per thread of the bare build (ptxas).
    pub registers: Option<u32>,
    /// Texture hit rate (0–1), counted as the probed run's `tex_hit_rate`.
    pub tex_hit_rate: Option<f64>,
    /// L1 hit rate (0–1), counted as the probed run's `l1_hit_rate`.
    pub l1_hit_rate: Option<f64>,
    /// L2 hit rate (0–1), counted as the probed run's `l2_hit_rate`.
    pub l2_hit_rate: Option<f64>,
    /// Bytes between the L2 and DRAM, counted as the probed run's `dram_bytes`.
    pub dram_bytes: Option<u64>,
    /// Achieved occupancy (0–1), counted as the probed run's `achieved_occupancy`.
    #[serde(default)]
    pub achieved_occupancy: Option<f64>,
    /// The SM clock the bare build's profiled launch ran at, MHz, measured as the probed run's
    /// `sm_clock_mhz`.
    #[serde(default)]
    pub sm_clock_mhz: Option<f64>,
    /// Whether the probed build's output equals the bare build's, byte for byte.
    pub image_matches: Option<bool>,
}

impl BareRun {
    /// Sets the bare build's hardware counters.
    pub fn set_counters(&mut self, c: HardwareCounters) {
        self.tex_hit_rate = c.tex_hit_rate;
        self.l1_hit_rate = c.l1_hit_rate;
        self.l2_hit_rate = c.l2_hit_rate;
        self.dram_bytes = c.dram_bytes;
        self.achieved_occupancy = c.achieved_occupancy;
        self.sm_clock_mhz = c.sm_clock_mhz;
    }
}

/// The image against the CPU reference renderer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReferenceDiff {
    /// The largest difference of one channel of one pixel (0–255).
    pub max_channel_diff: u8,
    /// Pixels in which any channel differs.
    pub pixels_differing: u64,
}

/// A frame of the volume-rendering study: its geometry and rendering parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StudyFacts {
    /// Block shape, `16x8`.
    pub shape: String,
    /// Viewpoint in degrees, `0,0,0`.
    pub view: String,
    /// Image size, `128x128`.
    pub image: String,
    /// The volume, in words.
    pub volume: String,
    /// Voxels in the volume.
    pub volume_voxels: u64,
    /// Opacity scale of the ray marcher (the CUDA sample's `density`).
    pub density: f32,
    /// Brightness scale of the accumulated colour.
    pub brightness: f32,
    /// Offset of the transfer function's lookup.
    pub transfer_offset: f32,
    /// Scale of the transfer function's lookup.
    pub transfer_scale: f32,
    /// Step along each ray, in the volume's [-1, 1] box.
    pub tstep: f32,
    /// Timed launches whose kernel times were averaged (1 on the emulator).
    pub frames: u32,
    /// The device's state when the frame started, in words.
    pub start_state: String,
    /// The image against the CPU reference renderer, where it was compared.
    pub reference: Option<ReferenceDiff>,
}

/// A launch of an unmodified program, profiled in its own process (`warpscope run`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppFacts {
    /// The program, as it was started.
    pub program: String,
    /// The kernel's name demangled (`kernel` keeps the PTX's).
    pub demangled: String,
    /// Which launch of this kernel it was, from 0.
    pub launch: u64,
    /// The PTX target the probes went into (`compute_75`); the program may have run SASS of a
    /// newer architecture, built from other code where the source tests `__CUDA_ARCH__`.
    pub ptx_target: String,
    /// Whether the PTX had a line table (`-lineinfo`): without one, sites are named by PTX line.
    pub line_table: bool,
}

/// One launch of a pipeline (several kernels sharing buffers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LaunchFacts {
    /// The launched kernel's name, as in the PTX.
    pub kernel: String,
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads per block.
    pub block: Dim3,
    /// The launch's kernel time in milliseconds.
    pub kernel_ms: f64,
    /// The launch's kernel cycles (emulator: simulated; GPU: kernel time × clock).
    pub cycles: Option<u64>,
    /// What the emulator counted in this launch (`null` on a GPU).
    pub emulator: Option<EmuCounters>,
}

/// How one host thread of the emulator spent a run's launches, in host seconds from each
/// launch's first round to its last, summed over the launches. Its four parts add up to the
/// thread's time in the launches. Host timings: not deterministic, and never in a log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThreadSeconds {
    /// Running SMs' rounds.
    pub sm_rounds: f64,
    /// Answering the L2 requests of memory partitions beside the coordinating thread (presets
    /// with `dram.partitions` above 1, from four threads on).
    pub answering: f64,
    /// The coordinating thread's own part, which no other thread takes (0 on the others):
    /// applying global writes between rounds, handing out blocks and answering the SMs' L2
    /// requests in global order (with partitions answered apart, giving their answers back in
    /// that order, answering partitions on the way and waiting for those another thread holds).
    pub coordinating: f64,
    /// Waiting for work: for SMs still running, or for the coordinating thread.
    pub waiting: f64,
}

impl ThreadSeconds {
    /// The time the thread did work any thread could have done: SM rounds and answering.
    pub fn shared_work(&self) -> f64 {
        self.sm_rounds + self.answering
    }
}

impl std::ops::AddAssign for ThreadSeconds {
    fn add_assign(&mut self, other: ThreadSeconds) {
        // Destructured, so that a new part cannot be left out of the sum.
        let ThreadSeconds {
            sm_rounds,
            answering,
            coordinating,
            waiting,
        } = other;
        self.sm_rounds += sm_rounds;
        self.answering += answering;
        self.coordinating += coordinating;
        self.waiting += waiting;
    }
}

/// The metrics of one run. Rates are fractions in 0–1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunMetrics {
    /// The layout version of this file (`RUN_FORMAT_VERSION`); a reader refuses any other.
    pub format_version: u32,
    /// Where the run ran: `emu` or `gpu`.
    pub backend: String,
    /// The kernel's name, as in the PTX (mangled where the source is C++).
    pub kernel: String,
    /// Emulator preset name (`gtx480`, `v100`, `a100`, `h100`, `h200`, or a `--config` file's
    /// `name`).
    pub preset: Option<String>,
    /// GPU name or emulator description.
    pub device: String,
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads per block.
    pub block: Dim3,
    /// How the probes timed each load (`off` for a run without probes).
    pub mode: ProbeMode,
    /// Kernel cycles (emulator: simulated; GPU: kernel time × clock).
    pub cycles: Option<u64>,
    /// Warp instructions executed (emulator only).
    pub warp_instructions: Option<u64>,
    /// Host wall-clock seconds the run took (not deterministic; never in a log).
    pub wall_seconds: f64,
    /// Host threads in the pool that simulated the run's launches (emulator only: an SM per
    /// thread at a time; a sweep shares the pool between the runs it renders at once). A host
    /// setting: every other field but the timings is the same for any value.
    pub threads: Option<u32>,
    /// Simulated warp instructions per host second, over the run's emulator launches (the
    /// probed one and, when measured, the bare one), timed around the launches alone (not
    /// deterministic; emulator only).
    pub sim_warp_instructions_per_second: Option<f64>,
    /// How each host thread spent the run's emulator launches: the coordinating thread first,
    /// then the others from the busiest down (empty on a GPU). It says what holds a run on
    /// many threads: SM rounds that take longer in sum than on one thread, the coordinating
    /// thread's serial part, or threads waiting for the heaviest SM.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thread_seconds: Vec<ThreadSeconds>,
    /// SM clock used to turn cycles into time.
    pub clock_mhz: f64,
    /// Kernel time in milliseconds (GPU: CUDA events around the launch, averaged over the timed
    /// launches; emulator: cycles ÷ clock).
    pub kernel_ms: Option<f64>,
    /// Frames per second the kernel time allows (1000 ÷ `kernel_ms`; the volume renderer's runs).
    pub frame_rate: Option<f64>,
    /// Texture hit rate, 0–1, as Nsight Compute counts it (per quad or pair of lanes): ncu's on a GPU,
    /// the emulator's `mem.tex_hit_rate` on the emulator (whose `mem.tex_sector_hit_rate` is the
    /// per-request one).
    pub tex_hit_rate: Option<f64>,
    /// L1 hit rate of global and local loads, 0–1 (hits and MSHR merges over read sectors).
    pub l1_hit_rate: Option<f64>,
    /// L2 hit rate of the L1-level caches' reads, 0–1.
    pub l2_hit_rate: Option<f64>,
    /// Bytes moved between the L2 and DRAM, read and written: Nsight Compute's `dram__bytes.sum`
    /// on a GPU, the emulator's DRAM reads and writes.
    pub dram_bytes: Option<u64>,
    /// Achieved occupancy, 0–1: the warps resident per active cycle of an SM over its warp
    /// slots. Nsight Compute's `sm__warps_active.avg.pct_of_peak_sustained_active` ÷ 100 on a
    /// GPU, the emulator's `achieved_occupancy` on the emulator.
    #[serde(default)]
    pub achieved_occupancy: Option<f64>,
    /// The SM clock the profiled launch ran at, MHz: Nsight Compute's
    /// `sm__cycles_elapsed.avg.per_second` on a GPU (warm, clocks not locked, as the timed
    /// launches run); `null` on the emulator, whose clock is `clock_mhz`, and where ncu did not
    /// run. Beside `clock_mhz` it says whether the GPU ran below the clock its `cycles` assume.
    #[serde(default)]
    pub sm_clock_mhz: Option<f64>,
    /// Where the hit rates come from: `emulator counters`, `ncu <metric>`, or why they are
    /// missing.
    pub hit_rate_source: Option<String>,
    /// Resident blocks per SM of the run's launch, as launched (with the probes' state).
    pub occupancy: Option<u32>,
    /// Registers per thread of the run's build (ptxas), where known.
    pub registers: Option<u32>,
    /// Bytes of registers spilled to local memory by the run's build (ptxas), where known.
    pub spill_bytes: Option<u32>,
    /// Records kept in the trace.
    pub records: u64,
    /// Records the log had no room for: counted, never silently lost.
    pub dropped_records: u64,
    /// How the probes kept their log (`null` for a run without probes).
    pub probes: Option<ProbeFacts>,
    /// The probes' readings beside the true access times (emulator only; `null` on a GPU, for
    /// a run without probes or without traced warps).
    #[serde(default)]
    pub truth: Option<ProbeTruth>,
    /// Probed ÷ bare kernel time ([`overhead_ratio`]): what the probes cost. 1 for a run without
    /// probes; `null` where no bare run measured it.
    pub overhead: Option<f64>,
    /// The bare build's figures beside the probed run's.
    pub bare: Option<BareRun>,
    /// The volume renderer's frame (`render`, `sweep`, `demo`).
    pub study: Option<StudyFacts>,
    /// The program a profiled launch came from (`run`).
    pub app: Option<AppFacts>,
    /// Each launch of a pipeline, in order (empty for a single launch, whose figures are the
    /// run's own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub launches: Vec<LaunchFacts>,
    /// Launch errors, in words; empty when the launch succeeded.
    pub errors: Vec<String>,
    /// What the run should be read with, in words (e.g. registers the model would have spilled).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What the emulator counted (`null` on a GPU, and for a pipeline, whose launches each keep
    /// theirs under `launches`).
    pub emulator: Option<EmuCounters>,
    /// Keys a user or a script adds to the file; warpscope writes none and reads none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl RunMetrics {
    pub fn new(backend: &str, kernel: &str, grid: Dim3, block: Dim3, mode: ProbeMode) -> Self {
        RunMetrics {
            format_version: RUN_FORMAT_VERSION,
            backend: backend.into(),
            kernel: kernel.into(),
            preset: None,
            device: String::new(),
            grid,
            block,
            mode,
            cycles: None,
            warp_instructions: None,
            wall_seconds: 0.0,
            threads: None,
            sim_warp_instructions_per_second: None,
            thread_seconds: Vec::new(),
            clock_mhz: 0.0,
            kernel_ms: None,
            frame_rate: None,
            tex_hit_rate: None,
            l1_hit_rate: None,
            l2_hit_rate: None,
            dram_bytes: None,
            achieved_occupancy: None,
            sm_clock_mhz: None,
            hit_rate_source: None,
            occupancy: None,
            registers: None,
            spill_bytes: None,
            records: 0,
            dropped_records: 0,
            probes: None,
            truth: None,
            overhead: None,
            bare: None,
            study: None,
            app: None,
            launches: Vec::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
            emulator: None,
            extra: BTreeMap::new(),
        }
    }

    /// The same metrics without what the host's clock measured (`wall_seconds`,
    /// `sim_warp_instructions_per_second`, `thread_seconds`) and the pool it ran in (`threads`):
    /// what must be identical between two runs of the same inputs on the emulator.
    pub fn without_host_timing(&self) -> RunMetrics {
        RunMetrics {
            wall_seconds: 0.0,
            threads: None,
            sim_warp_instructions_per_second: None,
            thread_seconds: Vec::new(),
            ..self.clone()
        }
    }

    /// Sets the run's hardware counters.
    pub fn set_counters(&mut self, c: HardwareCounters) {
        self.tex_hit_rate = c.tex_hit_rate;
        self.l1_hit_rate = c.l1_hit_rate;
        self.l2_hit_rate = c.l2_hit_rate;
        self.dram_bytes = c.dram_bytes;
        self.achieved_occupancy = c.achieved_occupancy;
        self.sm_clock_mhz = c.sm_clock_mhz;
    }

    /// The bare build's kernel time, where a bare run measured it.
    pub fn bare_kernel_ms(&self) -> Option<f64> {
        self.bare.as_ref().and_then(|b| b.kernel_ms)
    }

    /// Reads a `run.json`, naming the file in any error: one that is not JSON, holds a key this
    /// layout does not have (outside `extra`), or was written in another layout version. A
    /// run.json is a few KiB; one over 16 MiB is refused before it is read into memory.
    pub fn read(path: &Path) -> Result<Self, TraceError> {
        const MAX_BYTES: u64 = 16 << 20;
        let len = std::fs::metadata(path)
            .map_err(|e| TraceError::io(path, e))?
            .len();
        if len > MAX_BYTES {
            return Err(TraceError::Corrupt {
                path: path.to_path_buf(),
                offset: MAX_BYTES,
                what: format!("{len} bytes, more than a run.json can be ({MAX_BYTES})"),
            });
        }
        let text = std::fs::read_to_string(path).map_err(|e| TraceError::io(path, e))?;
        let json = |source| TraceError::Json {
            path: path.to_path_buf(),
            source,
        };
        let value: serde_json::Value = serde_json::from_str(&text).map_err(json)?;
        // Said before the fields are matched: a file of another layout would otherwise be
        // refused for its first unknown key, which does not tell the user what to do.
        let version = match value.get("format_version") {
            None => Some(1),
            Some(v) => v.as_u64(),
        };
        if version != Some(u64::from(RUN_FORMAT_VERSION)) {
            let version = version.map_or_else(|| "not a number".to_string(), |v| v.to_string());
            return Err(TraceError::Corrupt {
                path: path.to_path_buf(),
                offset: 0,
                what: format!(
                    "run.json layout version {version}, where this warpscope reads version \
                     {RUN_FORMAT_VERSION}; render or launch the run again with this version"
                ),
            });
        }
        serde_json::from_value(value).map_err(json)
    }

    /// Writes it atomically (temp file + rename).
    pub fn write(&self, path: &Path) -> Result<(), TraceError> {
        write_json_atomic(path, self)
    }
}

/// Writes `value` as pretty JSON to `path` through a temp file in the same folder and a rename, so
/// a reader never sees a half-written file under the final name.
pub fn write_json_atomic<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<(), TraceError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|source| TraceError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    bytes.push(b'\n');
    crate::write_bytes_atomic(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_is_a_finite_positive_ratio_or_nothing() {
        assert_eq!(overhead_ratio(0.03, 0.02), Some(0.03 / 0.02));
        assert_eq!(overhead_ratio(0.03, 0.0), None);
        assert_eq!(overhead_ratio(0.0, 0.02), None);
        assert_eq!(overhead_ratio(f64::NAN, 0.02), None);
    }

    #[test]
    fn run_json_round_trips_with_every_section() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        let mut m = RunMetrics::new(
            "emu",
            "k",
            Dim3::new(2, 1, 1),
            Dim3::new(64, 1, 1),
            ProbeMode::Fence,
        );
        m.tex_hit_rate = Some(0.75);
        m.study = Some(StudyFacts {
            shape: "64x1".into(),
            reference: Some(ReferenceDiff {
                max_channel_diff: 1,
                pixels_differing: 2,
            }),
            ..StudyFacts::default()
        });
        m.probes = Some(ProbeFacts {
            kind: RecordKind::Summary,
            trace_warps: "every:61".into(),
            time_warps: "every:4".into(),
            time_accesses: "every:2".into(),
            timed_warps: Some(3),
            timed_accesses: Some(1200),
            slots_per_warp: 8,
            shared_bytes: 96,
            occupancy_note: "kept".into(),
        });
        m.overhead = Some(1.25);
        m.bare = Some(BareRun {
            kernel_ms: Some(0.5),
            image_matches: Some(true),
            ..BareRun::default()
        });
        m.extra.insert("note".into(), "a user's key".into());
        let mut c = EmuCounters {
            cycles: 1000,
            warp_instructions: 12,
            ..EmuCounters::default()
        };
        c.instructions_by_class.insert("flops".into(), 64);
        c.mem.texture.sector_misses = 3;
        c.mem.tex_hit_rate = Some(0.75);
        m.emulator = Some(c);
        m.write(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["format_version"], RUN_FORMAT_VERSION);
        assert_eq!(v["study"]["shape"], "64x1");
        assert_eq!(v["probes"]["kind"], "summary");
        assert_eq!(v["bare"]["kernel_ms"], 0.5);
        assert_eq!(v["extra"]["note"], "a user's key");
        assert_eq!(v["mode"], "fence");
        assert_eq!(v["tex_hit_rate"], 0.75);
        assert_eq!(v["emulator"]["mem"]["texture"]["sector_misses"], 3);
        assert_eq!(v["emulator"]["instructions_by_class"]["flops"], 64);
        assert_eq!(RunMetrics::read(&path).unwrap(), m);
        assert!(!crate::temp_path(&path).exists());
    }

    #[test]
    fn an_unknown_key_is_refused_outside_extra_and_kept_inside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        let m = RunMetrics::new(
            "emu",
            "k",
            Dim3::new(1, 1, 1),
            Dim3::new(32, 1, 1),
            ProbeMode::Off,
        );
        let mut v = serde_json::to_value(&m).unwrap();
        v["shape"] = "16x8".into();
        std::fs::write(&path, v.to_string()).unwrap();
        let e = crate::error_chain(&RunMetrics::read(&path).unwrap_err());
        assert!(e.contains("run.json") && e.contains("shape"), "{e}");
        v.as_object_mut().unwrap().remove("shape");
        v["study"] = serde_json::json!({"shape": "16x8", "colour": "red"});
        std::fs::write(&path, v.to_string()).unwrap();
        let e = crate::error_chain(&RunMetrics::read(&path).unwrap_err());
        assert!(e.contains("colour"), "{e}");
        v.as_object_mut().unwrap().remove("study");
        v["extra"] = serde_json::json!({"shape": "16x8"});
        std::fs::write(&path, v.to_string()).unwrap();
        assert_eq!(RunMetrics::read(&path).unwrap().extra["shape"], "16x8");
    }

    #[test]
    fn a_run_json_of_another_layout_version_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        std::fs::write(&path, r#"{"backend": "emu", "shape": "16x8"}"#).unwrap();
        let e = RunMetrics::read(&path).unwrap_err().to_string();
        assert!(e.contains("version 1") && e.contains("again"), "{e}");
        std::fs::write(&path, r#"{"format_version": "two"}"#).unwrap();
        let e = RunMetrics::read(&path).unwrap_err().to_string();
        assert!(e.contains("not a number"), "{e}");
    }

    #[test]
    fn bad_json_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        std::fs::write(&path, "{").unwrap();
        let e = RunMetrics::read(&path).unwrap_err().to_string();
        assert!(e.contains("run.json"), "{e}");
    }
}
