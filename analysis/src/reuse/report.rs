//! The report sections of the working-set / reuse-distance study and of the single-reference
//! regression, so that `analyze` shows both next to the paper's analyses.
//!
//! Why separate: both methods have their own modules ([`crate::reuse`], [`crate::regress`]); this
//! file only gathers their outputs into HTML and Markdown and keeps `sweep/analyze.rs` and
//! `sweep/report.rs` changes to one line each.
//!
//! Inputs: the reuse study's files in `SWEEP/reuse/` (`reuse_summary.csv`, `reuse.md`, the two
//! figures; written by `study::reuse_study`), copied into the analysis folder when present; and
//! [`crate::regress::compare`] run on the sweep itself (one platform: which reference features
//! its kernel time depends on), whose files land in the analysis folder. A missing reuse study or a
//! sweep the regression cannot use becomes a sentence in the section, never an error.

use crate::AnalysisError;
use crate::output::html_escape;
use crate::report::{Section, html_table, md_table};
use std::fmt::Write as _;
use std::path::Path;

const REUSE_FIGURES: [(&str, &str); 2] = [
    (
        "reuse_working_set",
        "Distinct bytes (32-B sectors) the texture fetches of one SM have touched, per block shape and volume layout; dashed: texture/L1 and L2 capacities.",
    ),
    (
        "reuse_hit_rates",
        "Texture hit rate per cache size: fully associative LRU prediction from the stack-distance histogram (lines) vs the emulator's set-associative cache (triangles).",
    ),
];

/// Builds both sections; `figures` = false leaves the figures out (tables only).
pub(crate) fn write_section(
    sweep_dir: &Path,
    out_dir: &Path,
    figures: bool,
) -> Result<Section, AnalysisError> {
    let mut sec = Section::default();
    reuse_section(&mut sec, sweep_dir, out_dir, figures)?;
    regress_section(&mut sec, sweep_dir, out_dir);
    Ok(sec)
}

fn reuse_section(
    sec: &mut Section,
    sweep_dir: &Path,
    out_dir: &Path,
    figures: bool,
) -> Result<(), AnalysisError> {
    let dir = sweep_dir.join("reuse");
    sec.html
        .push_str("<h2>Working set and reuse distance</h2>\n");
    sec.md.push_str("## Working set and reuse distance\n\n");
    let summary = dir.join("reuse_summary.csv");
    let Ok(text) = std::fs::read_to_string(&summary) else {
        let note = "No reuse study in this sweep (study::reuse_study writes it into SWEEP/reuse).";
        let _ = writeln!(sec.html, "<p>{}</p>", html_escape(note));
        let _ = writeln!(sec.md, "{note}\n");
        return Ok(());
    };
    let rows: Vec<Vec<String>> = text
        .lines()
        .map(split_csv_line)
        .filter(|r| !r.is_empty())
        .collect();
    sec.html.push_str(&html_table(&rows));
    sec.md.push_str(&md_table(&rows));
    if let Ok(words) = std::fs::read_to_string(dir.join("reuse.md")) {
        // The study's own Markdown carries its method note after the table: keep the prose lines.
        for para in words
            .split("\n\n")
            .filter(|p| p.starts_with("Mean") || p.starts_with("The simulated"))
        {
            let p = para.trim();
            let _ = writeln!(sec.html, "<p>{}</p>", html_escape(p));
            let _ = writeln!(sec.md, "{p}\n");
        }
    }
    if figures {
        for (stem, caption) in REUSE_FIGURES {
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
            let _ = writeln!(
                sec.html,
                "<figure>{svg}<figcaption>{}</figcaption></figure>",
                html_escape(caption)
            );
            let _ = writeln!(sec.md, "![{caption}]({stem}.png)\n");
        }
    }
    Ok(())
}

fn regress_section(sec: &mut Section, sweep_dir: &Path, out_dir: &Path) {
    sec.html
        .push_str("<h2>What the kernel time depends on (single-reference regression)</h2>\n");
    sec.md
        .push_str("## What the kernel time depends on (single-reference regression)\n\n");
    // One probe mode: its overhead is not a workload feature. The measuring mode when present.
    let modes: Vec<String> = crate::sweep_dir::read_sweep_csv(sweep_dir)
        .map(|rows| rows.into_iter().map(|r| r.mode).collect())
        .unwrap_or_default();
    let mode = ["fence", "dummy", "auto", "off", "naive"]
        .into_iter()
        .find(|m| modes.iter().any(|x| x == m))
        .map(str::to_string)
        .or_else(|| modes.first().cloned());
    match crate::regress::compare_mode(&[sweep_dir.to_path_buf()], out_dir, mode.as_deref()) {
        Ok(s) => {
            let intro = format!(
                "Forward selection by adjusted R² over natural-cubic-spline bases of the emulator's \
                 features ({}) explains the kernel time of the {} runs in mode {}. `warpscope \
                 compare SWEEP_A SWEEP_B …` does the same across platforms and names crossovers.",
                s.features.join(", "),
                s.runs.len(),
                mode.as_deref().unwrap_or("any")
            );
            let _ = writeln!(sec.html, "<p>{}</p>", html_escape(&intro));
            let _ = writeln!(sec.md, "{intro}\n");
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
            sec.html.push_str(&html_table(&rows));
            sec.md.push_str(&md_table(&rows));
            for w in &s.warnings {
                let _ = writeln!(sec.html, "<p>Warning: {}</p>", html_escape(w));
                let _ = writeln!(sec.md, "Warning: {w}\n");
            }
            sec.files.extend(s.files);
        }
        Err(e) => {
            let note = format!(
                "The regression could not run on this sweep: {}",
                trace::error_chain(&e)
            );
            let _ = writeln!(sec.html, "<p>{}</p>", html_escape(&note));
            let _ = writeln!(sec.md, "{note}\n");
        }
    }
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
        let sec = write_section(tmp.path(), &out, true).unwrap();
        assert!(sec.md.contains("No reuse study"));
        // Not a sweep either: the regression says why instead of failing the report.
        assert!(sec.md.contains("could not run"));
        let reuse = tmp.path().join("reuse");
        std::fs::create_dir_all(&reuse).unwrap();
        std::fs::write(
            reuse.join("reuse_summary.csv"),
            "shape,layout,fits_texture_cache\n16x8,bricked,true\n",
        )
        .unwrap();
        let sec = write_section(tmp.path(), &out, true).unwrap();
        assert!(sec.md.contains("| 16x8 | bricked | true |"));
        assert!(sec.html.contains("<td>16x8</td>"));
    }
}
