//! The findings of one sweep's report, each a sentence built from the runs: the verdict it opens
//! with (where the time goes, what to change), what the naive timer hides, which site takes the
//! time, how memory time follows hit rate, which block shapes differ, which warps and blocks
//! stand out, and the notes on the data (runs left out, values missing, records lost).

use crate::fmt::{pct, pct_range, pretty_shape, pretty_view, sig};
use crate::stats;
use crate::sweep::hotspots::Hot;
use crate::sweep::model::{Corr, Run, WEAK_CORRELATION, first_seen, measured_mode};
use crate::sweep::runs::Skipped;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// "At (0,0,0), naive puts memory at 12–20 % of warp time …, fence at 48–80 % …".
pub(super) fn naive_vs_measured(runs: &[Run], views: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for view in views {
        let Some(mm) = measured_mode(runs, view) else {
            continue;
        };
        let share = |mode: &str, shape: &str| {
            runs.iter()
                .find(|r| {
                    r.files.row.view == *view
                        && r.files.row.mode == mode
                        && r.files.row.shape == shape
                })
                .map(|r| r.bd.mem_share)
        };
        let shapes = first_seen(
            runs.iter()
                .filter(|r| r.files.row.view == *view)
                .map(|r| r.files.row.shape.clone()),
        );
        let pairs: Vec<(String, f64, f64)> = shapes
            .iter()
            .filter_map(|s| Some((s.clone(), share("naive", s)?, share(&mm, s)?)))
            .collect();
        if pairs.is_empty() {
            continue;
        }
        let range = |f: fn(&(String, f64, f64)) -> f64| {
            // `pairs` is not empty (above).
            pct_range(stats::range(pairs.iter().map(f)).unwrap_or_default())
        };
        let below = pairs.iter().filter(|p| p.1 < p.2 / 2.0).count();
        let examples: Vec<String> = [pairs.first(), pairs.last()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .iter()
            .enumerate()
            .filter(|(k, _)| *k == 0 || pairs.len() > 1)
            .map(|(_, p)| format!("{}: {} vs {}", pretty_shape(&p.0), pct(p.1, 0), pct(p.2, 0)))
            .collect();
        out.push(format!(
            "At {}, naive timing puts memory at {} of warp time across {} shapes, {mm} at {}; naive is below half of {mm} for {} of {} shapes ({}).",
            pretty_view(view),
            range(|p| p.1),
            pairs.len(),
            range(|p| p.2),
            below,
            pairs.len(),
            examples.join(", ")
        ));
    }
    out
}

/// The runs of `view` in its measuring mode (`None` when it has only naive runs), and the mode.
fn measured_runs<'a>(runs: &'a [Run], view: &str) -> Option<(String, Vec<&'a Run>)> {
    let mm = measured_mode(runs, view)?;
    let rs = (runs.iter())
        .filter(|r| r.files.row.view == view && r.files.row.mode == mm)
        .collect();
    Some((mm, rs))
}

/// The site with the largest mean (over `rs`) fraction of a run's memory time, when the runs
/// have at least two sites: its id and that fraction.
fn top_site(rs: &[&Run]) -> Option<(u16, f64)> {
    let rs: Vec<&&Run> = rs.iter().filter(|r| r.bd.mem_cycles > 0.0).collect();
    let mut frac: BTreeMap<u16, f64> = BTreeMap::new();
    for r in &rs {
        for (id, (c, _)) in &r.bd.sites {
            *frac.entry(*id).or_default() += c / r.bd.mem_cycles / rs.len() as f64;
        }
    }
    if frac.len() < 2 {
        return None;
    }
    frac.into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
}

/// Which site takes most of the memory time, per view in its measuring mode.
pub(super) fn site_findings(runs: &[Run], views: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for view in views {
        let Some((mm, rs)) = measured_runs(runs, view) else {
            continue;
        };
        let rs: Vec<&Run> = rs.into_iter().filter(|r| r.bd.mem_cycles > 0.0).collect();
        if let Some((id, f)) = top_site(&rs) {
            out.push(format!(
                "At {} ({mm}), site {id} ({}) accounts for {} of the memory time (mean over {} shapes).",
                pretty_view(view),
                rs[0].stats.site_name(id),
                pct(f, 0),
                rs.len()
            ));
        }
    }
    out
}

/// The report's opening, per view in its measuring mode: where the time goes (the memory share
/// of warp time and the site that takes most of it) and what to change (the fastest block shape
/// against the slowest, with their texture hit rates). The frame rates are the bare kernel's
/// where the sweep measured it (probed frame rate × overhead), so that the probes' own cost does
/// not pick the shape.
pub(super) fn verdict(runs: &[Run], views: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for view in views {
        let Some((mm, rs)) = measured_runs(runs, view) else {
            continue;
        };
        let Some(share) = stats::range(rs.iter().map(|r| r.bd.mem_share)).map(pct_range) else {
            continue;
        };
        let mut line = format!(
            "At {}, timed with {mm}: memory is {share} of warp time",
            pretty_view(view)
        );
        if let Some((id, f)) = top_site(&rs) {
            let _ = write!(
                line,
                ", {} of it at site {id} ({})",
                pct(f, 0),
                rs[0].stats.site_name(id)
            );
        }
        line.push('.');
        let bare = rs.iter().all(|r| r.files.row.overhead.is_some());
        let fps: Vec<(&Run, f64)> = (rs.iter())
            .filter_map(|r| {
                let f = r.files.row.frame_rate?;
                let f = if bare { f * r.files.row.overhead? } else { f };
                Some((*r, f)).filter(|x| x.1 > 0.0)
            })
            .collect();
        let fastest = fps.iter().max_by(|a, b| a.1.total_cmp(&b.1));
        let slowest = fps.iter().min_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some(&(f, ff)), Some(&(s, sf)), true) = (fastest, slowest, fps.len() >= 2) {
            let shape = |r: &Run| pretty_shape(&r.files.row.shape);
            let near: Vec<String> = (fps.iter())
                .filter(|(r, x)| !std::ptr::eq(*r, f) && *x >= ff * 0.98)
                .map(|(r, _)| shape(r))
                .collect();
            // A hit rate the sweep does not have leaves its clause out; the notes say why.
            let hits = match (s.files.row.tex_hit_rate, f.files.row.tex_hit_rate) {
                (Some(hs), Some(hf)) => {
                    format!("; texture hit rates {} and {}", pct(hs, 0), pct(hf, 0))
                }
                _ => String::new(),
            };
            let _ = write!(
                line,
                " The block shape sets the frame rate{}: {} is slowest at {} fps, {} fastest at {} fps ({:.2}×){hits}. Use {}{}.",
                if bare { " (bare kernel)" } else { "" },
                shape(s),
                sig(sf),
                shape(f),
                sig(ff),
                ff / sf,
                shape(f),
                if near.is_empty() {
                    String::new()
                } else {
                    format!(" ({} within 2 %)", near.join(", "))
                }
            );
        }
        out.push(line);
    }
    out
}

pub(super) fn correlation_findings(corrs: &[Corr]) -> Vec<String> {
    let mut out = Vec::new();
    for c in corrs {
        let (Some(r), Some(rho)) = (c.pearson, c.spearman) else {
            continue;
        };
        if c.used.len() < 3 {
            continue;
        }
        let what = if c.y == "tex_hit_rate" {
            "texture-cache hit rate"
        } else {
            "frame rate"
        };
        let sense = if r.abs() < WEAK_CORRELATION {
            "hardly correlates"
        } else if r > 0.0 {
            "correlates positively"
        } else {
            "correlates negatively"
        };
        out.push(format!(
            "At {} with {}, memory reference frequency {sense} with {what} across {} shapes (Pearson r = {:.2}, Spearman ρ = {:.2}).",
            pretty_view(&c.view),
            c.mode,
            c.used.len(),
            r,
            rho
        ));
    }
    out
}

/// Pairs of shapes with the same hit rate but very different per-warp variance (fig. 10).
pub(super) fn variance_findings(runs: &[Run], views: &[String], tol: f64) -> Vec<String> {
    let mut out = Vec::new();
    for view in views {
        let Some(mm) = measured_mode(runs, view) else {
            continue;
        };
        let cand: Vec<(&Run, f64, f64)> = runs
            .iter()
            .filter(|r| r.files.row.view == *view && r.files.row.mode == mm)
            .filter_map(|r| Some((r, r.files.row.tex_hit_rate?, r.bd.warp_mean_var?)))
            .collect();
        let mut best: Option<(f64, usize, usize)> = None;
        for i in 0..cand.len() {
            for j in 0..cand.len() {
                let (a, b) = (&cand[i], &cand[j]);
                if i == j || (a.1 - b.1).abs() > tol || b.2 <= 0.0 {
                    continue;
                }
                let ratio = a.2 / b.2;
                if best.is_none_or(|(r, _, _)| ratio > r) {
                    best = Some((ratio, i, j));
                }
            }
        }
        if let Some((ratio, i, j)) = best.filter(|b| b.0 >= 1.5) {
            let (a, b) = (&cand[i], &cand[j]);
            out.push(format!(
                "At {} ({mm}), {} has the same texture hit rate as {} ({} vs {}) but {:.1}× the per-warp variance of mean access time ({} vs {} cycles²).",
                pretty_view(view),
                pretty_shape(&a.0.files.row.shape),
                pretty_shape(&b.0.files.row.shape),
                pct(a.1, 1),
                pct(b.1, 1),
                ratio,
                sig(a.2),
                sig(b.2)
            ));
        }
    }
    out
}

/// Per view, in its measuring mode (naive measures issue, not access, so its outliers say little):
/// how many warps and blocks the robust z-score flags, and the strongest one.
pub(super) fn outlier_findings(
    runs: &[Run],
    views: &[String],
    hot: &[Vec<Hot>],
    z: f64,
) -> Vec<String> {
    let mut out = Vec::new();
    for view in views {
        let mm = measured_mode(runs, view).unwrap_or_else(|| "naive".into());
        let idx: Vec<usize> = (0..runs.len())
            .filter(|&i| runs[i].files.row.view == *view && runs[i].files.row.mode == mm)
            .collect();
        if idx.is_empty() {
            continue;
        }
        for kind in ["warp", "block"] {
            let total: usize = idx
                .iter()
                .map(|&i| {
                    let w = &runs[i].stats.warps;
                    match kind {
                        "warp" => w.len(),
                        _ => w.iter().map(|w| w.block).collect::<BTreeSet<_>>().len(),
                    }
                })
                .sum();
            let flagged: Vec<(usize, &Hot)> = idx
                .iter()
                .flat_map(|&i| {
                    hot[i]
                        .iter()
                        .filter(move |h| h.kind == kind && h.outlier)
                        .map(move |h| (i, h))
                })
                .collect();
            let strongest = flagged
                .iter()
                .filter_map(|(i, h)| Some((*i, *h, h.z_ratio.filter(|&v| v > z)?)))
                .max_by(|a, b| a.2.total_cmp(&b.2).then(b.0.cmp(&a.0)));
            let head = format!(
                "At {} ({mm}), the robust z-score (|z| > {z}) flags {} of {total} {kind}s over {} runs",
                pretty_view(view),
                flagged.len(),
                idx.len()
            );
            out.push(match strongest {
                Some((i, h, zr)) => format!(
                    "{head}; the strongest is {}{} of {}, with {}× the typical memory time ({} excess cycles, z = {:.1}).",
                    h.id,
                    h.sm.map(|s| format!(" on SM {s}")).unwrap_or_default(),
                    pretty_shape(&runs[i].files.row.shape),
                    h.excess_ratio.map_or("–".into(), |x| format!("{x:.1}")),
                    sig(h.excess_cycles),
                    zr
                ),
                None if flagged.is_empty() => format!("{head}."),
                None => format!(
                    "{head}, none for a high excess ratio (they vary more than the rest, or are faster)."
                ),
            });
        }
    }
    out
}

/// `3 runs`, `1 run`.
fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// Names in a sentence: all of them up to six, else the first five and how many more.
fn list(names: &[&str]) -> String {
    match names.len() {
        0..=6 => names.join(", "),
        n => format!("{} and {} more", names[..5].join(", "), n - 5),
    }
}

/// The notes on the data: each run left out and why, each run left out of a correlation (one
/// note for a group none of whose runs has the value), lost and wrapped records. Also returns
/// the correlation exclusions one per run, for the summary.
pub(super) fn notes(
    skipped: &[Skipped],
    corrs: &[Corr],
    runs: &[Run],
) -> (Vec<String>, Vec<String>) {
    let mut notes = Vec::new();
    for s in skipped {
        notes.push(format!("Run {} was left out: {}.", s.run, s.reason));
    }
    let mut excluded = Vec::new();
    let from_bare: Vec<&str> = (runs.iter())
        .filter(|r| r.files.tex_from_bare)
        .map(|r| r.files.row.run.as_str())
        .collect();
    if !from_bare.is_empty() {
        notes.push(format!(
            "{} have only the bare build's texture hit rate, which stands for the run's here: {}.",
            count(from_bare.len(), "run"),
            list(&from_bare)
        ));
    }
    // A value no run of the sweep has (a GPU sweep without its counters) is one note for the
    // whole sweep, with why, not one per group or run.
    let whole: Vec<&'static str> = ["tex_hit_rate", "frame_rate"]
        .into_iter()
        .filter(|y| {
            let cs: Vec<&Corr> = corrs.iter().filter(|c| c.y == *y).collect();
            cs.len() > 1
                && cs.iter().all(|c| {
                    c.used.is_empty() && c.missing_y > 0 && c.missing_y == c.excluded.len()
                })
        })
        .collect();
    for y in &whole {
        let n: usize = corrs
            .iter()
            .filter(|c| c.y == *y)
            .map(|c| c.missing_y)
            .sum();
        let why = (*y == "tex_hit_rate")
            .then(|| runs.iter().find_map(|r| r.files.hit_rate_source.as_deref()))
            .flatten()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        notes.push(format!(
            "None of the {n} runs has a {y}{why}: no {y} correlation, and no verdict or finding names one."
        ));
    }
    for c in corrs {
        let lines: Vec<String> = c
            .excluded
            .iter()
            .map(|e| {
                format!(
                    "{e} (left out of the {} correlation at {}, {})",
                    c.y,
                    pretty_view(&c.view),
                    c.mode
                )
            })
            .collect();
        // A group none of whose runs has the value is one note, not one per run; a value the
        // whole sweep lacks was said above.
        let said_above = whole.contains(&c.y);
        if said_above {
            excluded.extend(lines);
            continue;
        }
        if c.used.is_empty() && lines.len() > 1 && c.missing_y == lines.len() {
            notes.push(format!(
                "None of the {} runs at {}, {} has a {}: no {} correlation there.",
                lines.len(),
                pretty_view(&c.view),
                c.mode,
                c.y,
                c.y
            ));
        } else {
            notes.extend(lines.iter().map(|l| format!("{l}.")));
        }
        excluded.extend(lines);
    }
    for r in runs {
        if r.stats.dropped > 0 {
            notes.push(format!(
                "Run {} dropped {} records (the log was full): its memory time is a lower bound.",
                r.files.row.run, r.stats.dropped
            ));
        }
        if r.stats.wrapped > 0 {
            notes.push(format!(
                "Run {} has {} records whose clock wrapped; they count as 0 cycles.",
                r.files.row.run, r.stats.wrapped
            ));
        }
    }
    (notes, excluded)
}
