//! `sweep.csv`: one row per run of a sweep. The study crate writes it, the analysis reads it; both
//! go through [`SweepRow`], so the columns, their order and their types are defined here once.
//!
//! The columns are [`SweepRow`]'s fields, in their order, each documented there (and in
//! `docs/reference/sweep-csv.md`, generated from them). The hit rates and DRAM bytes mean the
//! same on both backends: the emulator's counters, Nsight Compute's on a GPU. An empty cell is a
//! value the backend could not measure.
//!
//! The reader takes the file as people and spreadsheets leave it, not only as the writer wrote it:
//! columns by name in any order, unknown columns ignored, a missing column other than
//! [`SweepRow::REQUIRED_COLUMNS`] unknown throughout, `nan`/`NA` and empty cells unknown, cells
//! trimmed, a count written as `12.0`. It refuses what would make the analysis wrong, naming the
//! file and line: a missing required column, a run listed twice, a `run` that is not a folder
//! name, a shape that is not `WIDTHxHEIGHT`, and a negative number in a column that counts, times
//! or rates something (the probe's error and bias and the truth's shift are signed).

use crate::TraceError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

/// The file name of the sweep table inside the sweep folder.
pub const SWEEP_CSV: &str = "sweep.csv";

/// One row of `sweep.csv`: one run of the sweep (`None` is an empty cell).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SweepRow {
    /// The run's folder inside the sweep folder, `SHAPE_vVIEW_MODE` (`16x8_v0-0-0_fence`).
    pub run: String,
    /// Where the run ran: `emu` or `gpu`.
    pub backend: String,
    /// The emulator preset (`gtx480`, `v100`, `a100`, `h100`, `h200`, or a `--config` file's
    /// `name`); empty where the run's run.json names none.
    pub preset: String,
    /// Block shape, `WIDTHxHEIGHT` (`16x8`).
    pub shape: String,
    /// Viewpoint: rotations about x, y and z in degrees (`0,0,0`).
    pub view: String,
    /// Probe mode: `off`, `naive`, `fence`, `dummy` or `auto`.
    pub mode: String,
    /// Kernel cycles (emulator: simulated; GPU: kernel time × clock).
    pub cycles: Option<u64>,
    /// Kernel time in milliseconds.
    pub kernel_ms: Option<f64>,
    /// Frames per second the kernel time allows (1000 ÷ `kernel_ms`).
    pub frame_rate: Option<f64>,
    /// Texture hit rate, 0–1, counted as Nsight Compute counts it on both backends (run.json's
    /// `tex_hit_rate`).
    pub tex_hit_rate: Option<f64>,
    /// Records the log had no room for.
    pub dropped_records: Option<u64>,
    /// What the probes cost: probed ÷ bare kernel time.
    pub overhead: Option<f64>,
    /// Resident blocks per SM of the bare build.
    pub occupancy_bare: Option<u64>,
    /// Resident blocks per SM of the probed build (with the probes' shared memory).
    pub occupancy_probed: Option<u64>,
    /// The bare build's texture hit rate, 0–1, beside `tex_hit_rate`: what probing changed.
    pub tex_hit_rate_bare: Option<f64>,
    /// Warp instructions executed (emulator only).
    pub warp_instructions: Option<u64>,
    /// Records kept in the run's trace.
    pub records: Option<u64>,
    /// Whether the probed build's image equals the bare build's, byte for byte.
    pub image_matches_bare: Option<bool>,
    /// L2 hit rate, 0–1.
    pub l2_hit_rate: Option<f64>,
    /// Bytes moved between the L2 and DRAM, read and written.
    pub dram_bytes: Option<u64>,
    /// The bare build's L2 hit rate, 0–1.
    pub l2_hit_rate_bare: Option<f64>,
    /// The bare build's bytes between the L2 and DRAM.
    pub dram_bytes_bare: Option<u64>,
    /// What the probe adds or misses, over the timed warps' accesses: (probe mean − true
    /// mean) ÷ true mean (run.json's `truth.run.probe_error`; emulator only). 0.05 reads 5 %
    /// long; the naive probe's is near −1, as it misses the access's time.
    pub probe_error: Option<f64>,
    /// Probe mean − true mean over the same accesses, in cycles (emulator only).
    pub probe_bias_cycles: Option<f64>,
    /// How much measuring changed the accesses' own time: (true mean of the probed run − true
    /// mean of the same accesses in the bare run) ÷ the latter (emulator only).
    pub truth_shift: Option<f64>,
    /// Achieved occupancy, 0–1: warps resident per active cycle of an SM over its warp slots
    /// (run.json's `achieved_occupancy`; Nsight Compute's on a GPU).
    pub achieved_occupancy: Option<f64>,
    /// The bare build's achieved occupancy, 0–1.
    pub achieved_occupancy_bare: Option<f64>,
    /// How much measuring changed every load's time, timed or not: (mean true time of the
    /// probed run's loads − the bare run's) ÷ the latter (run.json's `truth.load_shift`;
    /// emulator only). Near 0 where `truth_shift` is not, the probes moved only the accesses
    /// they timed.
    pub load_shift: Option<f64>,
    /// The SM clock the run's profiled launch ran at, MHz (run.json's `sm_clock_mhz`; Nsight
    /// Compute's on a GPU, empty on the emulator, whose clock is its preset's).
    pub sm_clock_mhz: Option<f64>,
    /// The SM clock the bare build's profiled launch ran at, MHz.
    pub sm_clock_mhz_bare: Option<f64>,
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

    /// Reads a `sweep.csv` (see the module docs for what it accepts and refuses).
    pub fn read_csv(path: &Path) -> Result<Vec<SweepRow>, TraceError> {
        let bad = |line: u64, reason: String| TraceError::SweepCsv {
            path: path.to_path_buf(),
            line,
            reason,
        };
        let csv_bad =
            |line: u64, e: csv::Error| bad(e.position().map_or(line, |p| p.line()), e.to_string());
        let file = std::fs::File::open(path).map_err(|e| TraceError::io(path, e))?;
        let mut rdr = csv::ReaderBuilder::new()
            .has_headers(true)
            .from_reader(file);
        let headers: Vec<String> = (rdr.headers().map_err(|e| csv_bad(1, e))?.iter())
            .map(|h| h.trim().to_string())
            .collect();
        let col = |name: &str| headers.iter().position(|h| h == name);
        if let Some(missing) = Self::REQUIRED_COLUMNS.iter().find(|c| col(c).is_none()) {
            return Err(bad(
                1,
                format!("no `{missing}` column (header: {})", headers.join(",")),
            ));
        }
        // Where each field's cells are, found once.
        let at: Vec<Option<usize>> = (SweepRow::default().cells().iter())
            .map(|(name, _)| col(name))
            .collect();
        let mut rows = Vec::new();
        let mut seen = HashMap::new();
        for (i, rec) in rdr.records().enumerate() {
            let rec = rec.map_err(|e| csv_bad(i as u64 + 2, e))?;
            let line = rec.position().map_or(i as u64 + 2, |p| p.line());
            let mut row = SweepRow::default();
            for ((name, cell), at) in row.cells().into_iter().zip(&at) {
                let text = at.and_then(|c| rec.get(c)).unwrap_or_default().trim();
                cell.read(text)
                    .map_err(|reason| bad(line, format!("column `{name}`: {reason}")))?;
            }
            if row.run.is_empty()
                || row.run.contains(['/', '\\'])
                || [".", ".."].contains(&row.run.as_str())
            {
                return Err(bad(
                    line,
                    format!(
                        "`run` must name a folder inside the sweep, got {:?}",
                        row.run
                    ),
                ));
            }
            if parse_shape(&row.shape).is_none() {
                return Err(bad(
                    line,
                    format!(
                        "column `shape`: {:?} is not WIDTHxHEIGHT (e.g. 16x8)",
                        row.shape
                    ),
                ));
            }
            if let Some(first) = seen.insert(row.run.clone(), line) {
                return Err(bad(
                    line,
                    format!("run {:?} is listed twice (first on line {first})", row.run),
                ));
            }
            rows.push(row);
        }
        Ok(rows)
    }

    /// Every column with the field its cells go to, in the writer's column order; the one place
    /// the reader names columns (a test holds it to the writer's header).
    fn cells(&mut self) -> [(&'static str, Cell<'_>); 30] {
        [
            ("run", Cell::Text(&mut self.run)),
            ("backend", Cell::Text(&mut self.backend)),
            ("preset", Cell::Text(&mut self.preset)),
            ("shape", Cell::Text(&mut self.shape)),
            ("view", Cell::Text(&mut self.view)),
            ("mode", Cell::Text(&mut self.mode)),
            ("cycles", Cell::Count(&mut self.cycles)),
            ("kernel_ms", Cell::Number(&mut self.kernel_ms)),
            ("frame_rate", Cell::Number(&mut self.frame_rate)),
            ("tex_hit_rate", Cell::Number(&mut self.tex_hit_rate)),
            ("dropped_records", Cell::Count(&mut self.dropped_records)),
            ("overhead", Cell::Number(&mut self.overhead)),
            ("occupancy_bare", Cell::Count(&mut self.occupancy_bare)),
            ("occupancy_probed", Cell::Count(&mut self.occupancy_probed)),
            (
                "tex_hit_rate_bare",
                Cell::Number(&mut self.tex_hit_rate_bare),
            ),
            (
                "warp_instructions",
                Cell::Count(&mut self.warp_instructions),
            ),
            ("records", Cell::Count(&mut self.records)),
            (
                "image_matches_bare",
                Cell::Flag(&mut self.image_matches_bare),
            ),
            ("l2_hit_rate", Cell::Number(&mut self.l2_hit_rate)),
            ("dram_bytes", Cell::Count(&mut self.dram_bytes)),
            ("l2_hit_rate_bare", Cell::Number(&mut self.l2_hit_rate_bare)),
            ("dram_bytes_bare", Cell::Count(&mut self.dram_bytes_bare)),
            ("probe_error", Cell::Signed(&mut self.probe_error)),
            (
                "probe_bias_cycles",
                Cell::Signed(&mut self.probe_bias_cycles),
            ),
            ("truth_shift", Cell::Signed(&mut self.truth_shift)),
            (
                "achieved_occupancy",
                Cell::Number(&mut self.achieved_occupancy),
            ),
            (
                "achieved_occupancy_bare",
                Cell::Number(&mut self.achieved_occupancy_bare),
            ),
            ("load_shift", Cell::Signed(&mut self.load_shift)),
            ("sm_clock_mhz", Cell::Number(&mut self.sm_clock_mhz)),
            (
                "sm_clock_mhz_bare",
                Cell::Number(&mut self.sm_clock_mhz_bare),
            ),
        ]
    }
}

/// Where one cell of a row goes, and how its text reads.
enum Cell<'a> {
    Text(&'a mut String),
    Count(&'a mut Option<u64>),
    Number(&'a mut Option<f64>),
    /// A difference or an error, which may be negative.
    Signed(&'a mut Option<f64>),
    Flag(&'a mut Option<bool>),
}

impl Cell<'_> {
    /// Stores the (trimmed) cell text; the error says why it cannot be this column's value.
    fn read(self, text: &str) -> Result<(), String> {
        match self {
            Cell::Text(s) => *s = text.to_string(),
            Cell::Number(v) => *v = unsigned(text)?,
            Cell::Signed(v) => *v = number(text)?,
            Cell::Count(v) => {
                *v = match text.parse::<u64>() {
                    Ok(n) => Some(n),
                    // A spreadsheet may have written a count as `12.0`.
                    Err(_) => match unsigned(text)? {
                        Some(x) if x.fract() != 0.0 || x > u64::MAX as f64 => {
                            return Err(format!("{x} is not a whole number"));
                        }
                        x => x.map(|x| x as u64),
                    },
                }
            }
            Cell::Flag(v) => {
                *v = match text.to_ascii_lowercase().as_str() {
                    "true" => Some(true),
                    "false" => Some(false),
                    t if unknown(t) => None,
                    other => return Err(format!("{other:?} is not true or false")),
                }
            }
        }
        Ok(())
    }
}

/// An empty cell, or `nan`/`NA` as spreadsheets write it: a value nobody measured.
fn unknown(text: &str) -> bool {
    text.is_empty() || text.eq_ignore_ascii_case("nan") || text.eq_ignore_ascii_case("na")
}

/// A number, or `None` for an unknown cell.
fn number(text: &str) -> Result<Option<f64>, String> {
    if unknown(text) {
        return Ok(None);
    }
    text.parse()
        .map(Some)
        .map_err(|_| format!("{text:?} is not a number"))
}

/// A number that is not negative, or `None` for an unknown cell.
fn unsigned(text: &str) -> Result<Option<f64>, String> {
    match number(text)? {
        Some(x) if x < 0.0 => Err(format!("{x} is negative")),
        x => Ok(x),
    }
}

/// A block shape `WIDTHxHEIGHT` of positive integers.
fn parse_shape(s: &str) -> Option<(u32, u32)> {
    let (x, y) = s.split_once('x')?;
    let (x, y): (u32, u32) = (x.trim().parse().ok()?, y.trim().parse().ok()?);
    (x > 0 && y > 0).then_some((x, y))
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
            l2_hit_rate: Some(0.25),
            dram_bytes: Some(4096),
            l2_hit_rate_bare: None,
            dram_bytes_bare: Some(2048),
            probe_error: Some(-0.875),
            probe_bias_cycles: Some(-350.0),
            truth_shift: None,
            load_shift: Some(-0.0625),
            achieved_occupancy: Some(0.375),
            achieved_occupancy_bare: None,
            sm_clock_mhz: Some(1755.0),
            sm_clock_mhz_bare: None,
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
            "run,backend,preset,shape,view,mode,cycles,kernel_ms,frame_rate,tex_hit_rate,dropped_records,overhead,occupancy_bare,occupancy_probed,tex_hit_rate_bare,warp_instructions,records,image_matches_bare,l2_hit_rate,dram_bytes,l2_hit_rate_bare,dram_bytes_bare,probe_error,probe_bias_cycles,truth_shift,achieved_occupancy,achieved_occupancy_bare,load_shift,sm_clock_mhz,sm_clock_mhz_bare\n"
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

    fn read(text: &str) -> Result<Vec<SweepRow>, TraceError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(SWEEP_CSV);
        std::fs::write(&p, text).unwrap();
        SweepRow::read_csv(&p)
    }

    #[test]
    fn the_reader_knows_every_column_the_writer_writes() {
        let text = String::from_utf8(SweepRow::to_csv(&[row("a")]).unwrap()).unwrap();
        let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
        let names: Vec<&str> = SweepRow::default().cells().iter().map(|c| c.0).collect();
        assert_eq!(names, header);
    }

    #[test]
    fn parses_rows_by_column_name_with_empty_cells() {
        let rows = read(
            "mode,run,shape,view,cycles,tex_hit_rate,frame_rate\nfence,a,16x8,\"0,0,0\",,,12.5\nnaive,b,8x16,\"90,0,90\",7,0.5,nan\n",
        )
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].run, "a");
        assert_eq!(rows[0].view, "0,0,0");
        assert_eq!(rows[0].tex_hit_rate, None);
        assert_eq!(rows[0].frame_rate, Some(12.5));
        assert_eq!(rows[1].tex_hit_rate, Some(0.5));
        assert_eq!(rows[1].frame_rate, None);
        // Trimmed cells, a count written as 12.0, a flag in capitals, unknown columns.
        let rows = read(
            "run,shape,view,mode,cycles,image_matches_bare,note\n a ,1x1,0,fence,12.0,TRUE,x\n",
        )
        .unwrap();
        assert_eq!(
            (
                rows[0].run.as_str(),
                rows[0].cycles,
                rows[0].image_matches_bare
            ),
            ("a", Some(12), Some(true))
        );
    }

    #[test]
    fn rejects_rows_that_are_not_a_sweeps() {
        let e = read("run,shape\nx,1x1\n").unwrap_err().to_string();
        assert!(e.contains("`view`"), "{e}");
        let e = read("run,shape,view,mode,cycles\nx,1x1,0,fence,lots\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("cycles"), "{e}");
        assert!(read("run,shape,view,mode,cycles\n../x,1x1,0,fence,1\n").is_err());
        let e = read("run,shape,view,mode,cycles\na,1x1,0,fence,2.5\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("column `cycles`: 2.5 is not a whole number"),
            "{e}"
        );
    }

    /// Each damaged sweep.csv is refused with the file, the line and the column or run.
    #[test]
    fn refuses_duplicates_missing_columns_negative_counts_and_bad_shapes() {
        let head = "run,shape,view,mode,cycles\n";
        let cases = [
            (
                format!("{head}a,16x8,0,fence,10\nb,8x16,0,fence,10\na,16x8,0,fence,10\n"),
                &[
                    "sweep.csv",
                    "line 4",
                    "\"a\" is listed twice (first on line 2)",
                ][..],
            ),
            (
                "run,shape,view,mode\na,16x8,0,fence\n".to_string(),
                &["sweep.csv", "no `cycles` column"][..],
            ),
            (
                format!("{head}a,16x8,0,fence,-5\n"),
                &["line 2", "column `cycles`: -5 is negative"][..],
            ),
            (
                format!("{head}a,16by8,0,fence,5\n"),
                &["line 2", "column `shape`", "16by8"][..],
            ),
        ];
        for (text, wants) in cases {
            let e = read(&text).unwrap_err().to_string();
            for w in wants {
                assert!(e.contains(w), "{text:?}: {e} should contain {w:?}");
            }
        }
    }
}
