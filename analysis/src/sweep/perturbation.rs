//! "How much did measuring change the kernel?": per run, the probed build against the bare
//! (`WS_OFF`) build of the same frame — kernel-time ratio, resident blocks per SM and achieved
//! occupancy, and the texture hit rate of both — and, on the emulator, the probe's reading
//! against the true access time and that time against the bare build's, with a verdict, a table
//! (`perturbation.csv`) and a figure.
//!
//! Why a section of its own: a profiler that changes occupancy or cache behaviour measures another
//! kernel, so the report says by how much before it says anything else. It reads only the runs'
//! `sweep.csv` rows, which hold both builds' numbers.

use crate::figures::{Figure, FigureKind, LinePanel};
use crate::fmt::{pct, pretty_shape, sig};
use crate::stats::{median, range};
use crate::sweep::model::Run;
use crate::table::{Col, Table};
use trace::{ProbeMode, SiteTruth, SweepRow, TruthStats};

/// Texture hit rates that differ by more than this count as changed by the probes.
pub(crate) const HIT_RATE_TOLERANCE: f64 = 0.02;

/// Timed accesses a site needs in a run for its figures to be trusted; with fewer it is thinly
/// sampled. Over 1,000 accesses the standard error of a mean is 3 % of the accesses' spread.
pub(crate) const THIN_ACCESSES: u64 = 1_000;

/// How far a site's mean reading may be from the bare build's true time and still count as
/// true: the bound the sampling default is chosen against.
const SITE_TOLERANCE: f64 = 0.05;

/// The verdict lines, the per-run table, and the per-site ground truth (empty without one).
pub(crate) struct Perturbation {
    pub verdict: Vec<String>,
    pub table: Table,
    pub sites: Table,
}

/// The verdict and table of the analysed runs' rows, kept beside their per-site ground truth
/// (`site_truth`).
pub(crate) fn assess(rows: &[&SweepRow], runs: &[Run]) -> Perturbation {
    let sites = site_truth(runs);
    let mut table = Table::default();
    let delta = |r: &SweepRow| match (r.tex_hit_rate, r.tex_hit_rate_bare) {
        (Some(p), Some(b)) => Some(p - b),
        _ => None,
    };
    table.push(
        "run",
        Col::Str(rows.iter().map(|r| r.run.clone()).collect()),
    );
    table.push(
        "mode",
        Col::Str(rows.iter().map(|r| r.mode.clone()).collect()),
    );
    table.push(
        "overhead",
        Col::F64(rows.iter().map(|r| r.overhead).collect()),
    );
    table.push(
        "occupancy_bare",
        Col::F64(
            rows.iter()
                .map(|r| r.occupancy_bare.map(|b| b as f64))
                .collect(),
        ),
    );
    table.push(
        "occupancy_probed",
        Col::F64(
            rows.iter()
                .map(|r| r.occupancy_probed.map(|p| p as f64))
                .collect(),
        ),
    );
    table.push(
        "achieved_occupancy_bare",
        Col::F64(rows.iter().map(|r| r.achieved_occupancy_bare).collect()),
    );
    table.push(
        "achieved_occupancy",
        Col::F64(rows.iter().map(|r| r.achieved_occupancy).collect()),
    );
    table.push(
        "tex_hit_rate_bare",
        Col::F64(rows.iter().map(|r| r.tex_hit_rate_bare).collect()),
    );
    table.push(
        "tex_hit_rate",
        Col::F64(rows.iter().map(|r| r.tex_hit_rate).collect()),
    );
    table.push(
        "tex_hit_rate_change",
        Col::F64(rows.iter().map(|r| delta(r)).collect()),
    );
    table.push(
        "probe_error",
        Col::F64(rows.iter().map(|r| r.probe_error).collect()),
    );
    table.push(
        "probe_bias_cycles",
        Col::F64(rows.iter().map(|r| r.probe_bias_cycles).collect()),
    );
    table.push(
        "truth_shift",
        Col::F64(rows.iter().map(|r| r.truth_shift).collect()),
    );
    table.push(
        "load_shift",
        Col::F64(rows.iter().map(|r| r.load_shift).collect()),
    );

    let mut verdict = Vec::new();
    let known: Vec<_> = rows
        .iter()
        .filter_map(|r| Some((r, r.occupancy_bare?, r.occupancy_probed?)))
        .collect();
    let lowered: Vec<_> = known.iter().filter(|(_, b, p)| p < b).collect();
    if known.is_empty() {
        verdict.push("Occupancy: unknown (the sweep has no occupancy columns).".into());
    } else if lowered.is_empty() {
        verdict.push(format!(
            "Occupancy kept in all {} runs with a bare reference: the probed kernel has as many resident blocks per SM as the bare one.",
            known.len()
        ));
    } else {
        let (r, b, p) = lowered[0];
        verdict.push(format!(
            "Occupancy lowered in {} of {} runs (e.g. {}: {b} → {p} blocks/SM): those runs measure a kernel with fewer resident warps than the bare one.",
            lowered.len(),
            known.len(),
            r.run
        ));
    }
    verdict.extend(achieved_verdict(rows));
    let mut modes: Vec<&str> = rows.iter().map(|r| r.mode.as_str()).collect();
    modes.sort_unstable();
    modes.dedup();
    let mut parts = Vec::new();
    for &m in &modes {
        let v: Vec<f64> = rows
            .iter()
            .filter(|r| r.mode == m)
            .filter_map(|r| r.overhead)
            .collect();
        if let (Some(med), Some((lo, hi))) = (median(&v), range(v.iter().copied())) {
            parts.push(format!(
                "{m} {}× ({}–{}×, {} runs)",
                sig(med),
                sig(lo),
                sig(hi),
                v.len()
            ));
        }
    }
    if !parts.is_empty() {
        verdict.push(format!(
            "Kernel time, probed ÷ bare (median, range): {}.",
            parts.join("; ")
        ));
    }
    verdict.extend(truth_verdict(rows, runs, &modes));
    verdict.extend(thin_verdict(runs));
    let deltas: Vec<(&str, f64)> = rows
        .iter()
        .filter_map(|r| Some((r.run.as_str(), delta(r)?)))
        .collect();
    if let Some((run, d)) = deltas
        .iter()
        .copied()
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
    {
        let changed = deltas
            .iter()
            .filter(|(_, d)| d.abs() > HIT_RATE_TOLERANCE)
            .count();
        verdict.push(if changed == 0 {
            format!(
                "Texture hit rate: the probes moved it by at most {} (run {run}); within ±{HIT_RATE_TOLERANCE} in every run.",
                sig(d.abs())
            )
        } else {
            format!(
                "Texture hit rate: changed by more than ±{HIT_RATE_TOLERANCE} in {changed} of {} runs (largest {} in {run}): the probes' own traffic or timing changed what the cache saw.",
                deltas.len(),
                sig(d)
            )
        });
    }
    Perturbation {
        verdict,
        table,
        sites,
    }
}

/// How far the probes moved the achieved occupancy (warps resident per active cycle), the
/// largest change in points over the runs that have both builds' figures.
fn achieved_verdict(rows: &[&SweepRow]) -> Option<String> {
    let changes: Vec<(&str, f64, f64)> = rows
        .iter()
        .filter(|r| r.mode != ProbeMode::Off.name())
        .filter_map(|r| {
            Some((
                r.run.as_str(),
                r.achieved_occupancy_bare?,
                r.achieved_occupancy?,
            ))
        })
        .collect();
    let (run, bare, probed) = changes
        .iter()
        .copied()
        .max_by(|a, b| (a.2 - a.1).abs().total_cmp(&(b.2 - b.1).abs()))?;
    Some(format!(
        "Achieved occupancy (warps resident per active cycle): the probes moved it by at most {:.1} points in {} runs ({run}: {} bare, {} probed).",
        (probed - bare).abs() * 100.0,
        changes.len(),
        pct(bare, 1),
        pct(probed, 1)
    ))
}

/// Per run and site, the probe's mean reading beside the true mean access time of the same
/// accesses, and that time beside the bare build's (`truth_sites.csv`; the emulator's runs).
fn site_truth(runs: &[Run]) -> Table {
    let mut rows: Vec<(&Run, &SiteTruth)> = Vec::new();
    for r in runs {
        if let Some(t) = &r.files.truth {
            rows.extend(t.sites.iter().map(|s| (r, s)));
        }
    }
    let mut table = Table::default();
    if rows.is_empty() {
        return table;
    }
    let text = |f: &dyn Fn(&Run, &SiteTruth) -> String| {
        Col::Str(rows.iter().map(|(r, s)| f(r, s)).collect())
    };
    let num = |f: &dyn Fn(&TruthStats) -> Option<f64>| {
        Col::F64(rows.iter().map(|(_, s)| f(&s.stats)).collect())
    };
    table.push("run", text(&|r, _| r.files.row.run.clone()));
    table.push("mode", text(&|r, _| r.files.row.mode.clone()));
    table.push("site", text(&|r, s| r.stats.site_name(s.site)));
    table.push("accesses", num(&|t| Some(t.accesses as f64)));
    table.push("probe_mean_cycles", num(&|t| Some(t.probe_mean_cycles)));
    table.push("true_mean_cycles", num(&|t| Some(t.true_mean_cycles)));
    table.push("probe_error", num(&|t| Some(t.probe_error)));
    table.push("probe_bias_cycles", num(&|t| Some(t.probe_bias_cycles)));
    table.push("bare_true_mean_cycles", num(&|t| t.bare_true_mean_cycles));
    table.push("truth_shift", num(&|t| t.truth_shift));
    table.push("probe_vs_bare", num(&TruthStats::probe_vs_bare));
    let timed: Vec<u64> = rows
        .iter()
        .map(|(r, s)| timed_accesses(r, s.site))
        .collect();
    table.push(
        "thin",
        Col::Bool(timed.iter().map(|&n| n < THIN_ACCESSES).collect()),
    );
    table.push("timed_accesses", Col::U64(timed));
    table
}

/// Timed accesses of `site` in `run`, over every timed warp (0 when it has none).
fn timed_accesses(run: &Run, site: u16) -> u64 {
    run.stats.site_totals.get(&site).map_or(0, |s| s.count)
}

/// The sites that ran fewer than [`THIN_ACCESSES`] timed accesses in a run, named with their
/// runs; None when every site that ran had enough.
fn thin_verdict(runs: &[Run]) -> Option<String> {
    let mut all = 0;
    let mut thin = Vec::new();
    for r in runs {
        for (&site, sums) in r.stats.site_totals.iter().filter(|(_, s)| s.count > 0) {
            all += 1;
            if sums.count < THIN_ACCESSES {
                thin.push(format!(
                    "{} in {} ({})",
                    r.stats.site_name(site),
                    r.files.row.run,
                    sums.count
                ));
            }
        }
    }
    if thin.is_empty() {
        return None;
    }
    const NAMED: usize = 5;
    let more = thin.len().saturating_sub(NAMED);
    let mut named = thin[..thin.len().min(NAMED)].join(", ");
    if more > 0 {
        named.push_str(&format!(" and {more} more"));
    }
    Some(format!(
        "Thinly sampled: {} of {all} sites ran fewer than {THIN_ACCESSES} timed accesses in their run ({named}): their mean cycles rest on few accesses and move from one sample to the next.",
        thin.len()
    ))
}

/// The probes against the ground truth, per mode, where the runs have it (the emulator's), with
/// the accesses and warps each figure rests on.
fn truth_verdict(rows: &[&SweepRow], runs: &[Run], modes: &[&str]) -> Vec<String> {
    let signed_pct = |x: f64| format!("{:+.1} %", x * 100.0);
    let mut reading = Vec::new();
    let mut shift = Vec::new();
    let mut against_bare = Vec::new();
    for &m in modes {
        let of = |f: fn(&SweepRow) -> Option<f64>| -> Vec<f64> {
            rows.iter()
                .filter(|r| r.mode == m)
                .filter_map(|r| f(r))
                .collect()
        };
        let errors = of(|r| r.probe_error);
        let bias = of(|r| r.probe_bias_cycles);
        if let (Some(med), Some((lo, hi)), Some(b)) = (
            median(&errors),
            range(errors.iter().copied()),
            median(&bias),
        ) {
            // A run.json from before every timed warp was paired says nothing of its warps: it
            // paired the traced ones.
            let (accesses, warps) = runs
                .iter()
                .filter(|r| r.files.row.mode == m)
                .filter_map(|r| Some((r.files.truth.as_ref()?, r)))
                .fold((0, 0), |(a, w), (t, r)| {
                    let traced = || r.stats.warps.iter().filter(|w| w.records > 0).count() as u64;
                    (a + t.run.accesses, w + t.warps.unwrap_or_else(traced))
                });
            reading.push(format!(
                "{m} {} ({} to {}; median bias {} cycles, {} runs, {accesses} accesses of {warps} warps)",
                signed_pct(med),
                signed_pct(lo),
                signed_pct(hi),
                sig(b),
                errors.len()
            ));
        }
        let median_and_largest = |xs: &[f64]| {
            let worst = xs
                .iter()
                .copied()
                .max_by(|a, b| a.abs().total_cmp(&b.abs()));
            Some(format!(
                "{} (largest {})",
                signed_pct(median(xs)?),
                signed_pct(worst?)
            ))
        };
        if let Some(timed) = median_and_largest(&of(|r| r.truth_shift)) {
            let every = median_and_largest(&of(|r| r.load_shift))
                .map(|l| format!(" and {l} for every load, timed or not"))
                .unwrap_or_default();
            shift.push(format!("{m} {timed} for the timed accesses{every}"));
        }
        let sites: Vec<f64> = runs
            .iter()
            .filter(|r| r.files.row.mode == m)
            .filter_map(|r| r.files.truth.as_ref())
            .flat_map(|t| t.sites.iter().filter_map(|s| s.stats.probe_vs_bare()))
            .collect();
        if let Some((lo, hi)) = range(sites.iter().copied()) {
            let within = sites.iter().filter(|x| x.abs() <= SITE_TOLERANCE).count();
            against_bare.push(format!(
                "{m} {} to {} ({within} of {} within {})",
                signed_pct(lo),
                signed_pct(hi),
                sites.len(),
                pct(SITE_TOLERANCE, 0)
            ));
        }
    }
    let mut v = Vec::new();
    if !reading.is_empty() {
        v.push(format!(
            "Probe against the true access time (the emulator's issue and data-return cycles of the timed warps' timed loads), median error: {}. A probe that sees the memory time reads near 0; one that times the issue reads near −100 %.",
            reading.join("; ")
        ));
    }
    if !shift.is_empty() {
        v.push(format!(
            "What measuring did to the accesses' true time (probed ÷ bare build − 1, the median over the runs): {}.",
            shift.join("; ")
        ));
    }
    if !against_bare.is_empty() {
        v.push(format!(
            "Each site's mean reading against the bare build's true time of the same accesses (probe_vs_bare in truth_sites.csv: the probe's error and measuring's shift together), over the runs' sites: {}.",
            against_bare.join("; ")
        ));
    }
    v
}

/// One panel per probe mode: overhead, occupancy ratio and both hit rates over the runs, and
/// where known the probe's reading and the true time as ratios.
pub(crate) fn figure(rows: &[&SweepRow]) -> Option<Figure> {
    let mut modes: Vec<String> = Vec::new();
    for r in rows {
        if r.overhead.is_some() && !modes.contains(&r.mode) {
            modes.push(r.mode.clone());
        }
    }
    if modes.is_empty() {
        return None;
    }
    let mut y_max: f64 = 1.1;
    let panels = modes
        .iter()
        .map(|m| {
            let rs: Vec<&SweepRow> = rows.iter().copied().filter(|r| r.mode == *m).collect();
            let ratio = |r: &&SweepRow| {
                Some(r.occupancy_probed? as f64 / r.occupancy_bare? as f64)
                    .filter(|x| x.is_finite())
            };
            let mut series = vec![
                (
                    "kernel time, probed ÷ bare".to_string(),
                    rs.iter().map(|r| r.overhead).collect::<Vec<_>>(),
                ),
                (
                    "blocks/SM, probed ÷ bare".to_string(),
                    rs.iter().map(ratio).collect(),
                ),
                (
                    "texture hit rate, bare".to_string(),
                    rs.iter().map(|r| r.tex_hit_rate_bare).collect(),
                ),
                (
                    "texture hit rate, probed".to_string(),
                    rs.iter().map(|r| r.tex_hit_rate).collect(),
                ),
                (
                    "probe reading ÷ true access time".to_string(),
                    rs.iter().map(|r| r.probe_error.map(|e| 1.0 + e)).collect(),
                ),
                (
                    "true access time, probed ÷ bare".to_string(),
                    rs.iter().map(|r| r.truth_shift.map(|s| 1.0 + s)).collect(),
                ),
            ];
            // A series the backend could not measure (the truth on a GPU) is left out.
            series.retain(|(_, v)| v.iter().any(Option::is_some));
            for (_, v) in &series {
                for x in v.iter().flatten() {
                    y_max = y_max.max(x * 1.1);
                }
            }
            LinePanel {
                title: m.clone(),
                categories: rs
                    .iter()
                    .map(|r| format!("{} {}", pretty_shape(&r.shape), r.view))
                    .collect(),
                series,
            }
        })
        .collect();
    Some(Figure {
        stem: "perturbation_overview".into(),
        title: "How much measuring changed the kernel".into(),
        caption: "Per run: kernel time and resident blocks per SM of the probed build relative to the bare (WS_OFF) build (1 = unchanged), the texture hit rate of both builds, and on the emulator the probe's mean reading over the true mean access time (1 = exact) and the true time over the bare build's (1 = unchanged).".into(),
        kind: FigureKind::Lines {
            panels,
            y_desc: "ratio or rate".into(),
            y_max,
            x_desc: "run (block shape, view)".into(),
        },
        size: (1400, 520),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(run: &str, mode: &str, bare: Option<f64>, probed: Option<f64>) -> SweepRow {
        SweepRow {
            run: run.into(),
            mode: mode.into(),
            achieved_occupancy_bare: bare,
            achieved_occupancy: probed,
            ..SweepRow::default()
        }
    }

    #[test]
    fn the_achieved_occupancy_verdict_names_the_largest_change() {
        let rows = [
            row("a", "fence", Some(0.30), Some(0.31)),
            row("b", "naive", Some(0.40), Some(0.375)),
            // The bare run is its own reference, and a run without figures says nothing.
            row("c", "off", Some(0.20), Some(0.50)),
            row("d", "fence", None, Some(0.9)),
        ];
        let refs: Vec<&SweepRow> = rows.iter().collect();
        let v = achieved_verdict(&refs).unwrap();
        assert!(v.contains("at most 2.5 points in 2 runs"), "{v}");
        assert!(v.contains("b: 40.0 % bare, 37.5 % probed"), "{v}");
        assert_eq!(achieved_verdict(&refs[2..]), None);
    }
}
