//! `run.json`: what one run measured. One schema for every command (`launch`, `render`, `sweep`)
//! and both backends, so the analysis reads any run the same way. Optional fields are `null` when
//! a backend cannot measure them (e.g. the texture hit rate on a GPU without Nsight Compute).

use crate::{Dim3, EmuCounters, ProbeMode, TraceError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Keys of `RunMetrics::extra` that more than one command writes and the sweep reads, named once.
pub mod run_keys {
    /// Probed ÷ bare kernel time: what the probes cost.
    pub const OVERHEAD: &str = "overhead";
    /// The bare build's kernel time (ms) and cycles, beside the probed run's own.
    pub const BARE_KERNEL_MS: &str = "bare_kernel_ms";
    pub const BARE_CYCLES: &str = "bare_cycles";
}

/// What the probes cost a run: probed ÷ bare kernel time, `None` unless that is a finite,
/// positive number (a time missing, zero or not finite). The one definition behind
/// [`run_keys::OVERHEAD`], wherever it is written or printed.
pub fn overhead_ratio(probed_ms: f64, bare_ms: f64) -> Option<f64> {
    let ratio = probed_ms / bare_ms;
    (ratio.is_finite() && ratio > 0.0).then_some(ratio)
}

/// The metrics of one run. Rates are fractions in 0–1. Keys beyond these (per-command details,
/// emulator counters) live in `extra`, which serializes as ordinary top-level keys in sorted order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    /// `emu` or `gpu`.
    pub backend: String,
    pub kernel: String,
    /// Emulator preset name (`gtx480`, `v100`, `a100`, `h100`, or `custom` for `--config`).
    pub preset: Option<String>,
    /// GPU name or emulator description.
    pub device: String,
    pub grid: Dim3,
    pub block: Dim3,
    pub mode: ProbeMode,
    /// Kernel cycles (emulator: simulated; GPU: kernel time × clock).
    pub cycles: Option<u64>,
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
    /// SM clock used to turn cycles into time.
    pub clock_mhz: f64,
    pub kernel_ms: Option<f64>,
    pub frame_rate: Option<f64>,
    /// Texture hit rate, 0–1, as Nsight Compute counts it (per quad or pair of lanes): ncu's on a GPU,
    /// the emulator's `mem.tex_hit_rate` on the emulator (whose `mem.tex_sector_hit_rate` is the
    /// per-request one).
    pub tex_hit_rate: Option<f64>,
    pub l1_hit_rate: Option<f64>,
    pub l2_hit_rate: Option<f64>,
    /// Records kept in the trace, and records the log had no room for.
    pub records: u64,
    pub dropped_records: u64,
    /// Launch errors, in words; empty when the launch succeeded.
    pub errors: Vec<String>,
    /// What the emulator counted (`None` on a GPU, and for a launch pipeline, whose launches
    /// each keep theirs under `launches`).
    pub emulator: Option<EmuCounters>,
    /// Everything else, flattened into the top level of the JSON object.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl RunMetrics {
    pub fn new(backend: &str, kernel: &str, grid: Dim3, block: Dim3, mode: ProbeMode) -> Self {
        RunMetrics {
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
            clock_mhz: 0.0,
            kernel_ms: None,
            frame_rate: None,
            tex_hit_rate: None,
            l1_hit_rate: None,
            l2_hit_rate: None,
            records: 0,
            dropped_records: 0,
            errors: Vec::new(),
            emulator: None,
            extra: serde_json::Map::new(),
        }
    }

    /// The same metrics without what the host's clock measured (`wall_seconds`,
    /// `sim_warp_instructions_per_second`) and the pool it ran in (`threads`): what must be
    /// identical between two runs of the same inputs on the emulator.
    pub fn without_host_timing(&self) -> RunMetrics {
        RunMetrics {
            wall_seconds: 0.0,
            threads: None,
            sim_warp_instructions_per_second: None,
            ..self.clone()
        }
    }

    /// Reads a `run.json`, naming the file in any error. A run.json is a few KiB; one over
    /// 16 MiB is refused before it is read into memory.
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
        serde_json::from_str(&text).map_err(|source| TraceError::Json {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Writes it atomically (temp file + rename). Refuses an `extra` key that repeats a typed
    /// field: the JSON would hold the key twice, and `read` refuses such a file.
    pub fn write(&self, path: &Path) -> Result<(), TraceError> {
        let typed = serde_json::to_value(RunMetrics {
            extra: serde_json::Map::new(),
            ..self.clone()
        })
        .map_err(|source| TraceError::Json {
            path: path.to_path_buf(),
            source,
        })?;
        if let Some(key) = self.extra.keys().find(|k| typed.get(k.as_str()).is_some()) {
            return Err(TraceError::Output {
                path: path.to_path_buf(),
                reason: format!("its extra key {key:?} would repeat the field of the same name"),
            });
        }
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
    fn run_json_round_trips_with_extra_keys_at_top_level() {
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
        m.extra.insert("shape".into(), "64x1".into());
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
        assert_eq!(v["shape"], "64x1");
        assert_eq!(v["mode"], "fence");
        assert_eq!(v["tex_hit_rate"], 0.75);
        assert_eq!(v["emulator"]["mem"]["texture"]["sector_misses"], 3);
        assert_eq!(v["emulator"]["instructions_by_class"]["flops"], 64);
        assert_eq!(RunMetrics::read(&path).unwrap(), m);
        assert!(!crate::temp_path(&path).exists());
    }

    #[test]
    fn an_extra_key_that_repeats_a_field_is_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        let mut m = RunMetrics::new(
            "emu",
            "k",
            Dim3::new(1, 1, 1),
            Dim3::new(32, 1, 1),
            ProbeMode::Off,
        );
        m.extra.insert("block".into(), "[32,1,1]".into());
        let e = m.write(&path).unwrap_err().to_string();
        assert!(e.contains("\"block\" would repeat"), "{e}");
        assert!(!path.exists());
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
