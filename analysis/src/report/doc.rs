//! The report as data: a page is a title and a list of blocks (headings, paragraphs, lists,
//! tables, figures, preformatted text), a paragraph a list of inline pieces. Text is plain text
//! everywhere; a renderer escapes it for its format, so a section never writes markup.

use crate::figures::Drawn;
use std::path::PathBuf;

/// A piece of a paragraph.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Inline {
    Text(String),
    /// Bold: a paragraph's one sentence to read first.
    Strong(String),
    /// A command, file name or path, set in monospace.
    Code(String),
}

/// One block of a page.
#[derive(Debug, Clone)]
pub(crate) enum Block {
    /// A heading of level 1 (the page's) to 3.
    Heading(u8, String),
    Para(Vec<Inline>),
    /// A bulleted list of sentences.
    List(Vec<String>),
    /// Rows of cells, the first row the header.
    Table(Vec<Vec<String>>),
    /// A drawn figure: inline SVG in HTML, its PNG in Markdown, both with title and caption.
    Figure(Drawn),
    /// Preformatted text in `lang` (a file's contents) under a one-line summary; folded in HTML.
    Code {
        summary: String,
        lang: &'static str,
        text: String,
    },
}

impl Block {
    /// A paragraph of plain text.
    pub fn para(text: impl Into<String>) -> Block {
        Block::Para(vec![Inline::Text(text.into())])
    }
}

/// A whole page: the title the HTML page carries in its head, and its blocks.
#[derive(Debug, Clone)]
pub(crate) struct Doc {
    pub title: String,
    pub blocks: Vec<Block>,
}

/// A section of the report as its room builds it: its blocks and the files written for it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Section {
    pub blocks: Vec<Block>,
    pub files: Vec<PathBuf>,
}
