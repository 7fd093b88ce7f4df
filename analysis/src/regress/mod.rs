//! Cross-platform comparison with one reference platform (single-reference regression): the
//! emulator's architecture-neutral features of each run explain the frame time each target
//! platform (another preset, or a GPU) measured for the same run.
//!
//! Why: a frame time on one GPU does not say what it depends on. Fitting it against features of
//! the *workload* (measured once, on the reference) names the features each platform is sensitive
//! to, and lining the platforms' times up over a swept parameter shows where the faster platform
//! flips (the crossover).
//!
//! Main items: [`forward_select`] → [`Selection`] (forward stepwise selection by adjusted R² over a
//! natural-cubic-spline basis per feature), [`compare`] → [`CompareSummary`] (sweeps in, CSVs,
//! `compare.md` and a figure out), and the building blocks [`spline_basis`], [`fit_r2`],
//! [`adjusted_r2`].
//!
//! # Method
//! - Basis: each feature x becomes the columns of a restricted (natural) cubic spline with knots at
//!   the 10/50/90 % quantiles (Harrell's form): x itself and, per inner knot j,
//!   `(x−t_j)³₊ − (x−t_{k−1})³₊·(t_k−t_j)/(t_k−t_{k−1}) + (x−t_k)³₊·(t_{k−1}−t_j)/(t_k−t_{k−1})`,
//!   divided by (t_k − t_1)² for conditioning; linear beyond the outer knots. Fewer than three
//!   distinct values give the linear column only; a constant feature gives none.
//! - Fit: least squares with an intercept, by modified Gram–Schmidt QR on centred columns
//!   (hand-written; a column that is (numerically) a combination of earlier ones is dropped and
//!   does not count as a parameter). R² = 1 − SS_res/SS_tot.
//! - Selection: start empty (adjusted R² 0); each step adds the feature whose basis gives the
//!   highest adjusted R² = 1 − (1 − R²)(n − 1)/(n − p − 1), p = parameters besides the intercept;
//!   stop when no candidate improves it by more than 1e-9. A candidate needs at least two runs
//!   per coefficient (n ≥ 2(p + 1)), so an exact fit through too few runs is not taken for an
//!   explanation. Ties go to the earlier feature. A final R² ≤ 0.8 carries a warning: the features do not explain the time.
//!
//! # `compare` inputs and outputs
//! Each sweep folder is one platform (`sweep.csv` + `<run>/run.json`, as `warpscope sweep`
//! writes). The **first** sweep is the reference: its run.json supplies the features (below); a run
//! is matched across sweeps by its `run` name, in the reference's row order. Features per run
//! (from run.json; one missing leaves the feature out for all runs): `loads_pki` (L1 + texture
//! requests per 1000 warp instructions), `tex_misses_pki`, `l1_misses_pki`, `l2_misses_pki` (sector
//! misses per 1000 warp instructions), `active_lanes` (thread ÷ warp instructions, when counted),
//! `ops_per_mem` (warp instructions per L1/texture/constant/shared request), `dram_bytes` (DRAM
//! bytes read + written per launch). Target: `kernel_ms` of each platform.
//! Files in `out`: `compare_features.csv` (platform, step, feature, r2, adj_r2, n, warning),
//! `compare_times.csv` (run, one kernel_ms column per platform, fastest), `compare.md`, and
//! `compare_times.png`/`.svg`.
//!
//! ```
//! use analysis::regress::forward_select;
//! let x1: Vec<f64> = (0..20).map(|i| i as f64).collect();
//! let x2: Vec<f64> = (0..20).map(|i| ((i * 7) % 20) as f64).collect();
//! let y: Vec<f64> = x1.iter().map(|v| 2.0 * v + 1.0).collect();
//! let s = forward_select("t", &[("x2".into(), x2), ("x1".into(), x1)], &y);
//! assert_eq!(s.steps[0].feature, "x1");
//! assert_eq!(s.steps.len(), 1);
//! ```

mod report;
pub(crate) use report::section;

use crate::AnalysisError;
use crate::figures::{Figure, FigureKind, LinePanel};
use crate::output::write_atomic;
use crate::sweep_dir::read_sweep_csv;
use serde::Serialize;
use std::path::{Path, PathBuf};
use trace::RunMetrics;

/// Knot quantiles of the spline basis.
const KNOT_QUANTILES: [f64; 3] = [0.1, 0.5, 0.9];
/// Below this R² the features do not explain the target (the issue's threshold).
pub const R2_WARN: f64 = 0.8;
/// Smallest adjusted-R² gain that counts as an improvement.
const MIN_GAIN: f64 = 1e-9;

/// One accepted step of the selection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub feature: String,
    /// R² and adjusted R² of the model after adding this feature.
    pub r2: f64,
    pub adj_r2: f64,
    /// Parameters besides the intercept after this step.
    pub params: usize,
}

/// The outcome of forward selection for one target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Selection {
    pub target: String,
    pub n: usize,
    /// Features in the order they were added (most explanatory first).
    pub steps: Vec<Step>,
    pub r2: f64,
    pub adj_r2: f64,
    /// Set when R² ≤ [`R2_WARN`], in words.
    pub warning: Option<String>,
}

/// The restricted cubic spline columns of `x` (see the module docs); empty for a constant or
/// non-finite feature.
pub fn spline_basis(x: &[f64]) -> Vec<Vec<f64>> {
    if x.iter().any(|v| !v.is_finite()) {
        return Vec::new();
    }
    let mut sorted = x.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.dedup();
    if sorted.len() < 2 {
        return Vec::new();
    }
    let mut cols = vec![x.to_vec()];
    if sorted.len() < 3 {
        return cols;
    }
    let mut all = x.to_vec();
    all.sort_by(f64::total_cmp);
    let mut knots: Vec<f64> = KNOT_QUANTILES
        .iter()
        .map(|&q| quantile_sorted(&all, q))
        .collect();
    knots.dedup();
    let k = knots.len();
    if k < 3 {
        return cols;
    }
    let (tk1, tk) = (knots[k - 2], knots[k - 1]);
    let scale = (tk - knots[0]).powi(2);
    if tk <= tk1 || scale <= 0.0 {
        return cols;
    }
    let p3 = |v: f64| v.max(0.0).powi(3);
    for &tj in &knots[..k - 2] {
        cols.push(
            x.iter()
                .map(|&v| {
                    (p3(v - tj) - p3(v - tk1) * (tk - tj) / (tk - tk1)
                        + p3(v - tk) * (tk1 - tj) / (tk - tk1))
                        / scale
                })
                .collect(),
        );
    }
    cols
}

/// Quantile `q` of sorted values with linear interpolation between order statistics.
fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len().saturating_sub(1)) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    let (a, b) = (sorted[lo], sorted[hi.min(sorted.len() - 1)]);
    a + (b - a) * (pos - lo as f64)
}

/// R² of the least-squares fit of `y` on `cols` plus an intercept, and the number of independent
/// columns used; `None` when `y` is constant or lengths differ.
pub fn fit_r2(cols: &[Vec<f64>], y: &[f64]) -> Option<(f64, usize)> {
    let n = y.len();
    if n < 2 || cols.iter().any(|c| c.len() != n) {
        return None;
    }
    let center = |v: &[f64]| -> Vec<f64> {
        let m = v.iter().sum::<f64>() / n as f64;
        v.iter().map(|x| x - m).collect()
    };
    let mut r = center(y);
    let ss_tot: f64 = r.iter().map(|v| v * v).sum();
    if ss_tot <= 0.0 || !ss_tot.is_finite() {
        return None;
    }
    let mut basis: Vec<Vec<f64>> = Vec::new();
    for c in cols {
        let mut q = center(c);
        let norm0 = q.iter().map(|v| v * v).sum::<f64>().sqrt();
        // Twice-orthogonalized Gram–Schmidt: one pass loses orthogonality on near-collinear data.
        for _ in 0..2 {
            for b in &basis {
                let d: f64 = q.iter().zip(b).map(|(a, b)| a * b).sum();
                q.iter_mut().zip(b).for_each(|(a, b)| *a -= d * b);
            }
        }
        let norm = q.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm0 == 0.0 || norm <= 1e-9 * norm0 || !norm.is_finite() {
            continue;
        }
        q.iter_mut().for_each(|v| *v /= norm);
        let d: f64 = r.iter().zip(&q).map(|(a, b)| a * b).sum();
        r.iter_mut().zip(&q).for_each(|(a, b)| *a -= d * b);
        basis.push(q);
    }
    let ss_res: f64 = r.iter().map(|v| v * v).sum();
    Some(((1.0 - ss_res / ss_tot).clamp(0.0, 1.0), basis.len()))
}

/// Adjusted R² = 1 − (1 − R²)(n − 1)/(n − p − 1); `None` when n − p − 1 ≤ 0.
pub fn adjusted_r2(r2: f64, n: usize, p: usize) -> Option<f64> {
    let dof = n as f64 - p as f64 - 1.0;
    (dof > 0.0).then(|| 1.0 - (1.0 - r2) * (n as f64 - 1.0) / dof)
}

/// Forward stepwise selection of `features` (name, value per run) for `y` (see the module docs).
/// Features whose length differs from `y` are never selected.
pub fn forward_select(target: &str, features: &[(String, Vec<f64>)], y: &[f64]) -> Selection {
    let n = y.len();
    let bases: Vec<Vec<Vec<f64>>> = features
        .iter()
        .map(|(_, x)| {
            if x.len() == n {
                spline_basis(x)
            } else {
                Vec::new()
            }
        })
        .collect();
    let mut chosen: Vec<usize> = Vec::new();
    let mut cols: Vec<Vec<f64>> = Vec::new();
    let (mut r2, mut adj) = (0.0, 0.0);
    let mut steps = Vec::new();
    loop {
        let mut best: Option<(usize, f64, f64, usize)> = None;
        for (i, b) in bases.iter().enumerate() {
            if chosen.contains(&i) || b.is_empty() {
                continue;
            }
            let mut trial = cols.clone();
            trial.extend(b.iter().cloned());
            let Some((r2_t, p)) = fit_r2(&trial, y) else {
                continue;
            };
            // At least two runs per fitted coefficient (p + intercept): an exact fit through
            // too few runs explains nothing.
            if n < 2 * (p + 1) {
                continue;
            }
            let Some(adj_t) = adjusted_r2(r2_t, n, p) else {
                continue;
            };
            if best.is_none_or(|(_, _, a, _)| adj_t > a) {
                best = Some((i, r2_t, adj_t, p));
            }
        }
        match best {
            Some((i, r2_t, adj_t, p)) if adj_t > adj + MIN_GAIN => {
                chosen.push(i);
                cols.extend(bases[i].iter().cloned());
                r2 = r2_t;
                adj = adj_t;
                steps.push(Step {
                    feature: features[i].0.clone(),
                    r2,
                    adj_r2: adj,
                    params: p,
                });
            }
            _ => break,
        }
    }
    let warning = (r2 <= R2_WARN).then(|| {
        format!(
            "{target}: R² = {r2:.3} ≤ {R2_WARN}: the reference's features do not explain this time (n = {n})"
        )
    });
    Selection {
        target: target.to_string(),
        n,
        steps,
        r2,
        adj_r2: adj,
        warning,
    }
}

/// Where the faster of two platforms changes along the reference's run order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Crossover {
    pub platform_a: String,
    pub platform_b: String,
    /// The last run before and the first run after the flip.
    pub before_run: String,
    pub after_run: String,
    /// The platform that is faster from `after_run` on.
    pub faster_after: String,
}

/// What [`compare`] found and wrote.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareSummary {
    /// Platform names (`backend:preset`, or the folder name when that repeats), reference first.
    pub platforms: Vec<String>,
    /// Runs present in every sweep, in the reference's order.
    pub runs: Vec<String>,
    /// Feature names available on the reference.
    pub features: Vec<String>,
    pub selections: Vec<Selection>,
    pub crossovers: Vec<Crossover>,
    pub warnings: Vec<String>,
    pub files: Vec<PathBuf>,
}

/// One sweep as a platform: its name and (run → kernel_ms, run.json) in row order.
struct Platform {
    name: String,
    runs: Vec<(String, Option<f64>, Option<RunMetrics>)>,
}

fn load_platform(dir: &Path, mode: Option<&str>) -> Result<Platform, AnalysisError> {
    let mut rows = read_sweep_csv(dir)?;
    if let Some(m) = mode {
        rows.retain(|r| r.mode == m);
    }
    let name = rows
        .first()
        .map(|r| format!("{}:{}", r.backend, r.preset))
        .unwrap_or_default();
    let runs = rows
        .into_iter()
        .map(|r| {
            let json = RunMetrics::read(&dir.join(&r.run).join(trace::RUN_FILE_NAME)).ok();
            let ms = r
                .kernel_ms
                .or_else(|| json.as_ref().and_then(|j| j.kernel_ms));
            (r.run, ms, json)
        })
        .collect();
    Ok(Platform { name, runs })
}

/// The reference features of one run.json (see the module docs); absent ones are `None`.
pub fn run_features(run: &RunMetrics) -> Vec<(&'static str, Option<f64>)> {
    let e = run.emulator.as_ref();
    let c = |f: fn(&trace::MemCounters) -> u64| e.map(|e| f(&e.mem) as f64);
    let wi = run
        .warp_instructions
        .or(e.map(|e| e.warp_instructions))
        .map(|w| w as f64)
        .filter(|v| *v > 0.0);
    let pki = |v: Option<f64>| v.zip(wi).map(|(v, w)| 1000.0 * v / w);
    let add = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a + b);
    let loads = add(c(|m| m.l1.requests), c(|m| m.texture.requests));
    let mem_requests = add(
        add(loads, c(|m| m.constant.requests)),
        c(|m| m.shared_accesses),
    );
    // Thread instructions are counted with the warp instructions; none counted is unknown.
    let active = e
        .map(|e| e.thread_instructions as f64)
        .filter(|t| *t > 0.0)
        .zip(wi)
        .map(|(t, w)| t / w);
    vec![
        ("loads_pki", pki(loads)),
        ("tex_misses_pki", pki(c(|m| m.texture.sector_misses))),
        ("l1_misses_pki", pki(c(|m| m.l1.sector_misses))),
        ("l2_misses_pki", pki(c(|m| m.l2.sector_misses))),
        ("active_lanes", active),
        (
            "ops_per_mem",
            wi.zip(mem_requests.filter(|m| *m > 0.0))
                .map(|(w, m)| w / m),
        ),
        (
            "dram_bytes",
            add(c(|m| m.dram_bytes_read), c(|m| m.dram_bytes_written)),
        ),
    ]
}

/// Compares the platforms of `sweeps` (the first is the reference) and writes the files named in
/// the module docs into `out` (created if missing).
pub fn compare(sweeps: &[PathBuf], out: &Path) -> Result<CompareSummary, AnalysisError> {
    compare_mode(sweeps, out, None)
}

/// [`compare`] over the runs of one probe mode only (`None`: all runs). Probe overhead differs by
/// mode and is no feature of the workload, so mixing modes blurs the fit.
pub fn compare_mode(
    sweeps: &[PathBuf],
    out: &Path,
    mode: Option<&str>,
) -> Result<CompareSummary, AnalysisError> {
    let Some(first) = sweeps.first() else {
        return Err(AnalysisError::NoRuns {
            path: out.to_path_buf(),
            reason: "compare needs at least one sweep".into(),
        });
    };
    let mut platforms = sweeps
        .iter()
        .map(|s| load_platform(s, mode))
        .collect::<Result<Vec<_>, _>>()?;
    // Two sweeps of the same preset are told apart by their folder names.
    let dup: Vec<bool> = platforms
        .iter()
        .map(|a| a.name.is_empty() || platforms.iter().filter(|b| b.name == a.name).count() > 1)
        .collect();
    for (i, p) in platforms.iter_mut().enumerate() {
        if dup[i] {
            p.name = sweeps[i].display().to_string();
        }
    }
    let reference = &platforms[0];
    let mut warnings = Vec::new();
    // Runs every platform measured (with a time) and the reference has run.json for.
    let runs: Vec<String> = reference
        .runs
        .iter()
        .filter(|(run, _, json)| {
            json.is_some()
                && platforms.iter().all(|p| {
                    p.runs
                        .iter()
                        .any(|(r, ms, _)| r == run && ms.is_some_and(f64::is_finite))
                })
        })
        .map(|(r, _, _)| r.clone())
        .collect();
    if runs.is_empty() {
        return Err(AnalysisError::NoRuns {
            path: first.clone(),
            reason: "no run has a kernel time in every sweep and a run.json in the reference"
                .into(),
        });
    }
    let time = |p: &Platform, run: &str| -> f64 {
        p.runs
            .iter()
            .find(|(r, _, _)| r == run)
            .and_then(|(_, ms, _)| *ms)
            .unwrap_or(f64::NAN)
    };
    let per_run: Vec<Vec<(&'static str, Option<f64>)>> = runs
        .iter()
        .map(|run| {
            reference
                .runs
                .iter()
                .find(|(r, _, _)| r == run)
                .and_then(|(_, _, j)| j.as_ref())
                .map(run_features)
                .unwrap_or_default()
        })
        .collect();
    let mut features: Vec<(String, Vec<f64>)> = Vec::new();
    if let Some(names) = per_run.first() {
        for (k, (name, _)) in names.iter().enumerate() {
            let col: Option<Vec<f64>> = per_run
                .iter()
                .map(|f| f.get(k).and_then(|(_, v)| *v))
                .collect();
            let present = per_run
                .iter()
                .filter(|f| f.get(k).is_some_and(|(_, v)| v.is_some()))
                .count();
            match col {
                Some(col) => features.push((name.to_string(), col)),
                // A counter no run has (e.g. active lanes on the study's run.json) is no news.
                None if present == 0 => {}
                None => warnings.push(format!(
                    "feature {name} is missing from some reference run.json: left out"
                )),
            }
        }
    }
    let mut selections = Vec::new();
    for p in &platforms {
        let y: Vec<f64> = runs.iter().map(|r| time(p, r)).collect();
        let s = forward_select(&p.name, &features, &y);
        if let Some(w) = &s.warning {
            warnings.push(w.clone());
        }
        selections.push(s);
    }
    let mut crossovers = Vec::new();
    for a in 0..platforms.len() {
        for b in a + 1..platforms.len() {
            let (pa, pb) = (&platforms[a], &platforms[b]);
            let mut prev: Option<(usize, bool)> = None;
            for (i, run) in runs.iter().enumerate() {
                let (ta, tb) = (time(pa, run), time(pb, run));
                if ta == tb {
                    continue;
                }
                let a_faster = ta < tb;
                if let Some((j, was)) = prev
                    && was != a_faster
                {
                    crossovers.push(Crossover {
                        platform_a: pa.name.clone(),
                        platform_b: pb.name.clone(),
                        before_run: runs[j].clone(),
                        after_run: run.clone(),
                        faster_after: if a_faster { &pa.name } else { &pb.name }.clone(),
                    });
                }
                prev = Some((i, a_faster));
            }
        }
    }
    std::fs::create_dir_all(out).map_err(|e| AnalysisError::io(out, e))?;
    let mut files = Vec::new();
    // compare_features.csv
    let path = out.join("compare_features.csv");
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "platform", "step", "feature", "r2", "adj_r2", "n", "warning",
    ])
    .map_err(|e| AnalysisError::csv(&path, e))?;
    for s in &selections {
        for (i, st) in s.steps.iter().enumerate() {
            w.write_record([
                s.target.clone(),
                (i + 1).to_string(),
                st.feature.clone(),
                format!("{:.6}", st.r2),
                format!("{:.6}", st.adj_r2),
                s.n.to_string(),
                s.warning.clone().unwrap_or_default(),
            ])
            .map_err(|e| AnalysisError::csv(&path, e))?;
        }
        if s.steps.is_empty() {
            w.write_record([
                s.target.clone(),
                "0".into(),
                String::new(),
                "0".into(),
                "0".into(),
                s.n.to_string(),
                s.warning.clone().unwrap_or_default(),
            ])
            .map_err(|e| AnalysisError::csv(&path, e))?;
        }
    }
    let bytes = w
        .into_inner()
        .map_err(|e| AnalysisError::csv(&path, e.into_error().into()))?;
    write_atomic(&path, &bytes)?;
    files.push(path);
    // compare_times.csv
    let path = out.join("compare_times.csv");
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["run".to_string()];
    header.extend(platforms.iter().map(|p| format!("kernel_ms:{}", p.name)));
    header.push("fastest".into());
    w.write_record(&header)
        .map_err(|e| AnalysisError::csv(&path, e))?;
    for run in &runs {
        let ts: Vec<f64> = platforms.iter().map(|p| time(p, run)).collect();
        let fastest = ts
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| platforms[i].name.clone())
            .unwrap_or_default();
        let mut rec = vec![run.clone()];
        rec.extend(ts.iter().map(|t| format!("{t}")));
        rec.push(fastest);
        w.write_record(&rec)
            .map_err(|e| AnalysisError::csv(&path, e))?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| AnalysisError::csv(&path, e.into_error().into()))?;
    write_atomic(&path, &bytes)?;
    files.push(path);
    // Figure: each platform's time over the reference's runs, as a fraction of the slowest time
    // of all (the line figure's axis is 0–1.1), so lines cross where the faster platform flips.
    let slowest = runs
        .iter()
        .flat_map(|r| platforms.iter().map(move |p| time(p, r)))
        .fold(0.0f64, f64::max);
    let fig = Figure {
        stem: "compare_times".into(),
        title: "Kernel time per platform".into(),
        caption: format!(
            "Kernel time of each run on each platform as a fraction of the slowest ({slowest:.4} ms), in the order of the reference sweep ({}).",
            platforms[0].name
        ),
        kind: FigureKind::Lines {
            panels: vec![LinePanel {
                title: String::new(),
                categories: runs.clone(),
                series: platforms
                    .iter()
                    .map(|p| {
                        (
                            p.name.clone(),
                            runs.iter()
                                .map(|r| Some(time(p, r) / slowest).filter(|v| v.is_finite()))
                                .collect(),
                        )
                    })
                    .collect(),
            }],
            y_desc: "kernel time ÷ slowest".into(),
            y_max: 1.1,
            x_desc: "run".into(),
        },
        size: (1000, 520),
    };
    fig.render(out)?;
    files.push(out.join("compare_times.png"));
    files.push(out.join("compare_times.svg"));
    let summary = CompareSummary {
        platforms: platforms.iter().map(|p| p.name.clone()).collect(),
        runs,
        features: features.iter().map(|(n, _)| n.clone()).collect(),
        selections,
        crossovers,
        warnings,
        files,
    };
    let md_path = out.join("compare.md");
    crate::report::write_markdown(&report::compare_doc(&summary), &md_path)?;
    let mut summary = summary;
    summary.files.push(md_path);
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    /// Deterministic pseudo-random values in [0, 1) (a 64-bit LCG), so tests need no RNG crate.
    fn lcg(seed: u64, n: usize) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect()
    }

    #[test]
    fn adjusted_r2_matches_the_formula() {
        // n = 11, p = 2, R² = 0.9 → 1 − 0.1·10/8 = 0.875.
        assert!((adjusted_r2(0.9, 11, 2).unwrap() - 0.875).abs() < 1e-12);
        assert_eq!(adjusted_r2(0.9, 3, 2), None);
    }

    #[test]
    fn exact_linear_fit_has_r2_one_and_constant_feature_has_no_basis() {
        let x: Vec<f64> = (0..10).map(f64::from).collect();
        let y: Vec<f64> = x.iter().map(|v| 3.0 * v - 2.0).collect();
        let (r2, p) = fit_r2(std::slice::from_ref(&x), &y).unwrap();
        assert!((r2 - 1.0).abs() < 1e-12);
        assert_eq!(p, 1);
        assert!(spline_basis(&[5.0; 10]).is_empty());
        assert_eq!(spline_basis(&x).len(), 2);
        // A duplicated column is dropped, not counted.
        assert_eq!(fit_r2(&[x.clone(), x], &y).unwrap().1, 1);
    }

    #[test]
    fn spline_basis_is_linear_beyond_the_outer_knots() {
        let x: Vec<f64> = (0..=100).map(f64::from).collect();
        let b = spline_basis(&x);
        let c = &b[1];
        // Second differences vanish past the last knot (90th percentile = 90).
        for i in 92..100 {
            assert!((c[i + 1] - 2.0 * c[i] + c[i - 1]).abs() < 1e-9, "{i}");
        }
        // And the column is zero before the first knot.
        assert!(c[..10].iter().all(|v| *v == 0.0));
    }

    #[test]
    fn spline_captures_a_nonlinear_feature_a_line_misses() {
        let x: Vec<f64> = (0..40).map(|i| f64::from(i) / 39.0).collect();
        let y: Vec<f64> = x.iter().map(|v| (v - 0.5) * (v - 0.5)).collect();
        let (linear, _) = fit_r2(std::slice::from_ref(&x), &y).unwrap();
        let (spline, _) = fit_r2(&spline_basis(&x), &y).unwrap();
        assert!(linear < 0.05, "{linear}");
        assert!(spline > 0.9, "{spline}");
    }

    #[test]
    fn selection_order_follows_the_true_effect_sizes_and_stops() {
        let n = 60;
        let (a, b, c) = (lcg(1, n), lcg(2, n), lcg(3, n));
        // y depends strongly on b, weakly on a; c is irrelevant; no noise, so after a and b the
        // fit is exact and c cannot improve it.
        let y: Vec<f64> = (0..n).map(|i| 10.0 * b[i] + 2.0 * a[i]).collect();
        let feats = vec![
            ("c".to_string(), c),
            ("a".to_string(), a),
            ("b".to_string(), b),
        ];
        let s = forward_select("t", &feats, &y);
        let order: Vec<&str> = s.steps.iter().map(|st| st.feature.as_str()).collect();
        assert_eq!(order, vec!["b", "a"]);
        assert!(s.r2 > 0.999999);
        assert!(s.warning.is_none());
        assert!(s.steps[0].adj_r2 < s.steps[1].adj_r2);
    }

    #[test]
    fn unexplained_target_warns() {
        let n = 30;
        let y = lcg(7, n);
        // Feature unrelated to y except through a tiny shared component.
        let x: Vec<f64> = lcg(8, n);
        let s = forward_select("gpu", &[("x".into(), x)], &y);
        assert!(s.r2 <= R2_WARN);
        assert!(s.warning.as_deref().is_some_and(|w| w.contains("gpu")));
    }

    #[test]
    fn too_few_runs_select_nothing() {
        // Two runs leave no degree of freedom for any feature.
        let s = forward_select("t", &[("x".into(), vec![1.0, 2.0])], &[1.0, 2.0]);
        assert!(s.steps.is_empty());
    }

    fn write_sweep(dir: &Path, preset: &str, runs: &[(&str, f64, u64, u64)]) {
        std::fs::create_dir_all(dir).unwrap();
        let mut csv = String::from("run,backend,preset,shape,view,mode,cycles,kernel_ms\n");
        for (run, ms, tex_misses, dram) in runs {
            let _ = writeln!(csv, "{run},emu,{preset},8x16,\"0,0,0\",fence,,{ms}");
            let d = dir.join(run);
            std::fs::create_dir_all(&d).unwrap();
            let mut m = RunMetrics::new(
                "emu",
                "k",
                trace::Dim3::new(1, 1, 1),
                trace::Dim3::new(128, 1, 1),
                trace::ProbeMode::Fence,
            );
            m.warp_instructions = Some(1000);
            let cache = |requests, sector_misses| trace::CacheCounters {
                requests,
                sector_misses,
                ..Default::default()
            };
            m.emulator = Some(trace::EmuCounters {
                mem: trace::MemCounters {
                    l1: cache(10, 5),
                    texture: cache(100, *tex_misses),
                    l2: cache(50, 7),
                    constant: cache(4, 0),
                    dram_bytes_read: *dram,
                    ..Default::default()
                },
                ..Default::default()
            });
            m.write(&d.join("run.json")).unwrap();
        }
        std::fs::write(dir.join("sweep.csv"), csv).unwrap();
    }

    #[test]
    fn compare_finds_features_and_the_crossover() {
        let tmp = tempfile::tempdir().unwrap();
        let n = 12;
        let tex = lcg(11, n);
        let dram = lcg(12, n);
        let names: Vec<String> = (0..n).map(|i| format!("r{i:02}")).collect();
        // Platform A's time follows texture misses; B's follows DRAM bytes plus a ramp over the
        // runs, so B starts faster and ends slower.
        // Counters are whole numbers: the time follows the rounded count exactly.
        let a: Vec<(&str, f64, u64, u64)> = (0..n)
            .map(|i| {
                let misses = (1e4 * tex[i]).round() as u64;
                (
                    names[i].as_str(),
                    1.0 + misses as f64 / 1e4,
                    misses,
                    (1e6 * dram[i]).round() as u64,
                )
            })
            .collect();
        let b: Vec<(&str, f64, u64, u64)> = (0..n)
            .map(|i| {
                let t = if i < n / 2 { 0.1 } else { 5.0 };
                (names[i].as_str(), t + 0.5 * dram[i], 0, 0)
            })
            .collect();
        write_sweep(&tmp.path().join("a"), "gtx480", &a);
        write_sweep(&tmp.path().join("b"), "h100", &b);
        let out = tmp.path().join("out");
        let s = compare(&[tmp.path().join("a"), tmp.path().join("b")], &out).unwrap();
        assert_eq!(s.platforms, vec!["emu:gtx480", "emu:h100"]);
        assert_eq!(s.runs.len(), n);
        assert_eq!(s.selections[0].steps[0].feature, "tex_misses_pki");
        assert!(s.selections[0].r2 > 0.99);
        assert_eq!(s.crossovers.len(), 1);
        assert_eq!(s.crossovers[0].after_run, names[n / 2]);
        assert_eq!(s.crossovers[0].faster_after, "emu:gtx480");
        for f in &s.files {
            assert!(f.is_file(), "{}", f.display());
        }
        let times = std::fs::read_to_string(out.join("compare_times.csv")).unwrap();
        assert_eq!(times.lines().count(), n + 1);
        assert!(compare(&[], &out).is_err());
        // Every run is in fence mode: keeping only naive runs leaves nothing to compare.
        assert!(compare_mode(&[tmp.path().join("a")], &out, Some("naive")).is_err());
        assert_eq!(
            compare_mode(&[tmp.path().join("a")], &out, Some("fence"))
                .unwrap()
                .runs
                .len(),
            n
        );
    }
}
