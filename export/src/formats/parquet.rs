//! Parquet export of a trace's records, for dataframe users and for engines such as
//! Spark or DuckDB. Behind the default-on cargo feature `parquet`, so a lean build (the GPU
//! bundle) can leave polars out.
//!
//! One row per record, in the records CSV's columns (`trace::RECORD_COLUMNS`, meanings on
//! `RecordRow`), typed as [`parquet_columns`] lists them.
//!
//! Records stream in batches of [`BATCH_ROWS`] rows, each written as a row group with Snappy
//! compression; at most one batch is in memory. The file is written under a temp name and
//! renamed when complete.
//!
//! Measured with `examples/parquet_scale.rs` (release build, on the 2-core development machine
//! while other builds ran): 10⁸ records in 47 s (2.2 M records/s), 6.3 bytes per record on disk,
//! peak RSS 192 MiB; 10⁷ records peak at 166 MiB, so memory does not grow with the trace.

use crate::ExportError;
use polars::prelude::*;
use std::path::Path;
use trace::{RECORD_COLUMNS, TraceReader};

/// The usual name of the Parquet file in a run folder.
pub const PARQUET_FILE_NAME: &str = "records.parquet";

/// What the Parquet file holds and what reads it, in words (as [`crate::Format::contents`]).
pub const PARQUET_CONTENTS: &str =
    "one typed row per record, for dataframe tools (polars, pandas, DuckDB, Spark)";

/// Rows per batch (one row group each): about 64 bytes a row in the column buffers, so ~32 MiB,
/// plus polars' copy while encoding. A batch closes at the first warp boundary past this count,
/// so it may exceed it by one warp's records.
pub const BATCH_ROWS: usize = 1 << 19;

#[derive(Default)]
struct Batch {
    launch: Vec<u32>,
    block_x: Vec<u32>,
    block_y: Vec<u32>,
    block_z: Vec<u32>,
    warp: Vec<u32>,
    global_warp: Vec<u32>,
    sm: Vec<u32>,
    hw_warp: Vec<u32>,
    site: Vec<u16>,
    seq: Vec<u32>,
    start: Vec<u64>,
    end: Vec<u64>,
    duration: Vec<u64>,
    wrapped: Vec<bool>,
}

/// Site names and regions (the launch's, or made up for undeclared sites), so that the string
/// columns are built from the site column at frame time instead of holding a string per row.
struct SiteText {
    names: std::collections::BTreeMap<u16, (String, &'static str)>,
}

impl SiteText {
    fn note(&mut self, launch: &trace::LaunchInfo, site: u16) {
        self.names
            .entry(site)
            .or_insert_with(|| match launch.site(site) {
                Some(s) => (s.name.clone(), s.region.name()),
                None => (format!("site {site}"), ""),
            });
    }

    fn name(&self, site: u16) -> &str {
        self.names.get(&site).map_or("", |n| n.0.as_str())
    }

    fn region(&self, site: u16) -> &'static str {
        self.names.get(&site).map_or("", |n| n.1)
    }
}

impl Batch {
    fn len(&self) -> usize {
        self.seq.len()
    }

    fn take_frame(&mut self, text: &SiteText, mode: &str) -> PolarsResult<DataFrame> {
        let b = std::mem::take(self);
        let h = b.len();
        let site_name: Vec<&str> = b.site.iter().map(|&s| text.name(s)).collect();
        let region: Vec<&str> = b.site.iter().map(|&s| text.region(s)).collect();
        let mode = vec![mode; h];
        // In the order of `trace::RECORD_COLUMNS`, which names them.
        let data = [
            Column::new(PlSmallStr::EMPTY, b.launch),
            Column::new(PlSmallStr::EMPTY, b.block_x),
            Column::new(PlSmallStr::EMPTY, b.block_y),
            Column::new(PlSmallStr::EMPTY, b.block_z),
            Column::new(PlSmallStr::EMPTY, b.warp),
            Column::new(PlSmallStr::EMPTY, b.global_warp),
            Column::new(PlSmallStr::EMPTY, b.sm),
            Column::new(PlSmallStr::EMPTY, b.hw_warp),
            Column::new(PlSmallStr::EMPTY, b.site),
            Column::new(PlSmallStr::EMPTY, site_name),
            Column::new(PlSmallStr::EMPTY, region),
            Column::new(PlSmallStr::EMPTY, b.seq),
            Column::new(PlSmallStr::EMPTY, b.start),
            Column::new(PlSmallStr::EMPTY, b.end),
            Column::new(PlSmallStr::EMPTY, b.duration),
            Column::new(PlSmallStr::EMPTY, mode),
            Column::new(PlSmallStr::EMPTY, b.wrapped),
        ];
        let columns = data
            .into_iter()
            .zip(RECORD_COLUMNS)
            .map(|(c, name)| c.with_name(name.into()))
            .collect();
        DataFrame::new(h, columns)
    }
}

/// The column types, in the order of `trace::RECORD_COLUMNS`.
fn schema() -> Schema {
    use DataType::{Boolean, String, UInt16, UInt32, UInt64};
    let types = [
        UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, // launch .. hw_warp
        UInt16, String, String, UInt32, // site, site_name, region, seq
        UInt64, UInt64, UInt64, String, Boolean, // start, end, duration, mode, wrapped
    ];
    Schema::from_iter(
        RECORD_COLUMNS
            .iter()
            .zip(types)
            .map(|(name, t)| Field::new((*name).into(), t)),
    )
}

/// The file's columns in order, each with its type as polars names it (`u32`, `str`, `bool`):
/// the schema for readers that do not link polars.
pub fn parquet_columns() -> Vec<(String, String)> {
    (schema().iter_fields())
        .map(|f| (f.name().to_string(), f.dtype().to_string()))
        .collect()
}

/// Writes every record of `reader` to the Parquet file `out` (atomically) and returns the number
/// of rows written.
pub fn write_parquet(reader: &TraceReader, out: &Path) -> Result<u64, ExportError> {
    trace::check_output_against(out, &[reader.path()])?;
    crate::write_atomic(out, |w| write_to(reader, w, out, BATCH_ROWS))
}

fn write_to(
    reader: &TraceReader,
    buffered: &mut std::io::BufWriter<std::fs::File>,
    out: &Path,
    batch_rows: usize,
) -> Result<u64, ExportError> {
    let pe = |source: PolarsError| ExportError::Parquet {
        path: out.to_path_buf(),
        source,
    };
    let launch = reader.launch();
    let mode = launch.mode.name();
    let mut text = SiteText {
        names: Default::default(),
    };
    let mut writer = ParquetWriter::new(buffered)
        .with_compression(ParquetCompression::Snappy)
        .batched(&schema())
        .map_err(pe)?;
    let mut batch = Batch::default();
    let mut rows = 0u64;
    for w in reader.warps()? {
        let w = w?;
        for r in &w.records {
            text.note(launch, r.site);
            batch.launch.push(launch.launch);
            batch.block_x.push(w.block[0]);
            batch.block_y.push(w.block[1]);
            batch.block_z.push(w.block[2]);
            batch.warp.push(w.warp);
            batch.global_warp.push(w.global_warp);
            batch.sm.push(w.sm.0);
            batch.hw_warp.push(w.hw_warp);
            batch.site.push(r.site);
            batch.seq.push(r.seq);
            batch.start.push(r.start.0);
            batch.end.push(r.end.0);
            batch.duration.push(r.duration().0);
            batch.wrapped.push(r.wrapped());
        }
        if batch.len() >= batch_rows {
            rows += batch.len() as u64;
            writer
                .write_batch(&batch.take_frame(&text, mode).map_err(pe)?)
                .map_err(pe)?;
        }
    }
    if batch.len() > 0 {
        rows += batch.len() as u64;
        writer
            .write_batch(&batch.take_frame(&text, mode).map_err(pe)?)
            .map_err(pe)?;
    }
    writer.finish().map_err(pe)?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::{Cycles, Dim3, LaunchInfo, Record, SmId, Trace, TraceWriter, WarpTrace};

    #[test]
    fn many_small_batches_keep_every_record_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let launch = LaunchInfo::new("k", Dim3::new(1, 1, 1), Dim3::new(32, 1, 1));
        let warps = (0..6u32)
            .map(|g| {
                let mut w = WarpTrace::new([g, 0, 0], 0, g, SmId(g));
                w.records = (0..(g * 3 + 1))
                    .map(|k| Record {
                        site: (k % 3) as u16,
                        seq: k,
                        start: Cycles(u64::from(g * 1000 + k)),
                        end: Cycles(u64::from(g * 1000 + 2 * k)),
                    })
                    .collect();
                w
            })
            .collect();
        let t = Trace { launch, warps };
        let path = dir.path().join("trace.wst");
        TraceWriter::write_all(&path, &t).unwrap();
        let reader = TraceReader::open(&path).unwrap();
        let out = dir.path().join("r.parquet");
        // Batches close at the first warp boundary past 4 rows: several row groups.
        let n = crate::write_atomic(&out, |w| write_to(&reader, w, &out, 4)).unwrap();
        assert_eq!(n, t.record_count());
        let df = ParquetReader::new(std::fs::File::open(&out).unwrap())
            .finish()
            .unwrap();
        let starts = df.column("start").unwrap().u64().unwrap();
        let gws = df.column("global_warp").unwrap().u32().unwrap();
        let expected: Vec<(u32, u64)> = t
            .warps
            .iter()
            .flat_map(|w| w.records.iter().map(|r| (w.global_warp, r.start.0)))
            .collect();
        let got: Vec<(u32, u64)> = (0..df.height())
            .map(|i| (gws.get(i).unwrap(), starts.get(i).unwrap()))
            .collect();
        assert_eq!(got, expected);
        // The file's columns are the records CSV's, in order, with the declared types.
        let names: Vec<&str> = df.get_column_names().iter().map(|n| n.as_str()).collect();
        assert_eq!(names, RECORD_COLUMNS.to_vec());
        assert_eq!(*df.schema().as_ref(), schema());
    }
}
