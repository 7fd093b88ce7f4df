//! warpscope's reference pages (`docs/reference/`), generated from the one typed definition of
//! each thing they describe, so that they cannot drift from the code: the command line from
//! clap's `Command`, `run.json`, `sweep.csv`, the launch spec and the emulator's configuration
//! from their types' JSON Schemas (schemars, with the field doc comments as the meanings), the
//! presets from the presets themselves, the probe log from `instrument`'s layout tables and the
//! exports' columns from their row types and the Parquet schema.
//!
//! Why a crate of its own: the pages read the definitions of five crates and render Markdown,
//! which none of those crates should have to know; the command line, which lives in the binary,
//! comes in as a `clap::Command`. The `warpscope` crate's test `reference_pages_are_current`
//! compares [`pages`] with the committed files ([`stale`]) and, with `WARPSCOPE_BLESS=1`,
//! rewrites them ([`write`]).

mod cli;
mod files;
mod logs;
mod markdown;
mod presets;
mod schema;

use std::path::{Path, PathBuf};

/// The command that rewrites the committed pages.
pub const BLESS_COMMAND: &str =
    "WARPSCOPE_BLESS=1 cargo test -p warpscope --bin warpscope reference";

/// One generated page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Its file name inside `docs/reference/`.
    pub file: &'static str,
    pub title: &'static str,
    /// What it answers, in one sentence (its first paragraph and its line in the index).
    pub summary: &'static str,
    /// The whole page, Markdown.
    pub text: String,
}

/// What can keep the pages from being made or compared.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    #[error("the built-in presets")]
    Preset(#[from] emulator::ConfigError),
    #[error("{what} does not match its definition: {why}")]
    Mismatch { what: &'static str, why: String },
    #[error("{path}: cannot {action}")]
    Io {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("writing the pages")]
    Write(#[from] trace::TraceError),
}

/// Every page, the index last; `cli` is the `warpscope` binary's command.
pub fn pages(cli: &clap::Command) -> Result<Vec<Page>, ReferenceError> {
    let mut pages = vec![
        cli::page(cli),
        files::run_json(),
        files::sweep_csv()?,
        files::launch_spec(),
        presets::page()?,
        logs::page()?,
        ptx_coverage(),
    ];
    pages.push(index(&pages));
    Ok(pages)
}

/// A page's text: a comment that says where it comes from, its title, its summary, `body`.
fn page(file: &'static str, title: &'static str, summary: &'static str, body: &str) -> Page {
    Page {
        file,
        title,
        summary,
        text: format!(
            "<!-- Generated from the code; do not edit. `{BLESS_COMMAND}` rewrites it. -->\n\n\
             # {title}\n\n{summary}\n\n{}\n",
            body.trim()
        ),
    }
}

/// `ptx-coverage.md`: the emulator's decoder, asked about one example of every instruction
/// family and special register nvcc emits.
fn ptx_coverage() -> Page {
    page(
        "ptx-coverage.md",
        "PTX coverage of the emulator",
        "What CUDA 12/13's nvcc emits for sm_70–sm_90, by instruction family and special \
         register, and whether the emulator runs it.",
        &format!(
            "Each row's example is decoded by the emulator (`emulator::coverage()`). A module \
             with an instruction the emulator cannot read still loads: its other kernels run, and \
             launching the kernel that holds it fails naming the kernel, the PTX line and the \
             instruction (an unsupported instruction faults only if a warp issues it).\n\n{}",
            emulator::coverage_markdown()
        ),
    )
}

/// `README.md`: one line per page.
fn index(pages: &[Page]) -> Page {
    let lines: Vec<String> = pages
        .iter()
        .map(|p| format!("- [{}]({}): {}", p.title, p.file, p.summary))
        .collect();
    page(
        "README.md",
        "Reference",
        "The exact commands, files and formats of warpscope, each page generated from the \
         definition the code itself uses.",
        &lines.join("\n"),
    )
}

/// The pages in `dir` that differ from `pages`: changed or missing, and files there that no
/// page is (a page that was renamed or dropped). Empty when the folder is current.
pub fn stale(dir: &Path, pages: &[Page]) -> Result<Vec<PathBuf>, ReferenceError> {
    let mut out = Vec::new();
    for p in pages {
        let path = dir.join(p.file);
        match std::fs::read_to_string(&path) {
            Ok(text) if text == p.text => {}
            Ok(_) => out.push(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => out.push(path),
            Err(source) => {
                return Err(ReferenceError::Io {
                    path,
                    action: "read",
                    source,
                });
            }
        }
    }
    out.extend(strays(dir, pages)?);
    Ok(out)
}

/// Files in `dir` that are not one of `pages`.
fn strays(dir: &Path, pages: &[Page]) -> Result<Vec<PathBuf>, ReferenceError> {
    let read = |source| ReferenceError::Io {
        path: dir.to_path_buf(),
        action: "list",
        source,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(read(e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let name = entry.map_err(read)?.file_name();
        if !pages.iter().any(|p| name == p.file) {
            out.push(dir.join(name));
        }
    }
    out.sort();
    Ok(out)
}

/// Writes every page into `dir` (atomically, each) and removes the files there that no page is.
pub fn write(dir: &Path, pages: &[Page]) -> Result<(), ReferenceError> {
    std::fs::create_dir_all(dir).map_err(|source| ReferenceError::Io {
        path: dir.to_path_buf(),
        action: "create",
        source,
    })?;
    for p in pages {
        trace::write_bytes_atomic(&dir.join(p.file), p.text.as_bytes())?;
    }
    for path in strays(dir, pages)? {
        std::fs::remove_file(&path).map_err(|source| ReferenceError::Io {
            path,
            action: "remove",
            source,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command() -> clap::Command {
        clap::Command::new("tool")
            .about("A tool")
            .subcommand(clap::Command::new("shown").about("Shown"))
            .subcommand(clap::Command::new("secret").about("Secret").hide(true))
    }

    #[test]
    fn pages_are_deterministic_and_the_index_names_every_other_page() {
        let a = pages(&command()).unwrap();
        assert_eq!(a, pages(&command()).unwrap());
        let index = a.last().unwrap();
        assert_eq!(index.file, "README.md");
        for p in &a[..a.len() - 1] {
            assert!(index.text.contains(&format!("]({})", p.file)), "{}", p.file);
            assert!(p.text.contains(&format!("# {}\n", p.title)), "{}", p.file);
        }
    }

    #[test]
    fn hidden_commands_stay_hidden() {
        let cli = &pages(&command()).unwrap()[0];
        assert!(cli.text.contains("shown"), "{}", cli.text);
        assert!(!cli.text.contains("secret"), "{}", cli.text);
    }

    #[test]
    fn stale_names_changed_missing_and_stray_files_and_write_clears_them() {
        let dir = tempfile::tempdir().unwrap();
        let pages = pages(&command()).unwrap();
        assert_eq!(stale(dir.path(), &pages).unwrap().len(), pages.len());
        write(dir.path(), &pages).unwrap();
        assert_eq!(stale(dir.path(), &pages).unwrap(), Vec::<PathBuf>::new());
        std::fs::write(dir.path().join(pages[1].file), "old").unwrap();
        std::fs::write(dir.path().join("gone.md"), "").unwrap();
        assert_eq!(
            stale(dir.path(), &pages).unwrap(),
            vec![dir.path().join(pages[1].file), dir.path().join("gone.md")]
        );
        write(dir.path(), &pages).unwrap();
        assert!(stale(dir.path(), &pages).unwrap().is_empty());
    }
}
