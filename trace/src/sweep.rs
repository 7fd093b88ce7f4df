//! `sweep.csv`: one row per run of a sweep. The study crate writes it, the analysis reads it; both
//! go through [`SweepRow`], so the columns, their order and their types are defined here once.
//!
//! Columns, in order: `run` (folder name, `16x8_v0-0-0_fence`), `backend`, `preset`, `shape`,
//! `view`, `mode`, `cycles`, `kernel_ms`, `frame_rate`, `tex_hit_rate` (0–1, counted thread by
//! thread as Nsight Compute counts it, on both backends: see `RunMetrics::tex_hit_rate`), `dropped_records`,
//! `overhead` (probed ÷ bare kernel time), `occupancy_bare`, `occupancy_probed` (resident blocks
//! per SM), `tex_hit_rate_bare` (the bare build's, 0–1), `warp_instructions`, `records`,
//! `image_matches_bare`. An empty cell is a value the backend could not measure.

use crate::TraceError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The file name of the sweep table inside the sweep folder.
pub const SWEEP_CSV: &str = "sweep.csv";

/// One row of `sweep.csv` (`None` is an empty cell).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    pub run: String,
    pub backend: String,
    pub preset: String,
    pub shape: String,
    pub view: String,
    pub mode: String,
    pub cycles: Option<u64>,
    pub kernel_ms: Option<f64>,
    pub frame_rate: Option<f64>,
    pub tex_hit_rate: Option<f64>,
    pub dropped_records: Option<u64>,
    pub overhead: Option<f64>,
    pub occupancy_bare: Option<u64>,
    pub occupancy_probed: Option<u64>,
    /// The bare build's texture hit rate (emulator), beside `tex_hit_rate`: what probing changed.
    pub tex_hit_rate_bare: Option<f64>,
    pub warp_instructions: Option<u64>,
    pub records: Option<u64>,
    pub image_matches_bare: Option<bool>,
}

impl SweepRow {
    /// The columns a reader cannot do without; the others may be missing (unknown).
    pub const REQUIRED_COLUMNS: [&'static str; 5] = ["run", "shape", "view", "mode", "cycles"];

    /// The rows as CSV bytes: the header from the fields, in order; `None` as an empty cell.
    pub fn to_csv(rows: &[SweepRow]) -> Result<Vec<u8>, csv::Error> {
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in rows {
            w.serialize(r)?;
        }
        w.into_inner().map_err(|e| e.into_error().into())
    }

    /// Writes the rows to `path` as CSV, atomically.
    pub fn write_csv(path: &Path, rows: &[SweepRow]) -> Result<(), TraceError> {
        let bytes = SweepRow::to_csv(rows).map_err(|e| TraceError::Output {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        crate::write_bytes_atomic(path, &bytes)
    }

    /// Reads a `sweep.csv` exactly as [`SweepRow::write_csv`] writes it (columns by name). The
    /// analysis reads more leniently (`nan`, missing optional columns) on top of the same type.
    pub fn read_csv(path: &Path) -> Result<Vec<SweepRow>, TraceError> {
        let corrupt = |e: csv::Error| TraceError::Corrupt {
            path: path.to_path_buf(),
            offset: e.position().map(|p| p.byte()).unwrap_or(0),
            what: e.to_string(),
        };
        let mut rdr = csv::Reader::from_path(path).map_err(corrupt)?;
        rdr.deserialize().map(|r| r.map_err(corrupt)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(run: &str) -> SweepRow {
        SweepRow {
            run: run.into(),
            backend: "emu".into(),
            preset: "gtx480".into(),
            shape: "16x8".into(),
            view: "90,0,90".into(),
            mode: "fence".into(),
            cycles: Some(1234),
            kernel_ms: Some(0.5),
            frame_rate: Some(2000.0),
            tex_hit_rate: None,
            dropped_records: Some(0),
            overhead: Some(1.25),
            occupancy_bare: Some(8),
            occupancy_probed: Some(5),
            tex_hit_rate_bare: Some(0.5),
            warp_instructions: None,
            records: Some(10),
            image_matches_bare: Some(true),
        }
    }

    #[test]
    fn sweep_csv_round_trips_with_empty_cells_for_none() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(SWEEP_CSV);
        let mut b = row("8x16_v0-0-0_naive");
        b.cycles = None;
        b.image_matches_bare = None;
        let rows = vec![row("16x8_v90-0-90_fence"), b];
        SweepRow::write_csv(&p, &rows).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with(
            "run,backend,preset,shape,view,mode,cycles,kernel_ms,frame_rate,tex_hit_rate,dropped_records,overhead,occupancy_bare,occupancy_probed,tex_hit_rate_bare,warp_instructions,records,image_matches_bare\n"
        ), "{text}");
        assert!(text.contains("\"90,0,90\""), "{text}");
        assert_eq!(SweepRow::read_csv(&p).unwrap(), rows);
    }

    #[test]
    fn the_required_columns_are_fields_of_the_row() {
        let header = String::from_utf8(SweepRow::to_csv(&[row("a")]).unwrap()).unwrap();
        let header: Vec<&str> = header.lines().next().unwrap().split(',').collect();
        for c in SweepRow::REQUIRED_COLUMNS {
            assert!(header.contains(&c), "{c} not in {header:?}");
        }
    }

    #[test]
    fn a_negative_count_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(SWEEP_CSV);
        let mut text = String::from_utf8(SweepRow::to_csv(&[row("a")]).unwrap()).unwrap();
        text = text.replace(",1234,", ",-1234,");
        std::fs::write(&p, text).unwrap();
        let e = SweepRow::read_csv(&p).unwrap_err().to_string();
        assert!(e.contains("sweep.csv"), "{e}");
    }
}
