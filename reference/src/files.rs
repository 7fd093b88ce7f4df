//! The pages of the files warpscope writes and reads as JSON, CSV and TOML: `run.json`,
//! `sweep.csv` and the launch spec, from their types' schemas.

use crate::markdown::{cell, code, table};
use crate::schema::{Absent, description, sections, type_of};
use crate::{Page, ReferenceError};
use schemars::schema::Schema;
use trace::{RunMetrics, SweepRow};

pub fn run_json() -> Page {
    let body = format!(
        "Every run folder holds one. A key not listed here is refused when the file is read, \
         except inside `extra`; a field that is not required may be missing or `null` where the \
         backend could not measure it.\n\n{}",
        sections(
            &schemars::schema_for!(RunMetrics),
            "Top level",
            Absent::Null
        )
    );
    crate::page(
        "run-json.md",
        "run.json",
        "What one run measured: every key of a run folder's `run.json`, with its type and meaning.",
        &body,
    )
}

pub fn sweep_csv() -> Result<Page, ReferenceError> {
    let root = schemars::schema_for!(SweepRow);
    let mismatch = |why: String| ReferenceError::Mismatch {
        what: "sweep.csv",
        why,
    };
    let fields = root
        .schema
        .object
        .as_ref()
        .ok_or_else(|| mismatch("SweepRow's schema is not an object".into()))?;
    // The columns in the order the writer puts them, from the header it writes.
    let csv = SweepRow::to_csv(&[SweepRow::default()]).map_err(|e| mismatch(e.to_string()))?;
    let csv = String::from_utf8_lossy(&csv);
    let header = csv.lines().next().unwrap_or_default();
    let mut rows = Vec::new();
    for name in header.split(',') {
        let Some(Schema::Object(field)) = fields.properties.get(name) else {
            return Err(mismatch(format!("column `{name}` has no field")));
        };
        let kind = type_of(&Schema::Object(field.clone()), &root.definitions)
            .replace(" or null", ", or empty");
        let required = SweepRow::REQUIRED_COLUMNS.contains(&name);
        rows.push(vec![
            code(name),
            kind,
            if required { "yes" } else { "no" }.to_string(),
            description(field).as_deref().map(cell).unwrap_or_default(),
        ]);
    }
    let body = format!(
        "One row per run, in this column order, with a header row. An empty cell (or `nan`, \
         `NA`) is a value the backend could not measure. A reader finds columns by name: it \
         needs the required ones and reads the others as unknown where they are missing.\n\n{}",
        table(&["column", "type", "required", "meaning"], &rows)
    );
    Ok(crate::page(
        "sweep-csv.md",
        "sweep.csv",
        "The table of a sweep, one row per run: every column of a sweep folder's `sweep.csv`.",
        &body,
    ))
}

pub fn launch_spec() -> Page {
    let body = format!(
        "A spec describes one launch with `kernel`, `grid`, `block` and `[[arg]]` at the top \
         level, or a pipeline with `[[launch]]` entries whose `[[launch.arg]]`s share buffers \
         by name. Unknown keys are refused, naming the file and the field.\n\n\
         ```toml\n{}```\n\n{}",
        launch::SPEC_EXAMPLE,
        sections(&launch::spec_schema(), "The spec file", Absent::Omitted)
    );
    crate::page(
        "launch-spec.md",
        "Launch spec",
        "The TOML file `warpscope launch SPEC` runs: every key, its type and meaning.",
        &body,
    )
}
