//! The sweep plan: every run of a sweep in a fixed order, each with its folder name and a content
//! hash of its inputs, and the hash of the whole sweep's parameters. It is the one definition that
//! resume, the folder's refusal of other parameters, `--plan`, `--shard` and `merge` share.
//!
//! Order: shapes (as given) × views (as given) × modes (as given), the mode varying fastest; run
//! indices count from 0 in that order. `plan.json` in the sweep folder is [`SweepPlan`] as JSON.
//!
//! Hashes are SHA-256 over the canonical JSON of the inputs (object keys sorted, numbers in their
//! shortest round-trip form), so they do not depend on the machine or on the order fields were
//! written in. The plan hash covers every parameter that changes a result: backend choice,
//! emulator configuration (all of it, not only the preset's name), volume (and a raw volume's
//! bytes), image and transfer parameters, probe settings, frames, the overhead run, and the three
//! axes. The runaway guards (`limits`: instruction budget, time limit) are left out: they only
//! stop a launch, they never change a finished run. A run's hash covers the same minus the axes, plus its own shape,
//! view and mode — so a run folder is recognised by its inputs, whatever else the sweep holds.
//!
//! ```
//! use study::{Shard, SweepPlan};
//! let cfg = study::demo_config(std::path::Path::new("out"), study::Scale::Quick).unwrap();
//! let plan = SweepPlan::new(&cfg).unwrap();
//! assert_eq!(plan.runs.len(), 32);
//! assert_eq!(plan.runs[1].name, "128x1_v0-0-0_fence");
//! let shard: Shard = "2/3".parse().unwrap();
//! assert_eq!(shard.range(plan.runs.len()), 10..21);
//! ```

use crate::StudyError;
use crate::config::SweepConfig;
use crate::params::RenderParams;
use crate::volume::VolumeSource;
use device::BackendChoice;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::io::Read;
use std::path::Path;
use trace::ProbeMode;

/// The plan's file name inside a sweep folder.
pub const PLAN_JSON: &str = "plan.json";

/// The version of `plan.json`'s layout.
pub const PLAN_FORMAT: u32 = 1;

/// The order of [`SweepPlan::runs`], as written into `plan.json`.
pub const PLAN_ORDER: &str = "shapes x views x modes, mode fastest; index from 0";

/// Everything a run's result depends on except its shape, view and mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommonInputs {
    /// `gpu`, `emu` or `auto`, as asked for.
    pub backend: String,
    /// The emulator preset's (or configuration file's) name, for messages; the configuration
    /// itself is `emu_config`.
    pub preset: String,
    pub emu_config: emulator::GpuConfig,
    pub volume: VolumeSource,
    /// SHA-256 of a raw volume file's bytes (None for a generated volume).
    pub volume_sha256: Option<String>,
    pub params: RenderParams,
    /// The trace-warps selection in its canonical spelling (`every:61`).
    pub trace_warps: String,
    /// The time-warps selection in its canonical spelling. Left out of the plan (and so of
    /// every run's hash) when `all`, so that sweeps made before warps were sampled keep their
    /// hashes; any other sampling is a different plan.
    #[serde(default = "every_warp", skip_serializing_if = "is_every_warp")]
    pub time_warps: String,
    /// The same for the accesses a timed warp times.
    #[serde(default = "every_warp", skip_serializing_if = "is_every_warp")]
    pub time_accesses: String,
    pub slots_per_warp: u32,
    pub frames: u32,
    pub measure_overhead: bool,
}

fn every_warp() -> String {
    "all".into()
}

fn is_every_warp(s: &String) -> bool {
    s == "all"
}

/// The inputs of the whole sweep: the common ones and the three axes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanInputs {
    #[serde(flatten)]
    pub common: CommonInputs,
    pub shapes: Vec<String>,
    pub views: Vec<String>,
    pub modes: Vec<ProbeMode>,
}

/// One run of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedRun {
    pub index: usize,
    /// The run folder's name, `16x8_v0-0-0_fence`.
    pub name: String,
    pub shape: String,
    pub view: String,
    pub mode: ProbeMode,
    /// SHA-256 of the run's inputs (hex).
    pub hash: String,
}

/// `plan.json`: the sweep's parameters, their hash, and its runs in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPlan {
    pub format: u32,
    /// SHA-256 of [`PlanInputs`] (hex): equal hashes, equal sweeps.
    pub hash: String,
    pub order: String,
    pub inputs: PlanInputs,
    pub runs: Vec<PlannedRun>,
}

fn backend_name(b: BackendChoice) -> &'static str {
    match b {
        BackendChoice::Gpu => "gpu",
        BackendChoice::Emu => "emu",
        BackendChoice::Auto => "auto",
    }
}

/// Lowercase hex SHA-256 of `bytes`.
fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The canonical JSON of `value`: through `serde_json::Value`, whose objects keep their keys
/// sorted, so the bytes depend only on the content.
fn canonical_json<T: Serialize>(value: &T) -> Vec<u8> {
    let v = serde_json::to_value(value).unwrap_or(Value::Null);
    serde_json::to_vec(&v).unwrap_or_default()
}

/// SHA-256 of a file's bytes, streamed.
fn file_sha256(path: &Path) -> Result<String, StudyError> {
    let mut f = std::fs::File::open(path).map_err(|e| StudyError::io(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| StudyError::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Refuses an axis that names the same value twice (after normalising: `0.0,0,0` is `0,0,0`),
/// which would give two rows of one run and count it twice in the analysis.
fn refuse_duplicates(field: &'static str, names: &[String]) -> Result<(), StudyError> {
    let mut seen = HashSet::new();
    for n in names {
        if !seen.insert(n.as_str()) {
            return Err(StudyError::Config {
                field,
                value: n.clone(),
                reason: "given twice (values are compared as numbers: 0.0,0,0 is 0,0,0); \
                         give each once"
                    .into(),
            });
        }
    }
    Ok(())
}

impl SweepPlan {
    /// The plan of `cfg`: refuses empty or duplicated axes, and reads a raw volume to hash it.
    pub fn new(cfg: &SweepConfig) -> Result<SweepPlan, StudyError> {
        for (field, empty) in [
            ("shapes", cfg.shapes.is_empty()),
            ("views", cfg.views.is_empty()),
            ("modes", cfg.modes.is_empty()),
        ] {
            if empty {
                return Err(StudyError::Config {
                    field,
                    value: "[]".into(),
                    reason: "the sweep needs at least one".into(),
                });
            }
        }
        let shapes: Vec<String> = cfg.shapes.iter().map(|s| s.name()).collect();
        let views: Vec<String> = cfg.views.iter().map(|v| v.name()).collect();
        let modes: Vec<String> = cfg.modes.iter().map(|m| m.name().to_string()).collect();
        refuse_duplicates("shapes", &shapes)?;
        refuse_duplicates("views", &views)?;
        refuse_duplicates("modes", &modes)?;
        let volume_sha256 = match &cfg.volume {
            VolumeSource::Raw { path, .. } => Some(file_sha256(path)?),
            VolumeSource::Generated { .. } => None,
        };
        let common = CommonInputs {
            backend: backend_name(cfg.backend).into(),
            preset: cfg.emu_config.name.clone(),
            emu_config: cfg.emu_config.clone(),
            volume: cfg.volume.clone(),
            volume_sha256,
            params: cfg.params,
            trace_warps: cfg.trace_warps.to_string(),
            time_warps: cfg.time_warps.to_string(),
            time_accesses: cfg.time_accesses.to_string(),
            slots_per_warp: cfg.slots_per_warp,
            frames: cfg.frames,
            measure_overhead: cfg.measure_overhead,
        };
        let mut runs = Vec::new();
        for run in cfg.runs() {
            let hash = sha256_hex(&canonical_json(&serde_json::json!({
                "common": &common,
                "shape": run.shape.name(),
                "view": run.view.name(),
                "mode": run.mode,
            })));
            runs.push(PlannedRun {
                index: runs.len(),
                name: run.run_name(),
                shape: run.shape.name(),
                view: run.view.name(),
                mode: run.mode,
                hash,
            });
        }
        // distinct values can still share a folder name (the slug drops nothing, but be sure)
        let mut names = HashSet::new();
        if let Some(r) = runs.iter().find(|r| !names.insert(r.name.as_str())) {
            return Err(StudyError::Config {
                field: "views",
                value: r.view.clone(),
                reason: format!("two runs would share the folder {}", r.name),
            });
        }
        let inputs = PlanInputs {
            common,
            shapes,
            views,
            modes: cfg.modes.clone(),
        };
        Ok(SweepPlan {
            format: PLAN_FORMAT,
            hash: sha256_hex(&canonical_json(&inputs)),
            order: PLAN_ORDER.into(),
            inputs,
            runs,
        })
    }

    /// Reads `plan.json`, naming the file in any error.
    pub fn read(path: &Path) -> Result<SweepPlan, StudyError> {
        let bytes = std::fs::read(path).map_err(|e| StudyError::io(path, e))?;
        let plan: SweepPlan = serde_json::from_slice(&bytes).map_err(|e| StudyError::BadFile {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        if plan.format != PLAN_FORMAT {
            return Err(StudyError::BadFile {
                path: path.to_path_buf(),
                reason: format!(
                    "plan format {} (this warpscope reads {PLAN_FORMAT})",
                    plan.format
                ),
            });
        }
        Ok(plan)
    }

    /// Writes `plan.json` atomically (pretty, with a trailing newline).
    pub fn write(&self, path: &Path) -> Result<(), StudyError> {
        Ok(trace::write_json_atomic(path, self)?)
    }

    /// The parameters that differ from `other`'s, one `field: this → other` each (nested fields
    /// dotted, `emu_config.l2.size_bytes`); empty when the plans are the same sweep.
    pub fn differences(&self, other: &SweepPlan) -> Vec<String> {
        let a = serde_json::to_value(&self.inputs).unwrap_or(Value::Null);
        let b = serde_json::to_value(&other.inputs).unwrap_or(Value::Null);
        let mut all = Vec::new();
        diff_values("", &a, &b, &mut all);
        // A whole other emulator configuration differs in dozens of fields: name a few.
        let mut out: Vec<String> = Vec::new();
        let mut i = 0;
        while i < all.len() {
            let top = all[i]
                .split(['.', ':'])
                .next()
                .unwrap_or_default()
                .to_string();
            let n = all[i..]
                .iter()
                .take_while(|d| d.split(['.', ':']).next() == Some(top.as_str()))
                .count();
            if n > 3 {
                let fields: Vec<&str> = all[i..i + 3]
                    .iter()
                    .map(|d| d.split(':').next().unwrap_or_default())
                    .collect();
                out.push(format!(
                    "{top}: {n} fields differ ({}, …)",
                    fields.join(", ")
                ));
            } else {
                out.extend(all[i..i + n].iter().cloned());
            }
            i += n;
        }
        out
    }

    /// The planned run named `name`.
    pub fn run(&self, name: &str) -> Option<&PlannedRun> {
        self.runs.iter().find(|r| r.name == name)
    }
}

fn diff_values(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                diff_values(
                    &p,
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        _ if a != b => out.push(format!("{path}: {a} -> {b}")),
        _ => {}
    }
}

/// Part K of N of a plan (1 ≤ K ≤ N): a contiguous block of runs. Contiguous rather than every
/// N-th run because runs of one shape and view are neighbours in the plan and share their bare
/// (`WS_OFF`) frame: a block splits at most N−1 such groups, round-robin would split nearly all
/// and render their bare frames twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// K, from 1.
    pub index: u32,
    /// N.
    pub count: u32,
}

impl Shard {
    /// The whole plan (1/1).
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };

    pub fn new(index: u32, count: u32) -> Result<Shard, StudyError> {
        if count == 0 || index == 0 || index > count {
            return Err(StudyError::Config {
                field: "shard",
                value: format!("{index}/{count}"),
                reason: "expected K/N with 1 <= K <= N".into(),
            });
        }
        Ok(Shard { index, count })
    }

    /// The plan indices of this shard among `total` runs: `[(K−1)·T/N, K·T/N)`, rounded down, so
    /// the shards' sizes differ by at most one and together hold every run once.
    pub fn range(&self, total: usize) -> std::ops::Range<usize> {
        let at = |k: u32| (k as u128 * total as u128 / self.count as u128) as usize;
        at(self.index - 1)..at(self.index)
    }

    /// The shard a cluster scheduler assigned, from its environment (`get` reads a variable):
    /// Slurm job arrays (`SLURM_ARRAY_TASK_ID` − `SLURM_ARRAY_TASK_MIN` + 1 of
    /// `SLURM_ARRAY_TASK_COUNT`), or a Kubernetes Indexed Job (`JOB_COMPLETION_INDEX` + 1 of
    /// `WARPSCOPE_SHARDS`, which the Job sets to its `completions`). None outside both; the
    /// string says where the shard came from.
    pub fn from_env(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<(Shard, String)>, StudyError> {
        let num = |name: &'static str| -> Result<Option<u64>, StudyError> {
            match get(name) {
                None => Ok(None),
                Some(v) => v
                    .trim()
                    .parse::<u64>()
                    .map(Some)
                    .map_err(|_| StudyError::Config {
                        field: name,
                        value: v.clone(),
                        reason: "not a non-negative integer".into(),
                    }),
            }
        };
        let to_shard = |index: u64, count: u64| {
            Shard::new(
                u32::try_from(index).unwrap_or(u32::MAX),
                u32::try_from(count).unwrap_or(u32::MAX),
            )
        };
        if let Some(id) = num("SLURM_ARRAY_TASK_ID")? {
            let Some(count) = num("SLURM_ARRAY_TASK_COUNT")? else {
                return Err(StudyError::Config {
                    field: "SLURM_ARRAY_TASK_COUNT",
                    value: String::new(),
                    reason: "unset while SLURM_ARRAY_TASK_ID is set; pass --shard K/N".into(),
                });
            };
            let min = num("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            let shard = to_shard((id + 1).saturating_sub(min), count)?;
            return Ok(Some((
                shard,
                format!(
                    "SLURM_ARRAY_TASK_ID={id}, SLURM_ARRAY_TASK_MIN={min}, SLURM_ARRAY_TASK_COUNT={count}"
                ),
            )));
        }
        if let Some(idx) = num("JOB_COMPLETION_INDEX")? {
            let Some(count) = num("WARPSCOPE_SHARDS")? else {
                return Err(StudyError::Config {
                    field: "WARPSCOPE_SHARDS",
                    value: String::new(),
                    reason: "unset while JOB_COMPLETION_INDEX is set: set it to the Indexed \
                             Job's completions, or pass --shard K/N"
                        .into(),
                });
            };
            let shard = to_shard(idx + 1, count)?;
            return Ok(Some((
                shard,
                format!("JOB_COMPLETION_INDEX={idx}, WARPSCOPE_SHARDS={count}"),
            )));
        }
        Ok(None)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = StudyError;
    /// `K/N`, e.g. `2/3`.
    fn from_str(s: &str) -> Result<Shard, StudyError> {
        let (k, n) = s
            .split_once('/')
            .and_then(|(k, n)| Some((k.trim().parse().ok()?, n.trim().parse().ok()?)))
            .ok_or_else(|| StudyError::parse("shard", s, "expected K/N, e.g. 2/3"))?;
        Shard::new(k, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockShape, Scale, View};
    use std::collections::HashMap;

    fn cfg() -> SweepConfig {
        crate::demo_config(Path::new("out"), Scale::Quick).unwrap()
    }

    #[test]
    fn order_is_shapes_views_modes_with_hashes_per_run() {
        let plan = SweepPlan::new(&cfg()).unwrap();
        let names: Vec<&str> = plan.runs[..3].iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "128x1_v0-0-0_naive",
                "128x1_v0-0-0_fence",
                "128x1_v90-0-90_naive"
            ]
        );
        assert!(plan.runs.iter().enumerate().all(|(i, r)| r.index == i));
        let hashes: HashSet<&str> = plan.runs.iter().map(|r| r.hash.as_str()).collect();
        assert_eq!(hashes.len(), plan.runs.len(), "every run has its own hash");
        assert_eq!(plan.hash.len(), 64);
        assert_eq!(
            SweepPlan::new(&cfg()).unwrap(),
            plan,
            "the plan is deterministic"
        );
    }

    #[test]
    fn sampled_timing_is_another_plan_and_all_keeps_the_old_hash() {
        let a = SweepPlan::new(&cfg()).unwrap();
        let inputs = serde_json::to_string(&a.inputs).unwrap();
        assert!(!inputs.contains("time_warps"), "all is left out: {inputs}");
        let mut c = cfg();
        c.time_warps = "every:4".parse().unwrap();
        let b = SweepPlan::new(&c).unwrap();
        assert_ne!(a.hash, b.hash);
        assert_ne!(a.runs[0].hash, b.runs[0].hash);
        let d = a.differences(&b).join("; ");
        assert!(d.contains("time_warps"), "{d}");
        let mut e = cfg();
        e.time_accesses = "every:4".parse().unwrap();
        let f = SweepPlan::new(&e).unwrap();
        assert_ne!(a.hash, f.hash);
        assert!(f.differences(&a).join("; ").contains("time_accesses"));
    }

    #[test]
    fn a_changed_parameter_changes_the_hash_and_is_named() {
        let a = SweepPlan::new(&cfg()).unwrap();
        let mut c = cfg();
        c.emu_config = emulator::GpuConfig::preset("h100").unwrap();
        c.params.width = 64;
        let b = SweepPlan::new(&c).unwrap();
        assert_ne!(a.hash, b.hash);
        let d = a.differences(&b).join("; ");
        assert!(d.contains("preset: \"gtx480\" -> \"h100\""), "{d}");
        assert!(d.contains("params.width: "), "{d}");
        assert!(a.differences(&a).is_empty());
        assert!(d.contains("emu_config: "), "{d}");
        assert!(
            d.len() < 400,
            "a whole other configuration is summarised: {d}"
        );
        // the run hash follows the inputs too, but not the other runs of the sweep
        assert_ne!(a.runs[0].hash, b.runs[0].hash);
        let mut fewer = cfg();
        fewer.shapes.truncate(1);
        let f = SweepPlan::new(&fewer).unwrap();
        assert_ne!(f.hash, a.hash);
        assert_eq!(f.runs[0].hash, a.runs[0].hash);
        assert!(
            a.differences(&f)[0].starts_with("shapes: "),
            "{:?}",
            a.differences(&f)
        );
    }

    #[test]
    fn duplicate_views_and_shapes_are_refused_after_normalising() {
        let mut c = cfg();
        c.views = vec!["0,0,0".parse().unwrap(), "0.0,0,-0".parse().unwrap()];
        let e = SweepPlan::new(&c).unwrap_err().to_string();
        assert!(e.contains("views") && e.contains("given twice"), "{e}");
        let mut c = cfg();
        c.shapes = vec![BlockShape::new(16, 8), BlockShape::new(16, 8)];
        let e = SweepPlan::new(&c).unwrap_err().to_string();
        assert!(e.contains("shapes = 16x8"), "{e}");
        let mut c = cfg();
        c.views = vec![View::new(22.5, 0.0, 0.0), View::new(22.25, 0.0, 0.0)];
        assert!(SweepPlan::new(&c).is_ok(), "distinct views stay distinct");
    }

    #[test]
    fn shards_cover_every_run_once_and_parse_strictly() {
        for total in [0usize, 1, 2, 7, 32] {
            for n in 1..=9u32 {
                let mut seen = Vec::new();
                for k in 1..=n {
                    seen.extend(Shard::new(k, n).unwrap().range(total));
                }
                assert_eq!(
                    seen,
                    (0..total).collect::<Vec<_>>(),
                    "{total} runs, {n} shards"
                );
            }
        }
        assert_eq!("3/3".parse::<Shard>().unwrap(), Shard::new(3, 3).unwrap());
        for bad in ["0/3", "4/3", "1/0", "3", "a/b", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_scheduler_environment_names_the_shard() {
        let env = |pairs: &[(&str, &str)]| {
            let m: HashMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Shard::from_env(move |k| m.get(k).cloned())
        };
        assert_eq!(env(&[]).unwrap(), None);
        let (s, why) = env(&[
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s, Shard::new(1, 3).unwrap());
        assert!(why.contains("SLURM_ARRAY_TASK_ID=0"), "{why}");
        let (s, _) = env(&[
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s, Shard::new(3, 3).unwrap());
        let (s, _) = env(&[("JOB_COMPLETION_INDEX", "1"), ("WARPSCOPE_SHARDS", "4")])
            .unwrap()
            .unwrap();
        assert_eq!(s, Shard::new(2, 4).unwrap());
        let e = env(&[("JOB_COMPLETION_INDEX", "1")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("WARPSCOPE_SHARDS"), "{e}");
        let e = env(&[
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("shard") && e.contains("6/3"), "{e}");
    }
}
