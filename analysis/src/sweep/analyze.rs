//! `analyze`: a sweep directory in, tables, figures and the report out. This file is the
//! orchestration: read the runs, compute, write the tables and figures, gather the sections of
//! the other rooms (roofline and bound, working set, regression: through their facades) and hand
//! everything to the report's assembly (`report.rs`).

use crate::AnalysisError;
use crate::figures::{Figure, FigureKind, LinePanel, StackedPanel};
use crate::fmt::{pretty_shape, pretty_view, sig};
use crate::output::slug;
use crate::stats;
use crate::sweep::findings::{
    correlation_findings, naive_vs_measured, notes, outlier_findings, site_findings,
    variance_findings, verdict,
};
use crate::sweep::hotspots::{self, Hot};
use crate::sweep::model::{Analysis, Corr, Run, first_seen, measured_mode, mode_rank};
use crate::sweep::runs::{self as sweep, Skipped};
use crate::sweep::runstats::RunStats;
use crate::sweep::{paper, perturbation, report};
use crate::table::{Col, Table};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What `analyze` may be told; `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyzeOptions {
    /// The SM whose warps the per-warp figure shows (default: the lowest SM id in the run).
    pub sm: Option<u32>,
    /// Runs (folder names) that get per-warp and single-warp figures. Default: per viewpoint, in
    /// its measuring mode (auto, else dummy, else fence, else naive), the runs with the highest
    /// and the lowest per-warp variance.
    pub focus_runs: Vec<String>,
    /// Global warp index of the single-warp series (default: see the crate docs).
    pub series_warp: Option<u32>,
    /// Warps and blocks kept per run in hotspots.csv besides outliers (default 10).
    pub top_k: usize,
    /// |robust z| above which an entity is an outlier (default 3.5).
    pub z_threshold: f64,
    /// Two hit rates closer than this (absolute, 0–1) count as "the same" (default 0.01).
    pub same_hit_rate_tolerance: f64,
    /// Draw figures (PNG + SVG); off makes a table-only report.
    pub figures: bool,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            sm: None,
            focus_runs: Vec::new(),
            series_warp: None,
            top_k: 10,
            z_threshold: 3.5,
            same_hit_rate_tolerance: 0.01,
            figures: true,
        }
    }
}

/// What `analyze` did.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalysisSummary {
    /// Runs whose traces were analysed.
    pub runs_analyzed: usize,
    /// `run: reason` for each listed run that was left out.
    pub skipped: Vec<String>,
    /// `run: reason` for each analysed run left out of some correlation (one per run and
    /// correlation, for programs; people read `notes`).
    pub excluded_from_correlation: Vec<String>,
    /// The report's notes on the data: what applies to many runs said once, with the count.
    pub notes: Vec<String>,
    /// The report's opening verdict: per view, where the time goes and what to change.
    pub verdict: Vec<String>,
    /// The plain-words findings, as in the report.
    pub findings: Vec<String>,
    /// Every file written, sorted.
    pub files: Vec<PathBuf>,
    pub report_html: PathBuf,
    pub report_md: PathBuf,
}

/// Analyses the sweep in `sweep_dir` and writes breakdown.csv, correlation.csv, warps.csv,
/// hotspots.csv, the figures (PNG + SVG), report.html and report.md into `out_dir` (created if
/// needed). Every file is written atomically; the same sweep gives the same bytes.
pub fn analyze(
    sweep_dir: &Path,
    out_dir: &Path,
    opts: &AnalyzeOptions,
) -> Result<AnalysisSummary, AnalysisError> {
    let rows = crate::sweep_dir::read_sweep_csv(sweep_dir)?;
    let (found, mut skipped) = sweep::locate_runs(sweep_dir, rows);
    let mut runs = Vec::new();
    for files in found {
        if files.row.mode == "off" {
            skipped.push(Skipped {
                run: files.row.run.clone(),
                reason: "probe mode off: no memory records (overhead reference only)".into(),
            });
            continue;
        }
        let stats = match trace::TraceReader::open(&files.trace).and_then(|r| RunStats::scan(&r)) {
            Ok(s) => s,
            Err(e) => {
                skipped.push(Skipped {
                    run: files.row.run.clone(),
                    reason: format!("unreadable trace: {}", trace::error_chain(&e)),
                });
                continue;
            }
        };
        let bd = stats.breakdown();
        runs.push(Run { files, stats, bd });
    }
    if runs.is_empty() {
        return Err(AnalysisError::NoRuns {
            path: sweep_dir.to_path_buf(),
            reason: skipped
                .iter()
                .map(|s| format!("{}: {}", s.run, s.reason))
                .collect::<Vec<_>>()
                .join("; "),
        });
    }
    std::fs::create_dir_all(out_dir).map_err(|e| AnalysisError::io(out_dir, e))?;

    let mut files = Vec::new();
    let site_ids: Vec<u16> = runs
        .iter()
        .flat_map(|r| r.stats.site_totals.keys().copied())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let breakdown = breakdown_table(&runs, &site_ids);
    let corrs = correlations(&runs);
    let correlation = correlation_table(&corrs);
    let warps = warps_table(&runs);
    let hot_rows: Vec<Vec<Hot>> = runs
        .iter()
        .map(|r| hotspots::rank(&r.stats, opts.top_k, opts.z_threshold))
        .collect();
    let hot = hot_table(&runs, &hot_rows);
    let rows: Vec<&trace::SweepRow> = runs.iter().map(|r| &r.files.row).collect();
    let mut perturbation = perturbation::assess(&rows);
    perturbation.sites = perturbation::site_truth(&runs);
    if perturbation.sites.height() > 0 {
        let p = out_dir.join("truth_sites.csv");
        perturbation.sites.write_csv(&p)?;
        files.push(p);
    }
    for (name, t) in [
        ("perturbation.csv", &perturbation.table),
        ("breakdown.csv", &breakdown),
        ("correlation.csv", &correlation),
        ("warps.csv", &warps),
        ("hotspots.csv", &hot),
    ] {
        let p = out_dir.join(name);
        t.write_csv(&p)?;
        files.push(p);
    }

    let views = first_seen(runs.iter().map(|r| r.files.row.view.clone()));
    let verdict = verdict(&runs, &views);
    let mut findings = Vec::new();
    findings.extend(naive_vs_measured(&runs, &views));
    findings.extend(site_findings(&runs, &views));
    findings.extend(correlation_findings(&corrs));
    findings.extend(variance_findings(
        &runs,
        &views,
        opts.same_hit_rate_tolerance,
    ));
    findings.extend(outlier_findings(&runs, &views, &hot_rows, opts.z_threshold));
    let (notes, excluded) = notes(&skipped, &corrs, &runs);

    let mut drawn = Vec::new();
    if opts.figures {
        for fig in figures(&runs, &views, opts) {
            let d = fig.render(out_dir)?;
            files.push(out_dir.join(format!("{}.png", d.stem)));
            files.push(out_dir.join(format!("{}.svg", d.stem)));
            drawn.push(d);
        }
    }
    let run_names: Vec<(String, String)> = runs
        .iter()
        .map(|r| (r.files.row.run.clone(), r.files.row.preset.clone()))
        .collect();
    let companions = vec![
        crate::roofline::section(sweep_dir, out_dir, &run_names, opts.figures)?,
        crate::reuse::section(sweep_dir, out_dir, opts.figures)?,
        crate::regress::section(sweep_dir, out_dir),
    ];
    for c in &companions {
        files.extend(c.files.iter().cloned());
    }
    let paper = paper::section(&runs);
    let analysis = Analysis {
        sweep_dir: sweep_dir.to_path_buf(),
        runs,
        skipped,
        site_ids,
        breakdown,
        correlation,
        corrs,
        hot,
        verdict,
        findings,
        notes,
        figures: drawn,
        views,
        perturbation,
        paper,
        companions,
    };
    let report_html = out_dir.join("report.html");
    let report_md = out_dir.join("report.md");
    crate::report::write(&report::document(&analysis), &report_html, &report_md)?;
    files.push(report_html.clone());
    files.push(report_md.clone());
    files.sort();
    Ok(AnalysisSummary {
        runs_analyzed: analysis.runs.len(),
        skipped: analysis
            .skipped
            .iter()
            .map(|s| format!("{}: {}", s.run, s.reason))
            .collect(),
        excluded_from_correlation: excluded,
        notes: analysis.notes,
        verdict: analysis.verdict,
        findings: analysis.findings,
        files,
        report_html,
        report_md,
    })
}

fn strs(runs: &[Run], f: impl Fn(&Run) -> String) -> Col {
    Col::Str(runs.iter().map(f).collect())
}

fn floats(runs: &[Run], f: impl Fn(&Run) -> Option<f64>) -> Col {
    Col::F64(runs.iter().map(f).collect())
}

fn breakdown_table(runs: &[Run], site_ids: &[u16]) -> Table {
    let mut t = Table::default();
    t.push("run", strs(runs, |r| r.files.row.run.clone()));
    t.push("backend", strs(runs, |r| r.files.row.backend.clone()));
    t.push("preset", strs(runs, |r| r.files.row.preset.clone()));
    t.push("shape", strs(runs, |r| r.files.row.shape.clone()));
    t.push("view", strs(runs, |r| r.files.row.view.clone()));
    t.push("mode", strs(runs, |r| r.files.row.mode.clone()));
    t.push("warps", Col::U64(runs.iter().map(|r| r.bd.warps).collect()));
    t.push(
        "accesses",
        Col::U64(runs.iter().map(|r| r.bd.accesses).collect()),
    );
    t.push("mem_cycles", floats(runs, |r| Some(r.bd.mem_cycles)));
    t.push("other_cycles", floats(runs, |r| Some(r.bd.other_cycles)));
    t.push("mem_share", floats(runs, |r| Some(r.bd.mem_share)));
    for id in site_ids {
        t.push(
            &format!("mem_cycles_site{id}"),
            floats(runs, |r| Some(r.bd.sites.get(id).map_or(0.0, |s| s.0))),
        );
        t.push(
            &format!("mem_share_site{id}"),
            floats(runs, |r| Some(r.bd.sites.get(id).map_or(0.0, |s| s.1))),
        );
    }
    t.push("mean_access_cycles", floats(runs, |r| r.bd.mean_access));
    t.push("mem_ref_freq", floats(runs, |r| r.bd.mem_ref_freq));
    t.push("tex_hit_rate", floats(runs, |r| r.files.row.tex_hit_rate));
    t.push("frame_rate", floats(runs, |r| r.files.row.frame_rate));
    t.push("kernel_ms", floats(runs, |r| r.files.row.kernel_ms));
    t.push("warp_mean_var", floats(runs, |r| r.bd.warp_mean_var));
    t.push("warp_mean_spread", floats(runs, |r| r.bd.warp_mean_spread));
    t.push(
        "dropped_records",
        Col::U64(runs.iter().map(|r| r.stats.dropped).collect()),
    );
    t.push(
        "wrapped_records",
        Col::U64(runs.iter().map(|r| r.stats.wrapped).collect()),
    );
    t
}

/// Correlations of memory reference frequency with hit rate and frame rate across the runs
/// (block shapes) of each (backend, preset, view, mode).
fn correlations(runs: &[Run]) -> Vec<Corr> {
    let mut groups: BTreeMap<(String, String, String, String), Vec<usize>> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        let row = &r.files.row;
        groups
            .entry((
                row.backend.clone(),
                row.preset.clone(),
                row.view.clone(),
                row.mode.clone(),
            ))
            .or_default()
            .push(i);
    }
    let mut out = Vec::new();
    for ((backend, preset, view, mode), idx) in groups {
        for y in ["tex_hit_rate", "frame_rate"] {
            let mut used = Vec::new();
            let mut excluded = Vec::new();
            let mut missing_y = 0;
            for &i in &idx {
                let r = &runs[i];
                let yv = match y {
                    "tex_hit_rate" => r.files.row.tex_hit_rate,
                    _ => r.files.row.frame_rate,
                };
                match (r.bd.mem_ref_freq, yv) {
                    (Some(_), Some(_)) => used.push(i),
                    (None, _) => excluded.push(format!(
                        "Run {} has no access records, so no memory reference frequency",
                        r.files.row.run
                    )),
                    (_, None) => {
                        missing_y += 1;
                        excluded.push(format!("Run {} has no {y}", r.files.row.run));
                    }
                }
            }
            let xs: Vec<f64> = used
                .iter()
                .filter_map(|&i| runs[i].bd.mem_ref_freq)
                .collect();
            let ys: Vec<f64> = used
                .iter()
                .filter_map(|&i| match y {
                    "tex_hit_rate" => runs[i].files.row.tex_hit_rate,
                    _ => runs[i].files.row.frame_rate,
                })
                .collect();
            out.push(Corr {
                backend: backend.clone(),
                preset: preset.clone(),
                view: view.clone(),
                mode: mode.clone(),
                y,
                pearson: stats::pearson(&xs, &ys),
                spearman: stats::spearman(&xs, &ys),
                used,
                excluded,
                missing_y,
            });
        }
    }
    out
}

fn correlation_table(corrs: &[Corr]) -> Table {
    let mut t = Table::default();
    let s = |f: &dyn Fn(&Corr) -> String| Col::Str(corrs.iter().map(f).collect());
    t.push("backend", s(&|c| c.backend.clone()));
    t.push("preset", s(&|c| c.preset.clone()));
    t.push("view", s(&|c| c.view.clone()));
    t.push("mode", s(&|c| c.mode.clone()));
    t.push("x", s(&|_| "mem_ref_freq".into()));
    t.push("y", s(&|c| c.y.into()));
    t.push(
        "pearson",
        Col::F64(corrs.iter().map(|c| c.pearson).collect()),
    );
    t.push(
        "spearman",
        Col::F64(corrs.iter().map(|c| c.spearman).collect()),
    );
    t.push(
        "n",
        Col::U64(corrs.iter().map(|c| c.used.len() as u64).collect()),
    );
    t.push(
        "excluded",
        Col::U64(corrs.iter().map(|c| c.excluded.len() as u64).collect()),
    );
    t
}

/// One row per warp of every run, with its position in issue order on its SM.
fn warps_table(runs: &[Run]) -> Table {
    let mut run = Vec::new();
    let mut shape = Vec::new();
    let mut view = Vec::new();
    let mut mode = Vec::new();
    let mut u32s: [Vec<u32>; 9] = Default::default();
    let mut u64s: [Vec<u64>; 5] = Default::default();
    let mut fl: [Vec<Option<f64>>; 4] = Default::default();
    for r in runs {
        let mut issue = vec![0u32; r.stats.warps.len()];
        let sms: BTreeSet<u32> = r.stats.warps.iter().map(|w| w.sm).collect();
        for sm in sms {
            for (pos, i) in r.stats.issue_order(sm).into_iter().enumerate() {
                issue[i] = pos as u32;
            }
        }
        for (i, w) in r.stats.warps.iter().enumerate() {
            run.push(r.files.row.run.clone());
            shape.push(r.files.row.shape.clone());
            view.push(r.files.row.view.clone());
            mode.push(r.files.row.mode.clone());
            for (k, v) in [
                w.sm,
                issue[i],
                w.block[0],
                w.block[1],
                w.block[2],
                w.warp,
                w.global_warp,
                w.hw_warp,
                w.dropped,
            ]
            .into_iter()
            .enumerate()
            {
                u32s[k].push(v);
            }
            for (k, v) in [
                w.begin,
                w.end,
                w.all.count,
                w.mem_cycles(),
                w.other_cycles(),
            ]
            .into_iter()
            .enumerate()
            {
                u64s[k].push(v);
            }
            for (k, v) in [
                w.mean_access(),
                w.all.variance(),
                w.min.map(|x| x as f64),
                w.max.map(|x| x as f64),
            ]
            .into_iter()
            .enumerate()
            {
                fl[k].push(v);
            }
        }
    }
    let mut t = Table::default();
    t.push("run", Col::Str(run));
    t.push("shape", Col::Str(shape));
    t.push("view", Col::Str(view));
    t.push("mode", Col::Str(mode));
    let [sm, issue, bx, by, bz, warp, gw, hw, dropped] = u32s;
    let [begin, end, accesses, mem, other] = u64s;
    let [mean, var, min, max] = fl;
    for (n, c) in [
        ("sm", sm),
        ("issue_order", issue),
        ("block_x", bx),
        ("block_y", by),
        ("block_z", bz),
        ("warp", warp),
        ("global_warp", gw),
        ("hw_warp", hw),
    ] {
        t.push(n, Col::U32(c));
    }
    for (n, c) in [
        ("begin", begin),
        ("end", end),
        ("accesses", accesses),
        ("mem_cycles", mem),
        ("other_cycles", other),
    ] {
        t.push(n, Col::U64(c));
    }
    for (n, c) in [
        ("mean_access", mean),
        ("var_access", var),
        ("min_access", min),
        ("max_access", max),
    ] {
        t.push(n, Col::F64(c));
    }
    t.push("dropped", Col::U32(dropped));
    t
}

fn hot_table(runs: &[Run], hot: &[Vec<Hot>]) -> Table {
    let rows: Vec<(usize, &Hot)> = hot
        .iter()
        .enumerate()
        .flat_map(|(i, hs)| hs.iter().map(move |h| (i, h)))
        .collect();
    let mut t = Table::default();
    let s =
        |f: &dyn Fn(usize, &Hot) -> String| Col::Str(rows.iter().map(|(i, h)| f(*i, h)).collect());
    let fl = |f: &dyn Fn(&Hot) -> Option<f64>| Col::F64(rows.iter().map(|(_, h)| f(h)).collect());
    t.push("run", s(&|i, _| runs[i].files.row.run.clone()));
    t.push("shape", s(&|i, _| runs[i].files.row.shape.clone()));
    t.push("view", s(&|i, _| runs[i].files.row.view.clone()));
    t.push("mode", s(&|i, _| runs[i].files.row.mode.clone()));
    t.push("kind", s(&|_, h| h.kind.into()));
    t.push("id", s(&|_, h| h.id.clone()));
    t.push("sm", Col::OptU32(rows.iter().map(|(_, h)| h.sm).collect()));
    t.push(
        "accesses",
        Col::U64(rows.iter().map(|(_, h)| h.accesses).collect()),
    );
    t.push(
        "mem_cycles",
        Col::U64(rows.iter().map(|(_, h)| h.mem_cycles).collect()),
    );
    t.push("excess_cycles", fl(&|h| Some(h.excess_cycles)));
    t.push("excess_ratio", fl(&|h| h.excess_ratio));
    t.push("mean_access", fl(&|h| h.mean_access));
    t.push("variance", fl(&|h| h.variance));
    t.push("z_excess_ratio", fl(&|h| h.z_ratio));
    t.push("z_variance", fl(&|h| h.z_variance));
    t.push(
        "rank_excess",
        Col::U32(rows.iter().map(|(_, h)| h.rank_excess).collect()),
    );
    t.push(
        "rank_variance",
        Col::OptU32(rows.iter().map(|(_, h)| h.rank_variance).collect()),
    );
    t.push(
        "outlier",
        Col::Bool(rows.iter().map(|(_, h)| h.outlier).collect()),
    );
    t
}

/// Default focus runs: per view, in its measuring mode, max and min per-warp variance.
fn focus_runs(runs: &[Run], views: &[String], opts: &AnalyzeOptions) -> Vec<usize> {
    if !opts.focus_runs.is_empty() {
        return opts
            .focus_runs
            .iter()
            .filter_map(|name| runs.iter().position(|r| &r.files.row.run == name))
            .collect();
    }
    let mut out = Vec::new();
    for view in views {
        let Some(mm) = measured_mode(runs, view).or_else(|| Some("naive".into())) else {
            continue;
        };
        let cand: Vec<(usize, f64)> = runs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.files.row.view == *view && r.files.row.mode == mm)
            .filter_map(|(i, r)| Some((i, r.bd.warp_mean_var?)))
            .collect();
        let hi = cand
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
        let lo = cand
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        for p in [hi, lo].into_iter().flatten() {
            if !out.contains(&p.0) {
                out.push(p.0);
            }
        }
    }
    out
}

fn figures(runs: &[Run], views: &[String], opts: &AnalyzeOptions) -> Vec<Figure> {
    let rows: Vec<&trace::SweepRow> = runs.iter().map(|r| &r.files.row).collect();
    let mut figs: Vec<Figure> = perturbation::figure(&rows).into_iter().collect();
    for view in views {
        let mut modes = first_seen(
            runs.iter()
                .filter(|r| r.files.row.view == *view)
                .map(|r| r.files.row.mode.clone()),
        );
        // naive first, then the measuring modes: the paper's side-by-side order.
        modes.sort_by_key(|m| (m != "naive", mode_rank(m)));
        let in_view: Vec<&Run> = runs.iter().filter(|r| r.files.row.view == *view).collect();
        let site_ids: Vec<u16> = in_view
            .iter()
            .flat_map(|r| r.stats.site_totals.keys().copied())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut segments: Vec<String> = site_ids
            .iter()
            .map(|id| {
                let name = in_view
                    .iter()
                    .find_map(|r| r.stats.sites.iter().find(|s| s.id == *id))
                    .map_or_else(|| format!("site {id}"), |s| s.name.clone());
                format!("memory: {name}")
            })
            .collect();
        segments.push("other work".into());
        let mut stacked = Vec::new();
        let mut lines = Vec::new();
        for mode in &modes {
            let rs: Vec<&&Run> = in_view
                .iter()
                .filter(|r| r.files.row.mode == *mode)
                .collect();
            let cats: Vec<String> = rs
                .iter()
                .map(|r| pretty_shape(&r.files.row.shape))
                .collect();
            stacked.push(StackedPanel {
                title: mode.to_string(),
                categories: cats.clone(),
                values: rs
                    .iter()
                    .map(|r| {
                        let mut v: Vec<f64> = site_ids
                            .iter()
                            .map(|id| r.bd.sites.get(id).map_or(0.0, |s| s.1 * 100.0))
                            .collect();
                        v.push((1.0 - r.bd.mem_share) * 100.0);
                        v
                    })
                    .collect(),
            });
            let norm = |vals: Vec<Option<f64>>| {
                let max = vals.iter().flatten().copied().fold(0.0, f64::max);
                vals.into_iter()
                    .map(|v| v.filter(|_| max > 0.0).map(|v| v / max))
                    .collect::<Vec<_>>()
            };
            lines.push(LinePanel {
                title: mode.to_string(),
                categories: cats,
                series: vec![
                    (
                        "memory reference frequency".into(),
                        norm(rs.iter().map(|r| r.bd.mem_ref_freq).collect()),
                    ),
                    (
                        "texture hit rate".into(),
                        norm(rs.iter().map(|r| r.files.row.tex_hit_rate).collect()),
                    ),
                    (
                        "frame rate".into(),
                        norm(rs.iter().map(|r| r.files.row.frame_rate).collect()),
                    ),
                ],
            });
        }
        let width = 200 + 560 * modes.len() as u32;
        figs.push(Figure {
            stem: format!("breakdown_{}", slug(view)),
            title: format!(
                "Breakdown of mean warp time at view {} (paper fig. 5)",
                pretty_view(view)
            ),
            caption: "Share of each warp's kernel time spent in memory accesses per site, and in other work, per block shape; one panel per probe mode.".into(),
            kind: FigureKind::Stacked {
                segments,
                panels: stacked,
                y_desc: "share of warp time (%)".into(),
                y_max: 100.0,
            },
            size: (width, 520),
        });
        figs.push(Figure {
            stem: format!("frequency_{}", slug(view)),
            title: format!(
                "Memory reference frequency vs texture hit rate and frame rate at view {} (figs. 6–9)",
                pretty_view(view)
            ),
            caption: "Each series divided by its maximum over the block shapes, so that their trends can be compared on one axis; gaps are missing values.".into(),
            kind: FigureKind::Lines {
                panels: lines,
                y_desc: "value / maximum over shapes".into(),
                y_max: 1.1,
                x_desc: "block shape".into(),
            },
            size: (width, 520),
        });
    }
    for i in focus_runs(runs, views, opts) {
        let r = &runs[i];
        let Some(sm) = r.stats.pick_sm(opts.sm) else {
            continue;
        };
        let order = r.stats.issue_order(sm);
        let values: Vec<f64> = order
            .iter()
            .map(|&k| r.stats.warps[k].mean_access().unwrap_or(0.0))
            .collect();
        figs.push(Figure {
            stem: format!("warps_{}", slug(&r.files.row.run)),
            title: format!("Mean access time per warp on SM {sm}, {} (fig. 10)", r.label()),
            caption: format!(
                "Warps of SM {sm} in issue order (kernel-begin clock); a warp without accesses (e.g. all its rays miss the volume) has no bar. Per-warp variance of the run: {} cycles².",
                r.bd.warp_mean_var.map_or("–".into(), sig)
            ),
            kind: FigureKind::Bars {
                values,
                x_desc: format!("warp (issue order on SM {sm})"),
                y_desc: "mean access time (cycles)".into(),
            },
            size: (900, 420),
        });
        let chosen = match opts.series_warp {
            Some(g) => r.stats.warps.iter().position(|w| w.global_warp == g),
            None => r.stats.default_series_warp(),
        };
        let Some(k) = chosen else { continue };
        let w = &r.stats.warps[k];
        // Re-read just this warp's records; a failure only loses this figure.
        let Ok(full) = trace::TraceReader::open(&r.files.trace).and_then(|t| t.read_warp(w.index))
        else {
            continue;
        };
        if full.records.is_empty() {
            continue;
        }
        let sites: Vec<u16> = full
            .records
            .iter()
            .map(|x| x.site)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let points = full
            .records
            .iter()
            .enumerate()
            .map(|(n, x)| {
                let s = sites.iter().position(|&id| id == x.site).unwrap_or(0);
                (n as f64, x.duration().0 as f64, s)
            })
            .collect();
        figs.push(Figure {
            stem: format!("series_{}", slug(&r.files.row.run)),
            title: format!(
                "Access times of warp {} (block ({},{},{}), SM {}), {} (fig. 11)",
                w.global_warp,
                w.block[0],
                w.block[1],
                w.block[2],
                w.sm,
                r.label()
            ),
            caption: if opts.series_warp.is_some() {
                "The requested warp.".into()
            } else {
                "Default warp: the highest mean access time among the traced warps with at least their median number of accesses.".into()
            },
            kind: FigureKind::Series {
                points,
                series_names: sites.iter().map(|id| r.stats.site_name(*id)).collect(),
                x_desc: "access number within the warp".into(),
                y_desc: "access time (cycles)".into(),
            },
            size: (900, 420),
        });
    }
    figs
}
