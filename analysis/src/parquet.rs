//! Parquet export of a trace's records (issue 6 §4), for dataframe users and for engines such as
//! Spark or DuckDB. It lives here rather than in `clog-export` because polars stays inside the
//! analysis crate (DESIGN.md).
//!
//! # Schema (one row per record; the records CSV's columns)
//! | column | type | meaning |
//! |---|---|---|
//! | launch | u32 | launch index within the run |
//! | block_x, block_y, block_z | u32 | block index (`%ctaid`) |
//! | warp | u32 | warp index within its block |
//! | global_warp | u32 | warp index in the grid |
//! | sm | u32 | SM id (`%smid`) |
//! | hw_warp | u32 | hardware warp slot (`%warpid`) |
//! | site | u16 | load site id |
//! | site_name | string | the site's name from the launch ("site N" when undeclared) |
//! | region | string | global, texture, constant, readonly ("" when undeclared) |
//! | seq | u32 | position among the warp's records, counting dropped ones |
//! | start, end | u64 | clock at the start and end of the access (cycles) |
//! | duration | u64 | end − start; 0 when the clock wrapped |
//! | mode | string | probe mode (off, naive, fence, dummy, auto) |
//! | wrapped | bool | end < start: the clock wrapped, duration is not meaningful |
//!
//! Records stream in batches of [`BATCH_ROWS`] rows, each written as a row group with Snappy
//! compression; at most one batch is in memory. The file is written under a temp name and
//! renamed when complete.

use crate::AnalysisError;
use crate::output::{commit, tmp_path};
use polars::prelude::*;
use std::path::Path;
use trace::TraceReader;

/// Rows per batch (one row group each): ~60 MiB of column buffers at most.
pub const BATCH_ROWS: usize = 1 << 20;

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
    site_name: Vec<String>,
    region: Vec<String>,
    seq: Vec<u32>,
    start: Vec<u64>,
    end: Vec<u64>,
    duration: Vec<u64>,
    mode: Vec<String>,
    wrapped: Vec<bool>,
}

impl Batch {
    fn len(&self) -> usize {
        self.seq.len()
    }

    fn take_frame(&mut self) -> PolarsResult<DataFrame> {
        let b = std::mem::take(self);
        let h = b.len();
        DataFrame::new(
            h,
            vec![
                Column::new("launch".into(), b.launch),
                Column::new("block_x".into(), b.block_x),
                Column::new("block_y".into(), b.block_y),
                Column::new("block_z".into(), b.block_z),
                Column::new("warp".into(), b.warp),
                Column::new("global_warp".into(), b.global_warp),
                Column::new("sm".into(), b.sm),
                Column::new("hw_warp".into(), b.hw_warp),
                Column::new("site".into(), b.site),
                Column::new("site_name".into(), b.site_name),
                Column::new("region".into(), b.region),
                Column::new("seq".into(), b.seq),
                Column::new("start".into(), b.start),
                Column::new("end".into(), b.end),
                Column::new("duration".into(), b.duration),
                Column::new("mode".into(), b.mode),
                Column::new("wrapped".into(), b.wrapped),
            ],
        )
    }
}

fn schema() -> Schema {
    let u32s = [
        "launch",
        "block_x",
        "block_y",
        "block_z",
        "warp",
        "global_warp",
        "sm",
        "hw_warp",
    ];
    let mut fields: Vec<Field> = u32s
        .iter()
        .map(|n| Field::new((*n).into(), DataType::UInt32))
        .collect();
    fields.push(Field::new("site".into(), DataType::UInt16));
    fields.push(Field::new("site_name".into(), DataType::String));
    fields.push(Field::new("region".into(), DataType::String));
    fields.push(Field::new("seq".into(), DataType::UInt32));
    fields.push(Field::new("start".into(), DataType::UInt64));
    fields.push(Field::new("end".into(), DataType::UInt64));
    fields.push(Field::new("duration".into(), DataType::UInt64));
    fields.push(Field::new("mode".into(), DataType::String));
    fields.push(Field::new("wrapped".into(), DataType::Boolean));
    Schema::from_iter(fields)
}

/// Writes every record of `reader` to the Parquet file `out` (atomically) and returns the number
/// of rows written.
pub fn write_parquet(reader: &TraceReader, out: &Path) -> Result<u64, AnalysisError> {
    let tmp = tmp_path(out);
    let result = write_to(reader, &tmp, out);
    match result {
        Ok(rows) => {
            commit(&tmp, out, Ok(()))?;
            Ok(rows)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

fn write_to(reader: &TraceReader, tmp: &Path, out: &Path) -> Result<u64, AnalysisError> {
    let pe = |e: PolarsError| AnalysisError::polars(out, e);
    let file = std::fs::File::create(tmp).map_err(|e| AnalysisError::io(tmp, e))?;
    let mut buffered = std::io::BufWriter::with_capacity(1 << 20, file);
    let launch = reader.launch();
    let mode = launch.mode.name().to_string();
    let mut writer = ParquetWriter::new(&mut buffered)
        .with_compression(ParquetCompression::Snappy)
        .batched(&schema())
        .map_err(pe)?;
    let mut batch = Batch::default();
    let mut rows = 0u64;
    for w in reader.warps()? {
        let w = w?;
        for r in &w.records {
            let site = launch.site(r.site);
            batch.launch.push(launch.launch);
            batch.block_x.push(w.block[0]);
            batch.block_y.push(w.block[1]);
            batch.block_z.push(w.block[2]);
            batch.warp.push(w.warp);
            batch.global_warp.push(w.global_warp);
            batch.sm.push(w.sm.0);
            batch.hw_warp.push(w.hw_warp);
            batch.site.push(r.site);
            batch.site_name.push(
                site.map(|s| s.name.clone())
                    .unwrap_or_else(|| format!("site {}", r.site)),
            );
            batch.region.push(
                site.map(|s| s.region.name().to_string())
                    .unwrap_or_default(),
            );
            batch.seq.push(r.seq);
            batch.start.push(r.start.0);
            batch.end.push(r.end.0);
            batch.duration.push(r.duration().0);
            batch.mode.push(mode.clone());
            batch.wrapped.push(r.wrapped());
        }
        if batch.len() >= BATCH_ROWS {
            rows += batch.len() as u64;
            writer
                .write_batch(&batch.take_frame().map_err(pe)?)
                .map_err(pe)?;
        }
    }
    if batch.len() > 0 {
        rows += batch.len() as u64;
        writer
            .write_batch(&batch.take_frame().map_err(pe)?)
            .map_err(pe)?;
    }
    writer.finish().map_err(pe)?;
    drop(writer);
    let file = buffered
        .into_inner()
        .map_err(|e| AnalysisError::io(tmp, e.into_error()))?;
    file.sync_all().map_err(|e| AnalysisError::io(tmp, e))?;
    Ok(rows)
}
