//! A profiled program's files (`warpscope run`): what happened to each launch the injected
//! library saw ([`LaunchRecord`], one JSON object per line of [`LAUNCHES_FILE`], in launch
//! order), how often each kernel was launched ([`LaunchCounts`], [`COUNTS_FILE`], written as the
//! program exits), and the index the command writes when the program has ended
//! ([`ProgramIndex`], [`INDEX_FILE`]). The folders of profiled launches are ordinary run folders
//! (`trace.wst`, `run.json` with its `app` section).

use crate::TraceError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The launch records, in the run's result folder.
pub const LAUNCHES_FILE: &str = "launches.jsonl";
/// The launch counts, in the run's result folder.
pub const COUNTS_FILE: &str = "launch-counts.json";
/// The index, in the run's result folder.
pub const INDEX_FILE: &str = "index.json";

/// One launch of the program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchRecord {
    /// The launch's position among all the program's launches the library saw, from 0.
    pub seq: u64,
    /// The kernel as the PTX declares it, and demangled.
    pub kernel: String,
    pub demangled: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub outcome: Outcome,
}

/// What the library did with a launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case", deny_unknown_fields)]
pub enum Outcome {
    /// Launched with probes in place of the original: its folder in the run's result folder.
    Profiled {
        run: String,
        /// The PTX the probes went into (`compute_75`), which may be older than the SASS the
        /// program would have run.
        ptx_target: String,
        kernel_ms: f64,
    },
    /// Selected, but launched as it was.
    Unprofiled { reason: String },
    /// A later launch of a profiled kernel with the same grid and block, launched as it was and
    /// timed: the bare time beside the profiled one.
    Timed { kernel_ms: f64, of_run: String },
    /// Not selected, launched as it was.
    Passed,
}

/// How often the program launched each kernel (mangled name → launches), profiled or not.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchCounts {
    pub kernels: BTreeMap<String, u64>,
}

impl LaunchCounts {
    pub fn write(&self, path: &Path) -> Result<(), TraceError> {
        crate::write_json_atomic(path, self)
    }

    pub fn read(path: &Path) -> Result<LaunchCounts, TraceError> {
        read_json(path)
    }
}

/// Reads the launch records of a [`LAUNCHES_FILE`]; a line that does not read is an error naming
/// it (a program that was killed mid-line leaves its last line short: that one is dropped and
/// counted in the second value).
pub fn read_launch_records(path: &Path) -> Result<(Vec<LaunchRecord>, usize), TraceError> {
    let text = std::fs::read_to_string(path).map_err(|e| TraceError::io(path, e))?;
    let mut records = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_str(line) {
            Ok(r) => records.push(r),
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => return Ok((records, 1)),
            Err(source) => {
                return Err(TraceError::Corrupt {
                    path: path.to_path_buf(),
                    offset: i as u64 + 1,
                    what: format!("line {}: {source}", i + 1),
                });
            }
        }
    }
    Ok((records, 0))
}

/// What became of a profiled program, written by `warpscope run` once it has ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramIndex {
    /// The program and its arguments, as started.
    pub program: Vec<String>,
    /// Its exit code, or the signal that ended it.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Every launch record, in launch order.
    pub launches: Vec<LaunchRecord>,
    /// Launches per kernel (mangled), where the program exited through `exit`; `None` where it
    /// did not (killed, `_exit`), and only the records tell.
    pub counts: Option<BTreeMap<String, u64>>,
    /// A last launch record cut short (the program was killed while writing it).
    pub truncated_records: usize,
}

impl ProgramIndex {
    pub fn write(&self, path: &Path) -> Result<(), TraceError> {
        crate::write_json_atomic(path, self)
    }

    pub fn read(path: &Path) -> Result<ProgramIndex, TraceError> {
        read_json(path)
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, TraceError> {
    let text = std::fs::read_to_string(path).map_err(|e| TraceError::io(path, e))?;
    serde_json::from_str(&text).map_err(|source| TraceError::Json {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_last_line_is_counted_and_a_bad_middle_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(LAUNCHES_FILE);
        let r = LaunchRecord {
            seq: 0,
            kernel: "k".into(),
            demangled: "k".into(),
            grid: [1, 1, 1],
            block: [32, 1, 1],
            shared_bytes: 0,
            outcome: Outcome::Passed,
        };
        let line = serde_json::to_string(&r).unwrap();
        std::fs::write(&p, format!("{line}\n{}", &line[..10])).unwrap();
        assert_eq!(read_launch_records(&p).unwrap(), (vec![r], 1));
        std::fs::write(&p, format!("{}\n{line}\n", &line[..10])).unwrap();
        let e = read_launch_records(&p).unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn a_record_is_one_json_line_that_reads_back() {
        let r = LaunchRecord {
            seq: 3,
            kernel: "_Z6gatherPKfPfi".into(),
            demangled: "gather(float const*, float*, int)".into(),
            grid: [4, 1, 1],
            block: [128, 1, 1],
            shared_bytes: 0,
            outcome: Outcome::Unprofiled {
                reason: "SASS only".into(),
            },
        };
        let line = serde_json::to_string(&r).unwrap();
        assert!(!line.contains('\n'));
        assert!(line.contains("\"what\":\"unprofiled\""), "{line}");
        assert_eq!(serde_json::from_str::<LaunchRecord>(&line).unwrap(), r);
    }
}
