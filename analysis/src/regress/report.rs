//! What the regression says in words: `compare.md` of `warpscope compare`, and the report section
//! of the regression run on the sweep itself (one platform: which of the emulator's features its
//! kernel time depends on), whose files land in the analysis folder. A sweep the regression cannot
//! use becomes a sentence in the section, never an error.

use super::{CompareSummary, compare_mode};
use crate::report::{Block, Doc, Inline, Section};
use std::path::Path;

/// `compare.md`: per platform the ranked features with R², then the crossovers and warnings.
pub(super) fn compare_doc(s: &CompareSummary) -> Doc {
    let mut rows = vec![
        ["platform", "features (in order added)", "R²", "adj. R²"]
            .map(String::from)
            .to_vec(),
    ];
    for sel in &s.selections {
        let f: Vec<String> = (sel.steps.iter())
            .map(|st| format!("{} ({:.3})", st.feature, st.r2))
            .collect();
        rows.push(vec![
            sel.target.clone(),
            if f.is_empty() {
                "none".into()
            } else {
                f.join(" → ")
            },
            format!("{:.3}", sel.r2),
            format!("{:.3}", sel.adj_r2),
        ]);
    }
    let mut blocks = vec![
        Block::Heading(2, "Cross-platform comparison (single reference)".into()),
        Block::para(format!(
            "Reference: {} ({} runs). Features: {}.",
            s.platforms.first().map(String::as_str).unwrap_or(""),
            s.runs.len(),
            s.features.join(", ")
        )),
        Block::Table(rows),
    ];
    if s.crossovers.is_empty() {
        blocks.push(Block::para(
            "No crossover: the same platform is faster on every run.",
        ));
    }
    let mut items: Vec<String> = (s.crossovers.iter())
        .map(|c| {
            format!(
                "{} vs {}: between {} and {} the faster becomes {}.",
                c.platform_a, c.platform_b, c.before_run, c.after_run, c.faster_after
            )
        })
        .collect();
    items.extend(s.warnings.iter().map(|w| format!("warning: {w}")));
    if !items.is_empty() {
        blocks.push(Block::List(items));
    }
    Doc {
        title: "warpscope compare".into(),
        blocks,
    }
}

/// Runs the regression on the sweep, in its measuring mode, and builds the section.
pub(crate) fn section(sweep_dir: &Path, out_dir: &Path) -> Section {
    let mut sec = Section::default();
    sec.blocks.push(Block::Heading(
        2,
        "What the kernel time depends on (single-reference regression)".into(),
    ));
    // One probe mode: its overhead is not a workload feature. The measuring mode when present.
    let modes: Vec<String> = crate::sweep_dir::read_sweep_csv(sweep_dir)
        .map(|rows| rows.into_iter().map(|r| r.mode).collect())
        .unwrap_or_default();
    let mode = ["fence", "dummy", "auto", "off", "naive"]
        .into_iter()
        .find(|m| modes.iter().any(|x| x == m))
        .map(str::to_string)
        .or_else(|| modes.first().cloned());
    match compare_mode(&[sweep_dir.to_path_buf()], out_dir, mode.as_deref()) {
        Ok(s) => {
            sec.blocks.push(Block::Para(vec![
                Inline::Text(format!(
                    "Forward selection by adjusted R² over natural-cubic-spline bases of the \
                     emulator's features ({}) explains the kernel time of the {} runs in mode {}. ",
                    s.features.join(", "),
                    s.runs.len(),
                    mode.as_deref().unwrap_or("any")
                )),
                Inline::Code("warpscope compare SWEEP_A SWEEP_B …".into()),
                Inline::Text(" does the same across platforms and names crossovers.".into()),
            ]));
            let mut rows = vec![vec![
                "platform".to_string(),
                "step".into(),
                "feature".into(),
                "R²".into(),
                "adj. R²".into(),
            ]];
            for sel in &s.selections {
                for (i, st) in sel.steps.iter().enumerate() {
                    rows.push(vec![
                        sel.target.clone(),
                        (i + 1).to_string(),
                        st.feature.clone(),
                        format!("{:.3}", st.r2),
                        format!("{:.3}", st.adj_r2),
                    ]);
                }
            }
            sec.blocks.push(Block::Table(rows));
            for w in &s.warnings {
                sec.blocks.push(Block::para(format!("Warning: {w}")));
            }
            sec.files.extend(s.files);
        }
        Err(e) => sec.blocks.push(Block::para(format!(
            "The regression could not run on this sweep: {}",
            trace::error_chain(&e)
        ))),
    }
    sec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_that_is_no_sweep_is_a_sentence() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        std::fs::create_dir_all(&out).unwrap();
        // Not a sweep: the regression says why instead of failing the report.
        let sec = section(tmp.path(), &out);
        assert!(sec.markdown().contains("could not run"));
        assert!(sec.files.is_empty());
    }
}
