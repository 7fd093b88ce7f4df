//! A run folder's completion marker, `complete.json`: written last, after every file of the run,
//! it names the run, its input hash ([`crate::PlannedRun::hash`]) and the size of each file the
//! render wrote. A folder is a finished run only when the marker is there, its hash is the planned
//! run's, every listed file has its recorded size, `run.json` reads and `trace.wst` has its
//! footer. Anything else — an interrupted render, a truncated copy, a folder from other inputs or
//! from a warpscope without markers — is redone by the next sweep, and `merge` refuses it.
//!
//! Exports written after the render (`trace.csv`, …) are not listed: they are rewritten from the
//! trace on every sweep.

use crate::StudyError;
use crate::plan::PlannedRun;
use serde::{Deserialize, Serialize};
use std::path::Path;
use trace::{RunMetrics, TRACE_FILE_NAME, TraceReader};

/// The marker's file name inside a run folder.
pub const COMPLETE_JSON: &str = "complete.json";

/// The files a render writes, those of them present are listed in the marker.
const RENDER_FILES: [&str; 4] = [
    trace::RUN_FILE_NAME,
    "image.png",
    "config.toml",
    TRACE_FILE_NAME,
];

/// `complete.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunMarker {
    pub run: String,
    pub hash: String,
    pub files: Vec<MarkedFile>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkedFile {
    pub name: String,
    pub bytes: u64,
}

/// What a run folder holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunState {
    /// No folder, or an empty one.
    Missing,
    Complete,
    /// Something is there but not a finished run of these inputs; the reason says what.
    Incomplete(String),
}

impl RunMarker {
    /// Reads `dir/complete.json`.
    pub fn read(dir: &Path) -> Result<RunMarker, StudyError> {
        let path = dir.join(COMPLETE_JSON);
        let bytes = std::fs::read(&path).map_err(|e| StudyError::io(&path, e))?;
        serde_json::from_slice(&bytes).map_err(|e| StudyError::BadFile {
            path,
            reason: e.to_string(),
        })
    }

    /// Lists the render's files in `dir` and writes the marker, atomically, last.
    pub fn write_for(dir: &Path, run: &PlannedRun) -> Result<RunMarker, StudyError> {
        let mut files = Vec::new();
        for name in RENDER_FILES {
            let p = dir.join(name);
            match std::fs::metadata(&p) {
                Ok(m) => files.push(MarkedFile {
                    name: name.to_string(),
                    bytes: m.len(),
                }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(StudyError::io(&p, e)),
            }
        }
        let marker = RunMarker {
            run: run.name.clone(),
            hash: run.hash.clone(),
            files,
        };
        trace::write_json_atomic(&dir.join(COMPLETE_JSON), &marker)?;
        Ok(marker)
    }
}

/// Removes a stale marker before a run is redone, so an interrupted redo is not taken as done.
pub fn clear_marker(dir: &Path) -> Result<(), StudyError> {
    let p = dir.join(COMPLETE_JSON);
    match std::fs::remove_file(&p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StudyError::io(&p, e)),
    }
}

/// Whether `dir` holds a finished run of `run` (see the module documentation).
pub fn run_state(dir: &Path, run: &PlannedRun) -> RunState {
    let empty = std::fs::read_dir(dir).map_or(true, |mut d| d.next().is_none());
    if empty {
        return RunState::Missing;
    }
    if !dir.join(COMPLETE_JSON).exists() {
        return RunState::Incomplete(format!(
            "no {COMPLETE_JSON} (the run was interrupted, or written by an older warpscope)"
        ));
    }
    let marker = match RunMarker::read(dir) {
        Ok(m) => m,
        Err(e) => return RunState::Incomplete(e.to_string()),
    };
    if marker.hash != run.hash || marker.run != run.name {
        return RunState::Incomplete(format!(
            "{COMPLETE_JSON} is of run {} with input hash {}, not of these inputs ({})",
            marker.run, marker.hash, run.hash
        ));
    }
    for f in &marker.files {
        let p = dir.join(&f.name);
        match std::fs::metadata(&p) {
            Ok(m) if m.len() == f.bytes => {}
            Ok(m) => {
                return RunState::Incomplete(format!(
                    "{} has {} bytes, {} when the run finished (truncated or replaced)",
                    p.display(),
                    m.len(),
                    f.bytes
                ));
            }
            Err(e) => return RunState::Incomplete(format!("{}: {e}", p.display())),
        }
    }
    if let Err(e) = RunMetrics::read(&dir.join(trace::RUN_FILE_NAME)) {
        return RunState::Incomplete(e.to_string());
    }
    let trace = dir.join(TRACE_FILE_NAME);
    if marker.files.iter().any(|f| f.name == TRACE_FILE_NAME)
        && let Err(e) = TraceReader::open(&trace)
    {
        return RunState::Incomplete(e.to_string());
    }
    RunState::Complete
}
