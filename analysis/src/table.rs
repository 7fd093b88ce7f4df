//! A small column-oriented table that becomes a polars `DataFrame` for the CSV files and plain
//! text cells for the HTML and Markdown reports, so that every output shows the same numbers.
//! Missing values are nulls in polars (empty CSV cells) and "–" in the reports.

use crate::AnalysisError;
use polars::prelude::*;
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

    /// The cell as report text: floats with 4 significant digits.
    pub fn cell(&self, row: usize) -> String {
        match self {
            Col::Str(v) => v[row].clone(),
            Col::U64(v) => v[row].to_string(),
            Col::U32(v) => v[row].to_string(),
            Col::OptU32(v) => v[row].map_or_else(|| "–".to_string(), |x| x.to_string()),
            Col::F64(v) => v[row].map_or_else(|| "–".to_string(), fmt_sig),
            Col::Bool(v) => if v[row] { "yes" } else { "" }.to_string(),
        }
    }
}

/// `x` with 4 significant digits, without exponent for the usual magnitudes.
pub(crate) fn fmt_sig(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let mag = x.abs().log10().floor() as i32;
    if !(-4..=9).contains(&mag) {
        return format!("{x:.3e}");
    }
    let decimals = (3 - mag).max(0) as usize;
    format!("{x:.decimals$}")
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

    pub fn to_dataframe(&self) -> PolarsResult<DataFrame> {
        let cols: Vec<Column> = self
            .columns
            .iter()
            .map(|(name, c)| {
                let name: PlSmallStr = name.as_str().into();
                match c {
                    Col::Str(v) => Column::new(name, v),
                    Col::U64(v) => Column::new(name, v),
                    Col::U32(v) => Column::new(name, v),
                    Col::OptU32(v) => Column::new(name, v),
                    Col::F64(v) => Column::new(name, v),
                    Col::Bool(v) => Column::new(name, v),
                }
            })
            .collect();
        DataFrame::new(self.height(), cols)
    }

    /// Writes the table as CSV through polars, atomically.
    pub fn write_csv(&self, path: &Path) -> Result<(), AnalysisError> {
        let mut df = self
            .to_dataframe()
            .map_err(|e| AnalysisError::polars(path, e))?;
        let mut bytes = Vec::new();
        CsvWriter::new(&mut bytes)
            .include_header(true)
            .finish(&mut df)
            .map_err(|e| AnalysisError::polars(path, e))?;
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

    #[test]
    fn significant_digits() {
        assert_eq!(fmt_sig(0.0021734), "0.002173");
        assert_eq!(fmt_sig(123.456), "123.5");
        assert_eq!(fmt_sig(12345.6), "12346");
        assert_eq!(fmt_sig(-0.5), "-0.5000");
        assert_eq!(fmt_sig(1e-7), "1.000e-7");
    }
}
