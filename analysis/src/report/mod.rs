//! The report's building blocks, in one copy for every section (the sweep's, the paper side by
//! side, the roofline, reuse and compare sections): a [`Section`] of HTML and Markdown with the
//! files written for it, and the table writer for both, so every table escapes the same way.

use crate::output::html_escape;
use std::fmt::Write as _;
use std::path::PathBuf;

/// A report section: HTML and Markdown text, and the files written for it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Section {
    pub html: String,
    pub md: String,
    pub files: Vec<PathBuf>,
}

/// An HTML table, the first row as the header; every cell escaped. Wide tables scroll inside
/// their own box rather than widening the page.
pub(crate) fn html_table(rows: &[Vec<String>]) -> String {
    let mut s = String::from("<div class=\"scroll\"><table>\n");
    for (i, row) in rows.iter().enumerate() {
        let tag = if i == 0 { "th" } else { "td" };
        s.push_str("<tr>");
        for c in row {
            let _ = write!(s, "<{tag}>{}</{tag}>", html_escape(c));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table></div>\n");
    s
}

/// A Markdown cell: a `|` would end the cell and a newline the row.
pub(crate) fn md_cell(c: &str) -> String {
    c.replace('|', "\\|").replace('\n', " ")
}

/// A Markdown table, the first row as the header, followed by a blank line.
pub fn md_table(rows: &[Vec<String>]) -> String {
    let mut s = String::new();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row.iter().map(|c| md_cell(c)).collect();
        let _ = writeln!(s, "| {} |", cells.join(" | "));
        if i == 0 {
            let _ = writeln!(s, "|{}", "---|".repeat(row.len()));
        }
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_writers_escape_what_would_break_their_table() {
        let rows = vec![
            vec!["a|b".to_string(), "<x>".to_string()],
            vec!["two\nlines".to_string(), "R&D".to_string()],
        ];
        let html = html_table(&rows);
        assert!(html.contains("<th>a|b</th><th>&lt;x&gt;</th>"), "{html}");
        assert!(html.contains("<td>R&amp;D</td>"), "{html}");
        let md = md_table(&rows);
        assert_eq!(
            md, "| a\\|b | <x> |\n|---|---|\n| two lines | R&D |\n\n",
            "{md}"
        );
    }
}
