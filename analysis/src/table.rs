//! A small column-oriented table, written as CSV for the files and as text cells for the HTML and
//! Markdown reports, so that every output shows the same numbers. A missing value is an empty CSV
//! cell and "–" in the reports.
//!
//! The CSV spelling is the one polars wrote these files in, so that they read the same to every
//! tool that read them before: the header first; integers in decimal; `true`/`false`; a cell
//! quoted only when it holds a comma, a quote or a line break; floats in the shortest form that
//! reads back as the same number, with `.0` on whole numbers and an exponent outside 10⁻⁵–10¹⁶
//! (`0.5`, `25.0`, `0.00001`, `1e-6`, `1e+16`, `NaN`, `inf`). Numbers go through the formatters
//! polars itself calls, `itoa` and `zmij`: the standard library's shortest float rounds a tie in
//! the last digit the other way (583666046111986.25 → `…986.3`, where polars wrote `…986.2`). One cell is
//! spelled differently from polars on purpose: an empty text is an empty cell like a missing
//! value (polars wrote `""`), which is what the files' contract says an empty cell is.

use crate::AnalysisError;
use crate::fmt::sig;
use std::path::Path;

/// One column's values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Col {
    Str(Vec<String>),
    U64(Vec<u64>),
    U32(Vec<u32>),
    OptU32(Vec<Option<u32>>),
    F64(Vec<Option<f64>>),
    Bool(Vec<bool>),
}

impl Col {
    fn len(&self) -> usize {
        match self {
            Col::Str(v) => v.len(),
            Col::U64(v) => v.len(),
            Col::U32(v) => v.len(),
            Col::OptU32(v) => v.len(),
            Col::F64(v) => v.len(),
            Col::Bool(v) => v.len(),
        }
    }

    /// The cell's CSV text (unquoted: the CSV writer quotes), formatted in `ints` or `floats`.
    fn csv_cell<'a>(
        &'a self,
        row: usize,
        ints: &'a mut itoa::Buffer,
        floats: &'a mut zmij::Buffer,
    ) -> &'a [u8] {
        match self {
            Col::Str(v) => v[row].as_bytes(),
            Col::U64(v) => ints.format(v[row]).as_bytes(),
            Col::U32(v) => ints.format(v[row]).as_bytes(),
            Col::OptU32(v) => v[row].map_or(b"", |x| ints.format(x).as_bytes()),
            Col::F64(v) => v[row].map_or(b"", |x| floats.format(x).as_bytes()),
            Col::Bool(v) => {
                if v[row] {
                    b"true"
                } else {
                    b"false"
                }
            }
        }
    }

    /// The cell as report text: floats with 4 significant digits.
    pub fn cell(&self, row: usize) -> String {
        match self {
            Col::Str(v) => v[row].clone(),
            Col::U64(v) => v[row].to_string(),
            Col::U32(v) => v[row].to_string(),
            Col::OptU32(v) => v[row].map_or_else(|| "–".to_string(), |x| x.to_string()),
            Col::F64(v) => v[row].map_or_else(|| "–".to_string(), sig),
            Col::Bool(v) => if v[row] { "yes" } else { "" }.to_string(),
        }
    }
}

/// Named columns of equal length.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Table {
    pub columns: Vec<(String, Col)>,
}

impl Table {
    pub fn push(&mut self, name: &str, col: Col) {
        self.columns.push((name.to_string(), col));
    }

    pub fn height(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }

    pub fn get(&self, name: &str) -> Option<&Col> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }

    /// The columns named in `names` that the table has, in that order (what a report shows of
    /// a file).
    pub fn select(&self, names: &[&str]) -> Table {
        let mut out = Table::default();
        for n in names {
            if let Some(c) = self.get(n) {
                out.push(n, c.clone());
            }
        }
        out
    }

    /// The table as CSV bytes (see the module docs for the spelling).
    pub fn to_csv(&self) -> Result<Vec<u8>, csv::Error> {
        // A larger buffer than the default 8 KiB: warps.csv has millions of cells.
        let mut w = csv::WriterBuilder::new()
            .buffer_capacity(1 << 16)
            .from_writer(Vec::new());
        w.write_record(self.columns.iter().map(|(n, _)| n.as_bytes()))?;
        let (mut ints, mut floats) = (itoa::Buffer::new(), zmij::Buffer::new());
        for row in 0..self.height() {
            for (_, c) in &self.columns {
                w.write_field(c.csv_cell(row, &mut ints, &mut floats))?;
            }
            w.write_record(None::<&[u8]>)?;
        }
        w.into_inner().map_err(|e| e.into_error().into())
    }

    /// Writes the table as CSV, atomically.
    pub fn write_csv(&self, path: &Path) -> Result<(), AnalysisError> {
        let bytes = self.to_csv().map_err(|e| AnalysisError::csv(path, e))?;
        crate::output::write_atomic(path, &bytes)
    }

    /// Rows `rows` (all when `None`) as text cells, with the header first.
    pub fn text_rows(&self, rows: Option<&[usize]>) -> Vec<Vec<String>> {
        let all: Vec<usize> = (0..self.height()).collect();
        let rows = rows.unwrap_or(&all);
        let mut out = vec![self.columns.iter().map(|(n, _)| n.clone()).collect()];
        for &r in rows {
            out.push(self.columns.iter().map(|(_, c)| c.cell(r)).collect());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_has_header_nulls_and_types() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Table::default();
        t.push("run", Col::Str(vec!["a".into(), "b,c".into()]));
        t.push("n", Col::U64(vec![1, 2]));
        t.push("x", Col::F64(vec![Some(0.5), None]));
        t.push("flag", Col::Bool(vec![true, false]));
        let p = dir.path().join("t.csv");
        t.write_csv(&p).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text, "run,n,x,flag\na,1,0.5,true\n\"b,c\",2,,false\n");
        assert_eq!(t.text_rows(Some(&[1]))[1], vec!["b,c", "2", "–", ""]);
    }

    /// The spelling polars wrote, cell by cell: shortest floats with `.0` on whole numbers and an
    /// exponent outside 1e-5..1e16, ties in the last digit as polars' formatter breaks them, an
    /// empty cell for a missing value, quotes only around a separator, quote or line break.
    #[test]
    fn csv_cells_are_spelled_as_polars_wrote_them() {
        let mut t = Table::default();
        let floats = [
            Some(25.0),
            Some(0.1 + 0.2),
            Some(1e-5),
            Some(1e-6),
            Some(1.5e16),
            Some(2.56e10),
            // 583666046111986.25 exactly: a tie in the last of 16 digits.
            Some(2_334_664_184_447_945.0 / 4.0),
            Some(-0.0),
            Some(f64::NAN),
            Some(f64::INFINITY),
            None,
        ];
        t.push("x", Col::F64(floats.to_vec()));
        let text: [&str; 11] = [
            "plain",
            "a,b",
            "say \"hi\"",
            "two\nlines",
            "",
            "x",
            "x",
            "x",
            "x",
            "x",
            "x",
        ];
        t.push("s", Col::Str(text.iter().map(|s| s.to_string()).collect()));
        t.push(
            "k",
            Col::OptU32([Some(7), None].into_iter().cycle().take(11).collect()),
        );
        let csv = String::from_utf8(t.to_csv().unwrap()).unwrap();
        let want = "x,s,k\n\
                    25.0,plain,7\n\
                    0.30000000000000004,\"a,b\",\n\
                    0.00001,\"say \"\"hi\"\"\",7\n\
                    1e-6,\"two\nlines\",\n\
                    1.5e+16,,7\n\
                    25600000000.0,x,\n\
                    583666046111986.2,x,7\n\
                    -0.0,x,\n\
                    NaN,x,7\n\
                    inf,x,\n\
                    ,x,7\n";
        assert_eq!(csv, want);
    }
}
