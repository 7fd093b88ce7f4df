//! `report.md`: the same page as Markdown (GitHub's flavour, CommonMark underneath), figures as
//! links to their PNG files beside it. Text is escaped where a character would change the
//! meaning: `\`, `` ` ``, `*`, `<`, `[`, `]`, `|` and `~` everywhere, `_` at a word's edge (inside a
//! word, as in `tex_hit_rate`, it is plain), `&` where it would start an entity, and a line's
//! opening `#`, `>`, list marker or number that would start a heading, quote or list.

use super::doc::{Block, Doc, Inline};
use std::fmt::Write as _;

/// The page. Its title is the HTML page's head; the first heading is a block like any other.
pub(super) fn page(doc: &Doc) -> String {
    let mut s = String::new();
    for b in &doc.blocks {
        block(&mut s, b);
    }
    s
}

fn block(s: &mut String, b: &Block) {
    match b {
        Block::Heading(level, text) => {
            let _ = writeln!(s, "{} {}\n", "#".repeat(usize::from(*level)), escape(text));
        }
        Block::Para(inlines) => {
            for i in inlines {
                inline(s, i);
            }
            s.push_str("\n\n");
        }
        Block::List(items) => {
            for i in items {
                let _ = writeln!(s, "- {}", escape(i));
            }
            s.push('\n');
        }
        Block::Table(rows) => {
            let rows: Vec<Vec<String>> = (rows.iter())
                .map(|r| r.iter().map(|c| escape(c)).collect())
                .collect();
            s.push_str(&md_table(&rows));
        }
        Block::Figure(f) => {
            let title = escape(&f.title);
            let _ = write!(s, "![{title}]({}.png)\n\n*{title}.*", f.stem);
            if !f.caption.is_empty() {
                let _ = write!(s, " {}", escape(&f.caption));
            }
            let _ = writeln!(s, " ([SVG]({}.svg))\n", f.stem);
        }
        Block::Code {
            summary,
            lang,
            text,
        } => {
            let fence = "`".repeat(longest_run(text, '`').max(2) + 1);
            let _ = writeln!(
                s,
                "{}\n\n{fence}{lang}\n{}\n{fence}\n",
                escape(summary),
                text.trim_end()
            );
        }
    }
}

fn inline(s: &mut String, i: &Inline) {
    match i {
        Inline::Text(t) => s.push_str(&escape(t)),
        Inline::Strong(t) => {
            let _ = write!(s, "**{}**", escape(t));
        }
        Inline::Code(t) => {
            // A code span shows its text as it is; its fence is one backtick longer than any run
            // inside, and a backtick at either end needs a space to stay apart from the fence.
            let fence = "`".repeat(longest_run(t, '`') + 1);
            let pad = if t.starts_with('`') || t.ends_with('`') {
                " "
            } else {
                ""
            };
            let _ = write!(s, "{fence}{pad}{}{pad}{fence}", t.replace('\n', " "));
        }
    }
}

fn longest_run(s: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for x in s.chars() {
        run = if x == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

/// Plain text as Markdown that shows it as it is (see the module docs for what is escaped).
fn escape(text: &str) -> String {
    let chars: Vec<char> = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    let word = |i: Option<usize>| {
        i.and_then(|i| chars.get(i))
            .is_some_and(|c| c.is_alphanumeric())
    };
    let mut out = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let escaped = match c {
            '\\' | '`' | '*' | '<' | '[' | ']' | '|' | '~' => true,
            '_' => !(word(i.checked_sub(1)) && word(Some(i + 1))),
            '&' => starts_entity(&chars[i + 1..]),
            '#' | '>' => i == 0,
            '-' | '+' => i == 0 && chars.get(1).is_none_or(|c| *c == ' '),
            '.' | ')' => {
                chars[..i].iter().all(char::is_ascii_digit)
                    && i > 0
                    && chars.get(i + 1).is_none_or(|c| *c == ' ')
            }
            _ => false,
        };
        if escaped {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Whether `rest` (after an `&`) reads as an entity, `name;` or `#digits;`.
fn starts_entity(rest: &[char]) -> bool {
    let n = rest
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == '#')
        .count();
    n > 0 && rest.get(n) == Some(&';')
}

/// A Markdown cell: a `|` not already escaped would end the cell and a line break the row.
fn md_cell(c: &str) -> String {
    let mut out = String::with_capacity(c.len());
    let mut backslashes = 0;
    for ch in c.chars() {
        match ch {
            '\n' | '\r' => out.push(' '),
            '|' if backslashes % 2 == 0 => out.push_str("\\|"),
            _ => out.push(ch),
        }
        backslashes = if ch == '\\' { backslashes + 1 } else { 0 };
    }
    out
}

/// A Markdown table of cells that are Markdown already (the report escapes its text before it
/// gets here; `warpscope gpu-check` writes code spans into cells), the first row as the header,
/// followed by a blank line.
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
    fn tables_escape_what_would_break_them() {
        let rows = vec![
            vec!["a|b".to_string(), "<x>".to_string()],
            vec!["two\nlines".to_string(), "R&D".to_string()],
        ];
        let md = md_table(&rows);
        assert_eq!(
            md, "| a\\|b | <x> |\n|---|---|\n| two lines | R&D |\n\n",
            "{md}"
        );
        // A pipe the cell escaped already keeps its one backslash.
        assert_eq!(md_table(&[vec!["a\\|b".into()]]), "| a\\|b |\n|---|\n\n");
    }

    #[test]
    fn text_is_escaped_where_it_would_change_the_meaning() {
        for (text, md) in [
            (
                "8x16_v0-0-0_fence has no tex_hit_rate",
                "8x16_v0-0-0_fence has no tex_hit_rate",
            ),
            ("busy_cycles_<component>", "busy_cycles\\_\\<component>"),
            (
                "_x_ *y* `z` [a](b) ~13 % |z|",
                "\\_x\\_ \\*y\\* \\`z\\` \\[a\\](b) \\~13 % \\|z\\|",
            ),
            ("R&D &amp; &#39;", "R&D \\&amp; \\&#39;"),
            ("# not a heading", "\\# not a heading"),
            ("- not a list", "\\- not a list"),
            ("-0.5 stays", "-0.5 stays"),
            ("2011. no list", "2011\\. no list"),
            ("fig. 5 (a)", "fig. 5 (a)"),
            ("two\nlines", "two lines"),
        ] {
            assert_eq!(escape(text), md, "{text:?}");
        }
    }

    #[test]
    fn code_spans_and_blocks_keep_their_text() {
        let mut s = String::new();
        inline(&mut s, &Inline::Code("a `b` c".into()));
        assert_eq!(s, "``a `b` c``");
        let mut s = String::new();
        block(
            &mut s,
            &Block::Code {
                summary: "config.toml of 1 run(s): a_b".into(),
                lang: "toml",
                text: "x = 1\n".into(),
            },
        );
        assert_eq!(s, "config.toml of 1 run(s): a_b\n\n```toml\nx = 1\n```\n\n");
    }
}
