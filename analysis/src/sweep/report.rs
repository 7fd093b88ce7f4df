//! The sweep report's assembly: what `report.html` and `report.md` say, in what order, as one
//! [`Doc`] (the report room renders and writes both). It opens with the verdict and its figures,
//! then the findings, the notes on the data, what measuring changed, the paper side by side, the
//! breakdown, the correlations, the per-warp figures, the hot spots, the other rooms' sections and
//! the effective configurations.

use crate::fmt::{pretty_shape, pretty_view, sig};
use crate::report::{Block, Doc, Inline};
use crate::sweep::model::Analysis;
use crate::table::Table;
use std::collections::BTreeMap;

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

/// The figures whose stem starts with `prefix`, in the order they were drawn.
fn figures(a: &Analysis, prefix: &str) -> impl Iterator<Item = Block> {
    (a.figures.iter())
        .filter(move |f| f.stem.starts_with(prefix))
        .map(|f| Block::Figure(f.clone()))
}

/// The whole report of the sweep.
pub(crate) fn document(a: &Analysis) -> Doc {
    let mut b = vec![
        Block::Heading(1, "warpscope: where the memory time goes".into()),
        Block::Para(vec![
            Inline::Text("Sweep ".into()),
            Inline::Code(a.sweep_dir.display().to_string()),
            Inline::Text(format!(
                ": {} runs analysed, {} left out. Memory time of a warp = sum of its timed accesses; other = kernel begin→end minus memory time. Memory reference frequency = 1 / mean access time (accesses per cycle).",
                a.runs.len(),
                a.skipped.len()
            )),
        ]),
    ];
    if !a.verdict.is_empty() {
        b.push(Block::Heading(2, "Verdict".into()));
        b.push(Block::List(a.verdict.clone()));
        b.extend(figures(a, "breakdown_"));
    }
    b.push(Block::Heading(2, "Findings".into()));
    if a.findings.is_empty() {
        b.push(Block::para(
            "Nothing stands out (too few runs or values to compare).",
        ));
    } else {
        b.push(Block::List(a.findings.clone()));
    }
    if !a.notes.is_empty() {
        b.push(Block::Heading(2, "Notes on the data".into()));
        b.push(Block::List(a.notes.clone()));
    }
    b.push(Block::Heading(
        2,
        "How much did measuring change the kernel?".into(),
    ));
    b.push(Block::List(a.perturbation.verdict.clone()));
    b.extend(figures(a, "perturbation_"));
    b.push(Block::Table(a.perturbation.table.text_rows(None)));
    if a.perturbation.sites.height() > 0 {
        b.push(Block::para(
            format!("Per site (`truth_sites.csv`): the probe's mean reading beside the true mean time of the same accesses (the emulator's issue and data-return cycles), and that time in the bare build; `probe_vs_bare` is the reading against the bare time, what a user reads against what the unprobed kernel does; `accesses` counts the accesses compared, `timed_accesses` every timed warp's, and `thin` marks a site with fewer than {} of those.", crate::sweep::perturbation::THIN_ACCESSES),
        ));
        b.push(Block::Table(a.perturbation.sites.text_rows(None)));
    }
    b.extend(a.paper.blocks.iter().cloned());
    b.push(Block::Heading(2, "Breakdown (fig. 5)".into()));
    b.push(Block::para(format!(
        "Mean cycles per warp; shares of warp time. Sites: {}.",
        site_legend(a).join("; ")
    )));
    b.push(Block::Table(
        (a.breakdown)
            .select(
                &breakdown_columns(a)
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
            )
            .text_rows(None),
    ));
    // With a verdict, its figures stand under it at the top.
    if a.verdict.is_empty() {
        b.extend(figures(a, "breakdown_"));
    }
    b.push(Block::Heading(
        2,
        "Memory reference frequency vs hit rate and frame rate (figs. 6–9)".into(),
    ));
    b.push(Block::Table(a.correlation.text_rows(None)));
    b.push(Block::para("The values per shape:"));
    b.push(Block::Table(points_rows(a)));
    b.extend(figures(a, "frequency_"));
    b.push(Block::Heading(
        2,
        "Per-warp distribution (figs. 10, 11)".into(),
    ));
    if a.figures.iter().any(|f| f.stem.starts_with("warps_")) {
        b.extend(figures(a, "warps_"));
        b.extend(figures(a, "series_"));
    } else {
        b.push(Block::para(
            "No per-warp figures (figures disabled or no run with accesses).",
        ));
    }
    b.push(Block::Heading(2, "Hot spots".into()));
    b.push(Block::para(HOT_INTRO));
    let (by_z, top) = hot_rows(&a.hot);
    b.push(Block::Heading(
        3,
        "Largest excess ratio (robust z), all runs".into(),
    ));
    b.push(Block::Table(a.hot.text_rows(Some(&by_z))));
    b.push(Block::Heading(
        3,
        "The warp with the most excess memory time, per run".into(),
    ));
    b.push(Block::Table(a.hot.text_rows(Some(&top))));
    for c in &a.companions {
        b.extend(c.blocks.iter().cloned());
    }
    b.push(Block::Heading(2, "Effective configurations".into()));
    let views: Vec<String> = a.views.iter().map(|v| pretty_view(v)).collect();
    b.push(Block::para(format!("Views: {}.", views.join(", "))));
    let cfgs = configs(a);
    if cfgs.is_empty() {
        b.push(Block::para(
            "No run wrote a config.toml (GPU runs have none).",
        ));
    }
    for (text, runs) in cfgs {
        b.push(Block::Code {
            summary: format!("config.toml of {} run(s): {}", runs.len(), runs.join(", ")),
            lang: "toml",
            text,
        });
    }
    Doc {
        title: "warpscope analysis".into(),
        blocks: b,
    }
}
