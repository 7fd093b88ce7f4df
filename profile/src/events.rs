//! What happened to each launch the injected library saw, one JSON object per line of
//! [`crate::LAUNCHES_FILE`], in the order of the launches: profiled (and where its result folder
//! is), launched as it was and why, or timed as it was to say what profiling cost.

use crate::ProfileError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The file of [`LaunchCounts`] in the run's result folder, written as the program exits.
pub const COUNTS_FILE: &str = "launch-counts.json";

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
    pub fn write(&self, path: &Path) -> Result<(), ProfileError> {
        Ok(trace::write_json_atomic(path, self)?)
    }

    pub fn read(path: &Path) -> Result<LaunchCounts, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        serde_json::from_str(&text)
            .map_err(|e| ProfileError::Config(format!("{}: {e}", path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
