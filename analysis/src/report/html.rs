//! `report.html`: one self-contained page (no scripts, no external files; figures inline as SVG)
//! rendered from a [`Doc`], every text escaped.

use super::doc::{Block, Doc, Inline};
use std::fmt::Write as _;

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1400px;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:13px}\
th,td{border:1px solid #bbb;padding:3px 6px;text-align:right;white-space:nowrap}\
th{background:#eee}td:first-child,th:first-child{text-align:left}\
figure{margin:1.5em 0}figure svg{max-width:100%;height:auto;border:1px solid #ddd}\
figcaption{font-size:13px;color:#444}pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:12px}\
.scroll{overflow-x:auto}";

/// The page.
pub(super) fn page(doc: &Doc) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(&doc.title)
    );
    for b in &doc.blocks {
        block(&mut s, b);
    }
    s.push_str("</body>\n</html>\n");
    s
}

fn block(s: &mut String, b: &Block) {
    match b {
        Block::Heading(level, text) => {
            let _ = writeln!(s, "<h{level}>{}</h{level}>", escape(text));
        }
        Block::Para(inlines) => {
            s.push_str("<p>");
            for i in inlines {
                inline(s, i);
            }
            s.push_str("</p>\n");
        }
        Block::List(items) => {
            s.push_str("<ul>\n");
            for i in items {
                let _ = writeln!(s, "<li>{}</li>", escape(i));
            }
            s.push_str("</ul>\n");
        }
        Block::Table(rows) => table(s, rows),
        Block::Figure(f) => {
            // The SVG is ours (plotters output, its text escaped by plotters), so it is inlined
            // as it is; an XML declaration, if any, is not allowed inside HTML.
            let svg = (f.svg.trim_start().strip_prefix("<?xml"))
                .and_then(|rest| rest.find("?>").map(|i| &rest[i + 2..]))
                .unwrap_or(&f.svg);
            let stem = escape(&f.stem);
            let _ = write!(
                s,
                "<figure id=\"{stem}\">\n{}\n<figcaption><b>{}</b>.",
                svg.trim(),
                escape(&f.title)
            );
            if !f.caption.is_empty() {
                let _ = write!(s, " {}", escape(&f.caption));
            }
            let _ = writeln!(
                s,
                " (<a href=\"{stem}.png\">PNG</a>, <a href=\"{stem}.svg\">SVG</a>)</figcaption></figure>"
            );
        }
        Block::Code { summary, text, .. } => {
            let _ = writeln!(
                s,
                "<details><summary>{}</summary><pre>{}</pre></details>",
                escape(summary),
                escape(text)
            );
        }
    }
}

fn inline(s: &mut String, i: &Inline) {
    match i {
        Inline::Text(t) => s.push_str(&escape(t)),
        Inline::Strong(t) => {
            let _ = write!(s, "<b>{}</b>", escape(t));
        }
        Inline::Code(t) => {
            let _ = write!(s, "<code>{}</code>", escape(t));
        }
    }
}

/// A table, the first row as the header; every cell escaped. Wide tables scroll inside their own
/// box rather than widening the page.
fn table(s: &mut String, rows: &[Vec<String>]) {
    s.push_str("<div class=\"scroll\"><table>\n");
    for (i, row) in rows.iter().enumerate() {
        let tag = if i == 0 { "th" } else { "td" };
        s.push_str("<tr>");
        for c in row {
            let _ = write!(s, "<{tag}>{}</{tag}>", escape(c));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table></div>\n");
}

/// Escapes text for HTML element content and attribute values.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_tables_are_escaped() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let rows = vec![
            vec!["a|b".to_string(), "<x>".to_string()],
            vec!["two\nlines".to_string(), "R&D".to_string()],
        ];
        let mut html = String::new();
        table(&mut html, &rows);
        assert!(html.contains("<th>a|b</th><th>&lt;x&gt;</th>"), "{html}");
        assert!(html.contains("<td>R&amp;D</td>"), "{html}");
    }
}
