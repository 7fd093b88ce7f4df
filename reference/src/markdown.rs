//! The little Markdown the pages need: tables, and doc-comment text made fit for a table cell.

/// A GitHub-flavoured Markdown table (what mdBook renders): a header row and one row per entry.
/// Each cell is written as given; [`cell`] makes text safe for one.
pub fn table<R: AsRef<[String]>>(header: &[&str], rows: &[R]) -> String {
    let mut s = format!("| {} |\n|", header.join(" | "));
    s.push_str(&"--|".repeat(header.len()));
    s.push('\n');
    for row in rows {
        s.push_str(&format!("| {} |\n", row.as_ref().join(" | ")));
    }
    s
}

/// Doc-comment text as one table cell: paragraphs and lines joined, `|` escaped, and rustdoc's
/// intra-doc links (``[`X`]``) reduced to their code, which Markdown would otherwise show in
/// brackets.
pub fn cell(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(joined.len());
    let mut rest = joined.as_str();
    while let Some(at) = rest.find("[`") {
        out.push_str(&rest[..at]);
        let code = &rest[at + 1..];
        match code[1..].find("`]") {
            Some(end) if !code[end + 3..].starts_with('(') => {
                out.push_str(&code[..end + 2]);
                rest = &code[end + 3..];
            }
            _ => {
                out.push('[');
                rest = code;
            }
        }
    }
    out.push_str(rest);
    out.replace('|', "\\|")
}

/// `text` in backticks.
pub fn code(text: &str) -> String {
    format!("`{text}`")
}

/// The anchor mdBook gives a heading of this text: lower case, spaces as dashes, and only
/// letters, digits, `-` and `_` kept.
pub fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_is_one_line_with_pipes_escaped_and_intra_doc_links_reduced() {
        assert_eq!(
            cell("Probed ÷ bare ([`overhead_ratio`]):\n  a | b\n\nSee [`X`](https://x)."),
            "Probed ÷ bare (`overhead_ratio`): a \\| b See [`X`](https://x)."
        );
        assert_eq!(cell("[`"), "[`");
    }

    #[test]
    fn tables_have_a_separator_row_per_column() {
        let t = table(&["a", "b"], &[vec!["1".to_string(), "2".to_string()]]);
        assert_eq!(t, "| a | b |\n|--|--|\n| 1 | 2 |\n");
    }

    #[test]
    fn anchors_are_mdbooks() {
        assert_eq!(anchor("ProbeFacts"), "probefacts");
        assert_eq!(anchor("The `run.json` file"), "the-runjson-file");
    }
}
