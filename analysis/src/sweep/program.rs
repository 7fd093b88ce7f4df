//! The report of a profiled program (`warpscope run`): which kernels took the time, and inside
//! each profiled kernel which source lines' loads — their share of the memory time, count and
//! mean — verdict first. Read from the run's result folder: `index.json` and each profiled
//! launch's run folder.
//!
//! A kernel's time is estimated as its launches × the time of one launch: the bare time where a
//! later launch of the same grid and block was timed, else the probed launch's own time (which
//! the probes lengthen; the table says which). Kernels that were never profiled have no time.

use crate::AnalysisError;
use crate::fmt::{pct, sig};
use crate::report::{Block, Doc, Inline};
use crate::sweep::runstats::RunStats;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use trace::{Outcome, ProgramIndex, RunMetrics, TraceReader};

/// One kernel of the program.
struct Kernel {
    name: String,
    launches: u64,
    /// The profiled launch's folder, its time per launch, and whether that is the bare time.
    profiled: Option<(String, f64, bool)>,
    /// Why its selected launches were not profiled.
    unprofiled: Vec<String>,
}

/// Writes `report.md` and `report.html` of the program profiled into `dir`; returns the lines of
/// its verdict (also the report's opening).
pub fn program_report(dir: &Path) -> Result<(Vec<String>, PathBuf), AnalysisError> {
    let index = ProgramIndex::read(&dir.join(trace::INDEX_FILE))?;
    let kernels = kernels(dir, &index);
    let total: f64 = kernels
        .iter()
        .filter_map(|k| k.profiled.as_ref().map(|p| p.1 * k.launches as f64))
        .sum();
    let mut verdict = Vec::new();
    let timed: Vec<&Kernel> = kernels.iter().filter(|k| k.profiled.is_some()).collect();
    match timed.first() {
        Some(top) if total > 0.0 => {
            let (run, ms, _) = top.profiled.as_ref().expect("filtered");
            let share = ms * top.launches as f64 / total;
            let mut line = format!(
                "{} takes {} of the profiled kernels' time ({} launches).",
                top.name,
                pct(share, 0),
                top.launches
            );
            if let Some(site) = top_site(&dir.join(run))? {
                line.push_str(&format!(" {site}"));
            }
            verdict.push(line);
        }
        _ => verdict.push("No launch of the program was profiled; the notes say why.".into()),
    }
    let mut blocks = vec![
        Block::Heading(1, format!("warpscope run: {}", index.program.join(" "))),
        Block::Para(vec![Inline::Strong(verdict.join(" "))]),
        Block::Heading(2, "Kernels".into()),
    ];
    let mut rows = vec![vec![
        "kernel".to_string(),
        "launches".into(),
        "time per launch".into(),
        "share".into(),
        "profiled in".into(),
    ]];
    for k in &kernels {
        rows.push(match &k.profiled {
            Some((run, ms, bare)) => vec![
                k.name.clone(),
                k.launches.to_string(),
                format!(
                    "{} ms ({})",
                    sig(*ms),
                    if *bare { "bare" } else { "probed" }
                ),
                pct(ms * k.launches as f64 / total.max(f64::MIN_POSITIVE), 0),
                run.clone(),
            ],
            None => vec![
                k.name.clone(),
                k.launches.to_string(),
                "–".into(),
                "–".into(),
                "not profiled".into(),
            ],
        });
    }
    blocks.push(Block::Table(rows));
    for k in &timed {
        let (run, _, _) = k.profiled.as_ref().expect("filtered");
        let trace = dir.join(run).join(trace::TRACE_FILE_NAME);
        blocks.push(Block::Heading(2, k.name.clone()));
        blocks.push(Block::List(crate::run_verdict(&trace)?));
        if let Ok(m) = RunMetrics::read(&dir.join(run).join("run.json"))
            && let Some(app) = &m.app
        {
            let mut note = format!("Probed PTX: {}.", app.ptx_target);
            if !app.line_table {
                note.push_str(
                    " The PTX has no line table: sites are named by PTX line; build with -lineinfo (it changes no code) for source lines.",
                );
            }
            blocks.push(Block::para(note));
        }
    }
    let notes: Vec<String> = (kernels.iter())
        .flat_map(|k| k.unprofiled.iter().map(move |r| format!("{}: {r}", k.name)))
        .collect();
    if !notes.is_empty() {
        blocks.push(Block::Heading(2, "Launches not profiled".into()));
        blocks.push(Block::List(notes));
    }
    let doc = Doc {
        title: format!("warpscope run: {}", index.program.join(" ")),
        blocks,
    };
    let md = dir.join("report.md");
    crate::report::write(&doc, &dir.join("report.html"), &md)?;
    Ok((verdict, md))
}

/// The program's kernels, by the time they took (estimated), then by name.
fn kernels(dir: &Path, index: &ProgramIndex) -> Vec<Kernel> {
    let mut by: BTreeMap<String, Kernel> = BTreeMap::new();
    for r in &index.launches {
        let k = by.entry(r.kernel.clone()).or_insert_with(|| Kernel {
            name: r.demangled.clone(),
            launches: 0,
            profiled: None,
            unprofiled: Vec::new(),
        });
        match &r.outcome {
            Outcome::Profiled { run, kernel_ms, .. } if k.profiled.is_none() => {
                let bare = RunMetrics::read(&dir.join(run).join("run.json"))
                    .ok()
                    .and_then(|m| m.bare_kernel_ms());
                k.profiled = Some((run.clone(), bare.unwrap_or(*kernel_ms), bare.is_some()));
            }
            Outcome::Unprofiled { reason } if !k.unprofiled.contains(reason) => {
                k.unprofiled.push(reason.clone());
            }
            _ => {}
        }
        k.launches += 1;
    }
    // The counts at exit include the launches that were not recorded one by one.
    for (kernel, n) in index.counts.iter().flatten() {
        if let Some(k) = by.get_mut(kernel) {
            k.launches = k.launches.max(*n);
        }
    }
    let mut v: Vec<Kernel> = by.into_values().collect();
    let time = |k: &Kernel| k.profiled.as_ref().map_or(0.0, |p| p.1 * k.launches as f64);
    v.sort_by(|a, b| time(b).total_cmp(&time(a)).then(a.name.cmp(&b.name)));
    v
}

/// "Its loads at SITE take N % of its memory time." for the site with the most memory time.
fn top_site(run: &Path) -> Result<Option<String>, AnalysisError> {
    let reader = TraceReader::open(&run.join(trace::TRACE_FILE_NAME))?;
    let stats = RunStats::scan(&reader)?;
    let total: u64 = stats.site_totals.values().map(|s| s.sum).sum();
    Ok(stats
        .site_totals
        .iter()
        .max_by(|a, b| a.1.sum.cmp(&b.1.sum).then(b.0.cmp(a.0)))
        .filter(|_| total > 0)
        .map(|(id, s)| {
            format!(
                "Its loads at {} take {} of its memory time.",
                stats.site_name(*id),
                pct(s.sum as f64 / total as f64, 0)
            )
        }))
}
