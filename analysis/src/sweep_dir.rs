//! A sweep folder as every part of the analysis opens it: its `sweep.csv`, read by the one reader
//! ([`trace::SweepRow::read_csv`]), with a folder that is not a sweep refused saying why.

use crate::AnalysisError;
use std::path::Path;
use trace::SweepRow;

/// Reads `dir/sweep.csv`; a missing folder or file, or a file that lists no run, is not a sweep.
pub(crate) fn read_sweep_csv(dir: &Path) -> Result<Vec<SweepRow>, AnalysisError> {
    let not_sweep = |reason: &str| AnalysisError::NotASweep {
        path: dir.to_path_buf(),
        reason: reason.to_string(),
    };
    if !dir.is_dir() {
        return Err(not_sweep("no such directory"));
    }
    let path = dir.join(trace::SWEEP_CSV);
    if !path.is_file() {
        return Err(not_sweep("it has no sweep.csv"));
    }
    let rows = SweepRow::read_csv(&path)?;
    if rows.is_empty() {
        return Err(not_sweep("sweep.csv lists no runs"));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_non_sweeps_with_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_sweep_csv(dir.path()).unwrap_err().to_string();
        assert!(e.contains("no sweep.csv"), "{e}");
        let e = read_sweep_csv(&dir.path().join("gone"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no such directory"), "{e}");
        std::fs::write(dir.path().join("sweep.csv"), "run,shape,view,mode,cycles\n").unwrap();
        let e = read_sweep_csv(dir.path()).unwrap_err().to_string();
        assert!(e.contains("lists no runs"), "{e}");
        // The reader's own refusals come through with the file and the line.
        std::fs::write(
            dir.path().join("sweep.csv"),
            "run,shape,view,mode,cycles\nx,1x1,0,fence,lots\n",
        )
        .unwrap();
        let e = read_sweep_csv(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("sweep.csv: line 2") && e.contains("cycles"),
            "{e}"
        );
    }
}
