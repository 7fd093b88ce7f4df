//! The report's one description and its two renderings: every section (the sweep's, the paper
//! side by side, the roofline, reuse and regression sections) builds its [`Block`]s once, and
//! `report.html` and `report.md` are both rendered from them, each escaping what would change its
//! meaning, so the two files always say the same thing.
//!
//! `doc.rs` is the model ([`Doc`], [`Block`], [`Inline`], [`Section`]); `html.rs` renders one
//! self-contained page (no scripts, no external files; figures inline as SVG), `markdown.rs` a
//! page that links the figures' PNG files beside it. [`write`] writes both, atomically.

mod doc;
mod html;
mod markdown;

pub(crate) use doc::{Block, Doc, Inline, Section};
pub use markdown::md_table;

use crate::AnalysisError;
use crate::output::write_atomic;
use std::path::Path;

/// Writes `doc` as HTML to `html` and as Markdown to `md`, each atomically.
pub(crate) fn write(doc: &Doc, html: &Path, md: &Path) -> Result<(), AnalysisError> {
    write_atomic(html, html::page(doc).as_bytes())?;
    write_atomic(md, markdown::page(doc).as_bytes())
}

/// Writes `doc` as Markdown alone to `md`, atomically (a command's summary beside its files).
pub(crate) fn write_markdown(doc: &Doc, md: &Path) -> Result<(), AnalysisError> {
    write_atomic(md, markdown::page(doc).as_bytes())
}

#[cfg(test)]
impl Section {
    /// The section alone as Markdown, for tests of what it says.
    pub fn markdown(&self) -> String {
        markdown::page(&self.as_doc())
    }

    /// The section alone as HTML, for tests of what it says.
    pub fn html(&self) -> String {
        html::page(&self.as_doc())
    }

    fn as_doc(&self) -> Doc {
        Doc {
            title: String::new(),
            blocks: self.blocks.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A site's name is text wherever it lands: a tag or a table's `|` in it stays text in both
    /// renderings.
    #[test]
    fn a_site_named_like_markup_comes_out_escaped_in_both() {
        let site = "<b>x|y</b>";
        let doc = Doc {
            title: "t".into(),
            blocks: vec![
                Block::Heading(2, format!("Site {site}")),
                Block::para(format!("Sites: site0 = {site}.")),
                Block::List(vec![format!("{site} takes the time")]),
                Block::Table(vec![vec!["site".into()], vec![site.into()]]),
                Block::Para(vec![Inline::Strong(site.into()), Inline::Code(site.into())]),
            ],
        };
        let html = html::page(&doc);
        assert!(!html.contains(site), "{html}");
        assert_eq!(html.matches("&lt;b&gt;x|y&lt;/b&gt;").count(), 6, "{html}");
        let md = markdown::page(&doc);
        assert_eq!(md.matches("\\<b>x\\|y\\</b>").count(), 5, "{md}");
        // A code span shows its text as it is: the one raw copy is the one inside backticks.
        assert_eq!(md.matches(site).count(), 1, "{md}");
        assert!(md.contains("`<b>x|y</b>`"), "{md}");
    }
}
