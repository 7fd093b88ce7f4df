//! Whether each row's silicon number is where its source says: on that line of that raw record,
//! as the record prints it. The records are reports, text dumps and CSV files, so the numbers on
//! a line are read generously: a number may carry thousands separators (`2,147,515,136`), sit in
//! a CSV cell (`,0.3077,`) or run into its unit (`2.000x`, `1.30×`).

use std::path::Path;

use crate::table::{RECORDS_DIR, Row, Table};

/// Whether one of the numbers `line` prints is `value`.
pub fn line_prints(line: &str, value: f64) -> bool {
    line.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
        .filter(|token| token.chars().any(|c| c.is_ascii_digit()))
        .any(|token| {
            let whole = token.replace(',', "");
            std::iter::once(whole.as_str())
                .chain(token.split(','))
                .filter_map(|t| t.trim_matches('.').parse::<f64>().ok())
                .any(|v| v == value)
        })
}

/// What is wrong with `row`'s source under `root`, if anything: the file cannot be read, has no
/// such line, or that line does not print the row's silicon value.
pub fn problem(root: &Path, row: &Row) -> Option<String> {
    let path = root.join(RECORDS_DIR).join(&row.source.file);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => return Some(format!("{}: {e}", path.display())),
    };
    let line = row
        .source
        .line
        .checked_sub(1)
        .and_then(|i| text.lines().nth(i));
    match line {
        None => Some(format!(
            "{} has no line {}",
            row.source.file, row.source.line
        )),
        Some(line) if !line_prints(line, row.silicon) => Some(format!(
            "{} line {} does not print {}: {line:?}",
            row.source.file, row.source.line, row.silicon
        )),
        Some(_) => None,
    }
}

/// Every row's source problem, one line each, naming the row.
pub fn problems(root: &Path, table: &Table) -> Vec<String> {
    table
        .row
        .iter()
        .filter_map(|r| problem(root, r).map(|p| format!("{}: {p}", r.id)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_as_the_records_print_them() {
        assert!(line_prints(
            "| pointer chase, L2 | fence | 270.9 | 268.2 |",
            270.9
        ));
        assert!(line_prints(
            "H100  stride 2 (64 B)     2,147,515,136 B  2.000x useful",
            2.0
        ));
        assert!(line_prints(
            "H100  stride 2 (64 B)     2,147,515,136 B  2.000x useful",
            2_147_515_136.0
        ));
        assert!(line_prints(
            "16x8,\"0,0,0\",fence,0.3363,0.2724,1.235,16,16,True",
            1.235
        ));
        assert!(line_prints(
            "| 64x2 | 0,0,0 | fence | 0.323 ms | 1.30× |",
            1.3
        ));
        assert!(line_prints("**Corpus**: 11 of 11 kernel files match", 11.0));
        assert!(!line_prints("| pointer chase, L2 | fence | 270.9 |", 270.0));
        assert!(!line_prints("16x8,\"0,0,0\",fence,0.3363,0.2724", 0.336));
        assert!(!line_prints("no numbers here", 0.0));
    }
}
