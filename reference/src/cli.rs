//! `cli.md`: every command and option, from clap's own `Command` through `clap-markdown`, which
//! leaves out hidden commands and options as `--help` does.

use crate::Page;

pub fn page(cli: &clap::Command) -> Page {
    let options = clap_markdown::MarkdownOptions::new()
        .show_footer(false)
        .show_table_of_contents(true);
    let body = clap_markdown::help_markdown_command_custom(cli, &options);
    // clap-markdown opens with a title and a sentence about itself; the page has its own.
    let body: String = (body.lines())
        .filter(|l| !l.starts_with("# ") && !l.starts_with("This document contains"))
        .map(|l| format!("{l}\n"))
        .collect();
    crate::page(
        "cli.md",
        "Command line",
        "Every command and option of the `warpscope` binary, as `warpscope COMMAND --help` prints them.",
        &body,
    )
}
