//! `logs.md`: the probe log in device memory, and what each export format writes.

use crate::markdown::{cell, code, table};
use crate::schema::{description, type_of};
use crate::{Page, ReferenceError};
use export::{Format, RecordRow, WarpRow};
use schemars::schema::{RootSchema, Schema};

pub fn page() -> Result<Page, ReferenceError> {
    let body = format!(
        "## The probe log\n\n\
         The probes write one buffer in device memory per launch, little-endian; its layout is \
         defined by the `#define WS_…` constants of `kernels/warpscope.cuh`. warpscope decodes \
         it into `trace.wst`, the run's records, which every export below reads.\n\n{}\n\
         ## Export formats\n\n\
         `warpscope export --in RUNDIR --format F` (or `--formats` of `render` and `sweep`) \
         writes into the run folder:\n\n{}\n\
         ## Records: `records.csv` and `records.parquet`\n\n\
         One row per record, in trace order (warp by warp), not sorted by time. The CSV is RFC \
         4180 with a header row.\n\n{}\n\
         ## Warps: `warps.csv`\n\n{}\n\
         ## Timelines: CLOG2, Chrome trace, OTF2\n\n{}",
        probe_log(),
        formats(),
        records()?,
        warps(),
        timelines()
    );
    Ok(crate::page(
        "logs.md",
        "Logs and exports",
        "The probe log's bytes, and what each export format writes for a run's records.",
        &body,
    ))
}

fn probe_log() -> String {
    let mut out = String::new();
    for s in instrument::LOG_LAYOUT {
        let rows: Vec<Vec<String>> = (s.fields.iter())
            .map(|f| {
                vec![
                    f.offset.to_string(),
                    format!("u{}", f.bytes * 8),
                    code(f.name),
                    cell(f.meaning),
                ]
            })
            .collect();
        out.push_str(&format!(
            "### {} ({} bytes)\n\n{}; bytes not listed are zero.\n\n{}\n",
            s.name,
            s.bytes,
            upper_first(s.place),
            table(&["offset", "type", "field", "meaning"], &rows)
        ));
    }
    out
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn formats() -> String {
    let mut rows: Vec<Vec<String>> = (Format::ALL.iter())
        .map(|f| {
            vec![
                code(f.name()),
                code(f.default_file_name()),
                f.contents().to_string(),
            ]
        })
        .collect();
    rows.push(vec![
        code("parquet"),
        code(export::PARQUET_FILE_NAME),
        export::PARQUET_CONTENTS.to_string(),
    ]);
    table(&["format", "written as", "what it holds"], &rows)
}

/// The fields of a row type's schema: (column, its schema), in declaration order.
fn columns(root: &RootSchema) -> Vec<(String, Schema)> {
    (root.schema.object.iter())
        .flat_map(|o| o.properties.iter())
        .map(|(name, s)| (name.clone(), s.clone()))
        .collect()
}

fn meaning(s: &Schema) -> String {
    match s {
        Schema::Object(o) => description(o).as_deref().map(cell).unwrap_or_default(),
        Schema::Bool(_) => String::new(),
    }
}

fn records() -> Result<String, ReferenceError> {
    let root = schemars::schema_for!(RecordRow);
    let cols = columns(&root);
    let parquet = export::parquet_columns();
    let names: Vec<&str> = cols.iter().map(|(n, _)| n.as_str()).collect();
    let parquet_names: Vec<&str> = parquet.iter().map(|(n, _)| n.as_str()).collect();
    if names != trace::RECORD_COLUMNS || parquet_names != trace::RECORD_COLUMNS {
        return Err(ReferenceError::Mismatch {
            what: "the records' columns",
            why: format!(
                "RecordRow has {names:?}, the Parquet schema {parquet_names:?}, \
                 trace::RECORD_COLUMNS {:?}",
                trace::RECORD_COLUMNS
            ),
        });
    }
    let rows: Vec<Vec<String>> = (cols.iter().zip(&parquet))
        .map(|((name, s), (_, parquet_type))| {
            vec![
                code(name),
                type_of(s, &root.definitions).replace(" or null", ", or empty"),
                code(parquet_type),
                meaning(s),
            ]
        })
        .collect();
    Ok(table(&["column", "CSV", "Parquet", "meaning"], &rows))
}

fn warps() -> String {
    let root = schemars::schema_for!(WarpRow);
    let intro = (root.schema.metadata.as_ref())
        .and_then(|m| m.description.clone())
        .unwrap_or_default();
    let rows: Vec<Vec<String>> = (columns(&root).iter())
        .map(|(name, s)| {
            vec![
                code(name),
                type_of(s, &root.definitions).replace(" or null", ", or empty"),
                meaning(s),
            ]
        })
        .collect();
    format!(
        "{intro}\n\n{}",
        table(&["column", "type", "meaning"], &rows)
    )
}

/// The three timeline formats share their mapping of warps to lines and of cycles to time; the
/// details of each are on its writer (`export/src/formats/`).
fn timelines() -> String {
    format!(
        "Each warp is a line. With `--mapping sm-slot` (the default) the lines are the \
         hardware warp slots grouped by SM, so the warps an SM runs one after another share a \
         line; with `--mapping block-warp` they are the warps grouped by block. Time is cycles \
         since the SM's earliest kernel begin (SM clocks are not synchronised), turned into \
         seconds with the run's clock.\n\n\
         - **CLOG2** (`trace.clog2`, Jumpshot): rank = SM or block, thread = warp slot or warp. \
         One state per declared site, drawn inside the warp's lifetime state `other`; each \
         access carries its raw cycles (`{}`), so every record survives exactly; dropped \
         records are solo event {} at the warp's last record.\n\
         - **Chrome trace** (`trace.json`, Perfetto): one complete (`X`) event per record, named \
         by its site with the region as category, in microseconds rounded to whole \
         nanoseconds; the raw `start` and `end` cycles are in its `args`. A wrapped record has \
         duration 0 and category `wrapped`; dropped records are a counter at the warp's end.\n\
         - **OTF2** (`otf2/{}.otf2`, Vampir): one location group per SM or block, one location \
         per line; one tick per clock cycle. Each warp enters the kernel's region at its begin \
         and leaves it at its end; each access enters its site's region at its start and \
         leaves it at its end, with its access time as a metric.\n",
        export::ACCESS_FORMAT,
        export::DROPPED_ETYPE,
        export::ARCHIVE_NAME
    )
}
