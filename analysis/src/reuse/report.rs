//! The report section of the working-set / reuse-distance study, so that `analyze` shows it next
//! to the paper's analyses.
//!
//! Input: the reuse study's files in `SWEEP/reuse/` (`reuse_summary.csv`, `reuse.md`, the two
//! figures; written by `study::reuse_study`), copied into the analysis folder when present. A
//! missing reuse study becomes a sentence in the section, never an error.

use crate::AnalysisError;
use crate::figures::Drawn;
use crate::report::{Block, Section};
use std::path::Path;

/// The study's figures: (file stem, title, caption).
const REUSE_FIGURES: [(&str, &str, &str); 2] = [
    (
        "reuse_working_set",
        "Working set of one SM's texture fetches",
        "Distinct bytes (32-B sectors) the texture fetches of one SM have touched, per block shape and volume layout; dashed: texture/L1 and L2 capacities.",
    ),
    (
        "reuse_hit_rates",
        "Texture hit rate per cache size",
        "Fully associative LRU prediction from the stack-distance histogram (lines) vs the emulator's set-associative cache (triangles).",
    ),
];

/// Builds the section, copying the study's figures beside the report; `figures` = false leaves
/// them out (tables only).
pub(crate) fn section(
    sweep_dir: &Path,
    out_dir: &Path,
    figures: bool,
) -> Result<Section, AnalysisError> {
    let dir = sweep_dir.join("reuse");
    let mut sec = Section::default();
    sec.blocks
        .push(Block::Heading(2, "Working set and reuse distance".into()));
    let summary = dir.join("reuse_summary.csv");
    let Ok(text) = std::fs::read_to_string(&summary) else {
        sec.blocks.push(Block::para(
            "No reuse study in this sweep (study::reuse_study writes it into SWEEP/reuse).",
        ));
        return Ok(sec);
    };
    let rows: Vec<Vec<String>> = text
        .lines()
        .map(split_csv_line)
        .filter(|r| !r.is_empty())
        .collect();
    sec.blocks.push(Block::Table(rows));
    if let Ok(words) = std::fs::read_to_string(dir.join("reuse.md")) {
        // The study's own Markdown carries its method note after the table: keep the prose lines.
        for para in words
            .split("\n\n")
            .filter(|p| p.starts_with("Mean") || p.starts_with("The simulated"))
        {
            sec.blocks.push(Block::para(para.trim()));
        }
    }
    if figures {
        for (stem, title, caption) in REUSE_FIGURES {
            let svg_src = dir.join(format!("{stem}.svg"));
            let Ok(svg) = std::fs::read_to_string(&svg_src) else {
                continue;
            };
            for ext in ["svg", "png"] {
                let from = dir.join(format!("{stem}.{ext}"));
                let to = out_dir.join(format!("{stem}.{ext}"));
                if from.is_file() {
                    std::fs::copy(&from, &to).map_err(|e| AnalysisError::io(&to, e))?;
                    sec.files.push(to);
                }
            }
            sec.blocks.push(Block::Figure(Drawn {
                stem: stem.into(),
                title: title.into(),
                caption: caption.into(),
                svg,
            }));
        }
    }
    Ok(sec)
}

/// Splits one line of the study's CSV (the csv crate quotes fields only when needed; the summary
/// has no commas inside fields, so a quoted field is unquoted and kept whole).
fn split_csv_line(line: &str) -> Vec<String> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(line.as_bytes());
    rdr.records()
        .next()
        .and_then(Result::ok)
        .map(|r| r.iter().map(str::to_string).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_reuse_study_is_a_sentence_and_the_table_is_read_when_present() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        std::fs::create_dir_all(&out).unwrap();
        let sec = section(tmp.path(), &out, true).unwrap();
        assert!(sec.markdown().contains("No reuse study"));
        let reuse = tmp.path().join("reuse");
        std::fs::create_dir_all(&reuse).unwrap();
        std::fs::write(
            reuse.join("reuse_summary.csv"),
            "shape,layout,fits_texture_cache\n16x8,bricked,true\n",
        )
        .unwrap();
        let sec = section(tmp.path(), &out, true).unwrap();
        assert!(sec.markdown().contains("| 16x8 | bricked | true |"));
        assert!(sec.html().contains("<td>16x8</td>"));
    }
}
