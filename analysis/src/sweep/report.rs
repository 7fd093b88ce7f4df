//! `report.html` (one self-contained page: no scripts, no external files; figures inline as SVG)
//! and `report.md` (the same tables and findings; figures linked as PNG files beside it).

use crate::fmt::{pretty_shape, pretty_view, sig};
use crate::output::html_escape;
use crate::report::{html_table, md_cell, md_table};
use crate::sweep::model::Analysis;
use crate::table::Table;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Breakdown columns the report shows (the CSV has all of them).
fn breakdown_columns(a: &Analysis) -> Vec<String> {
    let mut cols: Vec<String> = [
        "run",
        "shape",
        "view",
        "mode",
        "mem_cycles",
        "other_cycles",
        "mem_share",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for id in &a.site_ids {
        cols.push(format!("mem_share_site{id}"));
    }
    cols.extend(
        [
            "mean_access_cycles",
            "mem_ref_freq",
            "tex_hit_rate",
            "frame_rate",
            "warp_mean_var",
            "warp_mean_spread",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    cols
}

fn project(t: &Table, cols: &[String]) -> Table {
    let mut out = Table::default();
    for c in cols {
        if let Some(col) = t.get(c) {
            out.push(c, col.clone());
        }
    }
    out
}

/// The values per shape behind each correlation group (one table for all groups).
fn points_rows(a: &Analysis) -> Vec<Vec<String>> {
    let opt = |x: Option<f64>| x.map_or_else(|| "–".to_string(), sig);
    let mut rows = vec![
        [
            "view",
            "mode",
            "shape",
            "run",
            "mem_ref_freq",
            "tex_hit_rate",
            "frame_rate",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
    ];
    // Both y's of a group share its runs; list each group once (from its tex_hit_rate entry).
    let mut seen = std::collections::BTreeSet::new();
    for c in &a.corrs {
        if !seen.insert((&c.backend, &c.preset, &c.view, &c.mode)) {
            continue;
        }
        for r in a.runs.iter().filter(|r| {
            r.files.row.view == c.view
                && r.files.row.mode == c.mode
                && r.files.row.backend == c.backend
                && r.files.row.preset == c.preset
        }) {
            rows.push(vec![
                pretty_view(&c.view),
                c.mode.clone(),
                pretty_shape(&r.files.row.shape),
                r.files.row.run.clone(),
                opt(r.bd.mem_ref_freq),
                opt(r.files.row.tex_hit_rate),
                opt(r.files.row.frame_rate),
            ]);
        }
    }
    rows
}

/// Hot-spot rows shown in the report: (a) the 20 warps and blocks with the largest robust z of
/// the excess ratio over all runs; (b) per run, the warp with the most excess memory time.
fn hot_rows(t: &Table) -> (Vec<usize>, Vec<usize>) {
    use crate::table::Col;
    let (Some(Col::Str(kind)), Some(Col::F64(z)), Some(Col::U32(rank))) =
        (t.get("kind"), t.get("z_excess_ratio"), t.get("rank_excess"))
    else {
        return (Vec::new(), Vec::new());
    };
    let mut by_z: Vec<usize> = (0..t.height())
        .filter(|&i| kind[i] != "site" && z[i].is_some())
        .collect();
    by_z.sort_by(|&a, &b| {
        let (za, zb) = (z[a].unwrap_or(0.0), z[b].unwrap_or(0.0));
        zb.total_cmp(&za).then(a.cmp(&b))
    });
    by_z.truncate(20);
    let top_warps = (0..t.height())
        .filter(|&i| kind[i] == "warp" && rank[i] == 1)
        .collect();
    (by_z, top_warps)
}

const HOT_INTRO: &str = "Excess memory time = memory time − accesses × the run's median per-warp mean access time; excess ratio = memory time / (accesses × that median). Outliers have a robust |z| above the threshold in excess ratio or in variance. All ranked rows are in hotspots.csv.";

fn site_legend(a: &Analysis) -> Vec<String> {
    let mut names: BTreeMap<u16, String> = BTreeMap::new();
    for r in &a.runs {
        for s in &r.stats.sites {
            names
                .entry(s.id)
                .or_insert_with(|| format!("{} ({})", s.name, s.region.name()));
        }
    }
    a.site_ids
        .iter()
        .map(|id| {
            format!(
                "site{id} = {}",
                names
                    .get(id)
                    .cloned()
                    .unwrap_or_else(|| "undeclared".into())
            )
        })
        .collect()
}

/// Distinct effective configs, each with the runs that used it (in run order).
fn configs(a: &Analysis) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for r in &a.runs {
        let Some(c) = &r.files.config else { continue };
        match out.iter_mut().find(|(text, _)| text == c) {
            Some((_, runs)) => runs.push(r.files.row.run.clone()),
            None => out.push((c.clone(), vec![r.files.row.run.clone()])),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1400px;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:13px}\
th,td{border:1px solid #bbb;padding:3px 6px;text-align:right;white-space:nowrap}\
th{background:#eee}td:first-child,th:first-child{text-align:left}\
figure{margin:1.5em 0}figure svg{max-width:100%;height:auto;border:1px solid #ddd}\
figcaption{font-size:13px;color:#444}pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:12px}\
.scroll{overflow-x:auto}";

fn html_list(items: &[String]) -> String {
    let mut s = String::from("<ul>\n");
    for i in items {
        let _ = writeln!(s, "<li>{}</li>", html_escape(i));
    }
    s.push_str("</ul>\n");
    s
}

fn html_figures(a: &Analysis, prefix: &str) -> String {
    let mut s = String::new();
    for f in a.figures.iter().filter(|f| f.stem.starts_with(prefix)) {
        // The SVG is ours (plotters output; text escaped by plotters), so it is inlined as is;
        // the XML declaration, if any, is not allowed inside HTML.
        let svg = f
            .svg
            .trim_start()
            .strip_prefix("<?xml")
            .and_then(|rest| rest.find("?>").map(|i| &rest[i + 2..]))
            .unwrap_or(&f.svg);
        let _ = write!(
            s,
            "<figure id=\"{}\">\n{}\n<figcaption><b>{}</b>. {} (<a href=\"{}.png\">PNG</a>, <a href=\"{}.svg\">SVG</a>)</figcaption></figure>\n",
            html_escape(&f.stem),
            svg.trim(),
            html_escape(&f.title),
            html_escape(&f.caption),
            html_escape(&f.stem),
            html_escape(&f.stem)
        );
    }
    s
}

pub(crate) fn html(a: &Analysis) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>warpscope analysis</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>warpscope: where the memory time goes</h1>\n<p>Sweep <code>{}</code>: {} runs analysed, {} left out. Memory time of a warp = sum of its timed accesses; other = kernel begin→end minus memory time. Memory reference frequency = 1 / mean access time (accesses per cycle).</p>\n",
        html_escape(&a.sweep_dir.display().to_string()),
        a.runs.len(),
        a.skipped.len()
    );
    if !a.verdict.is_empty() {
        s.push_str("<h2>Verdict</h2>\n");
        s.push_str(&html_list(&a.verdict));
        s.push_str(&html_figures(a, "breakdown_"));
    }
    s.push_str("<h2>Findings</h2>\n");
    if a.findings.is_empty() {
        s.push_str("<p>Nothing stands out (too few runs or values to compare).</p>\n");
    } else {
        s.push_str(&html_list(&a.findings));
    }
    if !a.notes.is_empty() {
        s.push_str("<h2>Notes on the data</h2>\n");
        s.push_str(&html_list(&a.notes));
    }
    s.push_str("<h2>How much did measuring change the kernel?</h2>\n");
    s.push_str(&html_list(&a.perturbation.verdict));
    s.push_str(&html_figures(a, "perturbation_"));
    s.push_str(&html_table(&a.perturbation.table.text_rows(None)));
    s.push_str(&crate::sweep::paper::section(&a.runs).html);
    s.push_str("<h2>Breakdown (fig. 5)</h2>\n");
    let _ = writeln!(
        s,
        "<p>Mean cycles per warp; shares of warp time. Sites: {}.</p>",
        html_escape(&site_legend(a).join("; "))
    );
    s.push_str(&html_table(
        &project(&a.breakdown, &breakdown_columns(a)).text_rows(None),
    ));
    // With a verdict, its figures stand under it at the top.
    if a.verdict.is_empty() {
        s.push_str(&html_figures(a, "breakdown_"));
    }
    s.push_str("<h2>Memory reference frequency vs hit rate and frame rate (figs. 6–9)</h2>\n");
    s.push_str(&html_table(&a.correlation.text_rows(None)));
    s.push_str("<p>The values per shape:</p>\n");
    s.push_str(&html_table(&points_rows(a)));
    s.push_str(&html_figures(a, "frequency_"));
    s.push_str("<h2>Per-warp distribution (figs. 10, 11)</h2>\n");
    if a.figures.iter().any(|f| f.stem.starts_with("warps_")) {
        s.push_str(&html_figures(a, "warps_"));
        s.push_str(&html_figures(a, "series_"));
    } else {
        s.push_str("<p>No per-warp figures (figures disabled or no run with accesses).</p>\n");
    }
    let _ = writeln!(s, "<h2>Hot spots</h2>\n<p>{}</p>", html_escape(HOT_INTRO));
    let (by_z, top) = hot_rows(&a.hot);
    s.push_str("<h3>Largest excess ratio (robust z), all runs</h3>\n");
    s.push_str(&html_table(&a.hot.text_rows(Some(&by_z))));
    s.push_str("<h3>The warp with the most excess memory time, per run</h3>\n");
    s.push_str(&html_table(&a.hot.text_rows(Some(&top))));
    s.push_str(&a.roofline.html);
    s.push_str(&a.reuse_regress.html);
    s.push_str("<h2>Effective configurations</h2>\n");
    let cfgs = configs(a);
    if cfgs.is_empty() {
        s.push_str("<p>No run wrote a config.toml (GPU runs have none).</p>\n");
    }
    for (text, runs) in cfgs {
        let _ = writeln!(
            s,
            "<details><summary>config.toml of {} run(s): {}</summary><pre>{}</pre></details>",
            runs.len(),
            html_escape(&runs.join(", ")),
            html_escape(&text)
        );
    }
    s.push_str("</body>\n</html>\n");
    s
}

fn md_figures(a: &Analysis, prefix: &str) -> String {
    let mut s = String::new();
    for f in a.figures.iter().filter(|f| f.stem.starts_with(prefix)) {
        let _ = writeln!(
            s,
            "![{}]({}.png)\n\n*{}.* {} ([SVG]({}.svg))\n",
            md_cell(&f.title),
            f.stem,
            md_cell(&f.title),
            md_cell(&f.caption),
            f.stem
        );
    }
    s
}

pub(crate) fn markdown(a: &Analysis) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# warpscope: where the memory time goes\n\nSweep `{}`: {} runs analysed, {} left out. Memory time of a warp = sum of its timed accesses; other = kernel begin→end minus memory time. Memory reference frequency = 1 / mean access time (accesses per cycle).\n",
        a.sweep_dir.display(),
        a.runs.len(),
        a.skipped.len()
    );
    if !a.verdict.is_empty() {
        s.push_str("## Verdict\n\n");
        for v in &a.verdict {
            let _ = writeln!(s, "- {v}");
        }
        s.push('\n');
        s.push_str(&md_figures(a, "breakdown_"));
    }
    s.push_str("## Findings\n\n");
    if a.findings.is_empty() {
        s.push_str("Nothing stands out (too few runs or values to compare).\n\n");
    }
    for f in &a.findings {
        let _ = writeln!(s, "- {f}");
    }
    s.push('\n');
    if !a.notes.is_empty() {
        s.push_str("## Notes on the data\n\n");
        for n in &a.notes {
            let _ = writeln!(s, "- {n}");
        }
        s.push('\n');
    }
    s.push_str("## How much did measuring change the kernel?\n\n");
    for v in &a.perturbation.verdict {
        let _ = writeln!(s, "- {v}");
    }
    s.push('\n');
    s.push_str(&md_figures(a, "perturbation_"));
    s.push_str(&md_table(&a.perturbation.table.text_rows(None)));
    s.push_str(&crate::sweep::paper::section(&a.runs).md);
    let _ = writeln!(
        s,
        "## Breakdown (fig. 5)\n\nMean cycles per warp; shares of warp time. Sites: {}.\n",
        site_legend(a).join("; ")
    );
    s.push_str(&md_table(
        &project(&a.breakdown, &breakdown_columns(a)).text_rows(None),
    ));
    if a.verdict.is_empty() {
        s.push_str(&md_figures(a, "breakdown_"));
    }
    s.push_str("## Memory reference frequency vs hit rate and frame rate (figs. 6–9)\n\n");
    s.push_str(&md_table(&a.correlation.text_rows(None)));
    s.push_str("The values per shape:\n\n");
    s.push_str(&md_table(&points_rows(a)));
    s.push_str(&md_figures(a, "frequency_"));
    s.push_str("## Per-warp distribution (figs. 10, 11)\n\n");
    s.push_str(&md_figures(a, "warps_"));
    s.push_str(&md_figures(a, "series_"));
    let _ = writeln!(s, "## Hot spots\n\n{HOT_INTRO}\n");
    let (by_z, top) = hot_rows(&a.hot);
    s.push_str("### Largest excess ratio (robust z), all runs\n\n");
    s.push_str(&md_table(&a.hot.text_rows(Some(&by_z))));
    s.push_str("### The warp with the most excess memory time, per run\n\n");
    s.push_str(&md_table(&a.hot.text_rows(Some(&top))));
    s.push_str(&a.roofline.md);
    s.push_str(&a.reuse_regress.md);
    s.push_str("## Effective configurations\n\n");
    let views: Vec<String> = a.views.iter().map(|v| pretty_view(v)).collect();
    let _ = writeln!(s, "Views: {}.\n", views.join(", "));
    for (text, runs) in configs(a) {
        let _ = writeln!(
            s,
            "config.toml of {}:\n\n```toml\n{}\n```\n",
            runs.join(", "),
            text.trim_end()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_escape_their_cells() {
        let rows = vec![vec!["a|b".to_string()], vec!["<x>".to_string()]];
        assert!(md_table(&rows).contains("a\\|b"));
        assert!(html_table(&rows).contains("&lt;x&gt;"));
    }
}
