//! "The paper and warpscope, side by side": each finding of Kanda et al. (IPSJ 2011) on the GTX
//! 480, the same quantity from the sweep, whether they agree, and for a disagreement the reason
//! the sweep's own counters give.
//!
//! Why a table of typed statements: the paper's findings are data (a shape, a view, a mode, a
//! number or a sign read off a figure), so each one is checked the same way against any sweep, and
//! a sweep of another geometry or preset shows at once which findings the model reproduces. The
//! statements are [`PAPER`]; nothing here knows what warpscope measured.
//!
//! Criteria: a share agrees when it is within [`SHARE_TOLERANCE`] of the paper's (its shares are
//! read off a bar chart as "~13 %"); an ordering agrees when it holds strictly; a correlation
//! agrees when Pearson's r has the paper's sign and |r| ≥ [`WEAK_CORRELATION`] (below it the
//! findings say "hardly correlates"). A statement whose runs the sweep lacks is "not measured".
//! Reasons are facts computed from the runs (hit rates, the volume against the configured L2);
//! where none accounts for the difference the reason says "not explained".

use crate::fmt::{pct, pretty_shape, pretty_view, sig};
use crate::report::{Block, Inline, Section};
use crate::stats;
use crate::sweep::model::{Run, WEAK_CORRELATION};
use std::path::Path;

/// Two shares closer than this (absolute, 0–1) agree: the paper's are read off a bar chart.
pub(crate) const SHARE_TOLERANCE: f64 = 0.10;

/// The paper's view (0,0,0) and (90,0,90), as sweep.csv writes views.
const FRONT: &str = "0,0,0";
const SIDE: &str = "90,0,90";

/// Which per-run value a correlation uses as y (x is memory reference frequency).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Y {
    HitRate,
    FrameRate,
}

impl Y {
    fn name(self) -> &'static str {
        match self {
            Y::HitRate => "texture hit rate",
            Y::FrameRate => "frame rate",
        }
    }

    fn of(self, r: &RunFacts) -> Option<f64> {
        match self {
            Y::HitRate => r.tex_hit_rate,
            Y::FrameRate => r.frame_rate,
        }
    }
}

/// What a statement claims, in terms of the sweep's runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Claim {
    /// The memory share of warp time of `shape` at `view` in `mode` is about `share`.
    Share {
        shape: &'static str,
        view: &'static str,
        mode: &'static str,
        share: f64,
    },
    /// At `view`, the naive share is under half the fenced share for each shape.
    NaiveUnderHalf {
        view: &'static str,
        shapes: [&'static str; 2],
    },
    /// At `view` in `mode`, `more` spends a larger share of its time in memory than `less`.
    ShareOrder {
        view: &'static str,
        mode: &'static str,
        more: &'static str,
        less: &'static str,
    },
    /// At `view` in `mode`, `fast` has a higher frame rate than `slow`.
    Faster {
        view: &'static str,
        mode: &'static str,
        fast: &'static str,
        slow: &'static str,
    },
    /// At `view` in `mode`, `higher` has a higher texture hit rate than `lower`.
    HigherHitRate {
        view: &'static str,
        mode: &'static str,
        higher: &'static str,
        lower: &'static str,
    },
    /// Across the shapes with x ≥ `min_x` at `view` in `mode`, memory reference frequency
    /// correlates with `y` with the sign of `positive`.
    Correlation {
        view: &'static str,
        mode: &'static str,
        y: Y,
        min_x: u32,
        positive: bool,
    },
}

/// One of the paper's findings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Statement {
    /// The paper's figure(s).
    pub figure: &'static str,
    /// What the paper says, in words.
    pub text: &'static str,
    pub claim: Claim,
}

/// The paper's findings on the GTX 480 (Kanda et al., IPSJ 2011, §5, figs. 5–9).
pub(crate) const PAPER: [Statement; 14] = [
    Statement {
        figure: "5",
        text: "naive probe, (0,0,0): memory is ~13 % of warp time for 128×1",
        claim: Claim::Share {
            shape: "128x1",
            view: FRONT,
            mode: "naive",
            share: 0.13,
        },
    },
    Statement {
        figure: "5",
        text: "naive probe, (0,0,0): memory is ~20 % of warp time for 1×128",
        claim: Claim::Share {
            shape: "1x128",
            view: FRONT,
            mode: "naive",
            share: 0.20,
        },
    },
    Statement {
        figure: "5",
        text: "fenced probe, (0,0,0): memory is ~50 % of warp time for 128×1",
        claim: Claim::Share {
            shape: "128x1",
            view: FRONT,
            mode: "fence",
            share: 0.50,
        },
    },
    Statement {
        figure: "5",
        text: "fenced probe, (0,0,0): memory is ~80 % of warp time for 1×128",
        claim: Claim::Share {
            shape: "1x128",
            view: FRONT,
            mode: "fence",
            share: 0.80,
        },
    },
    Statement {
        figure: "5",
        text: "naive timing hides memory time: its share is under half the fenced share (128×1 and 1×128, (0,0,0))",
        claim: Claim::NaiveUnderHalf {
            view: FRONT,
            shapes: ["128x1", "1x128"],
        },
    },
    Statement {
        figure: "5",
        text: "fenced probe, (0,0,0): 1×128 spends a larger share of its time in memory than 128×1",
        claim: Claim::ShareOrder {
            view: FRONT,
            mode: "fence",
            more: "1x128",
            less: "128x1",
        },
    },
    Statement {
        figure: "6–9",
        text: "(0,0,0): 128×1 is the fast shape, 1×128 the slow one",
        claim: Claim::Faster {
            view: FRONT,
            mode: "fence",
            fast: "128x1",
            slow: "1x128",
        },
    },
    Statement {
        figure: "6–9",
        text: "(0,0,0): 128×1 has the higher texture hit rate",
        claim: Claim::HigherHitRate {
            view: FRONT,
            mode: "fence",
            higher: "128x1",
            lower: "1x128",
        },
    },
    Statement {
        figure: "6–9",
        text: "fenced probe, (0,0,0): memory reference frequency rises with frame rate across shapes",
        claim: Claim::Correlation {
            view: FRONT,
            mode: "fence",
            y: Y::FrameRate,
            min_x: 1,
            positive: true,
        },
    },
    Statement {
        figure: "6–9",
        text: "fenced probe, (0,0,0): memory reference frequency rises with texture hit rate across shapes",
        claim: Claim::Correlation {
            view: FRONT,
            mode: "fence",
            y: Y::HitRate,
            min_x: 1,
            positive: true,
        },
    },
    Statement {
        figure: "6–9",
        text: "fenced probe, (90,0,90): memory reference frequency rises with frame rate across shapes",
        claim: Claim::Correlation {
            view: SIDE,
            mode: "fence",
            y: Y::FrameRate,
            min_x: 1,
            positive: true,
        },
    },
    Statement {
        figure: "6–9",
        text: "fenced probe, (90,0,90): memory reference frequency rises with texture hit rate across shapes",
        claim: Claim::Correlation {
            view: SIDE,
            mode: "fence",
            y: Y::HitRate,
            min_x: 1,
            positive: true,
        },
    },
    Statement {
        figure: "6–9",
        text: "naive probe, (0,0,0), shapes with x ≥ 8: memory reference frequency falls as texture hit rate rises (the naive probe misleads)",
        claim: Claim::Correlation {
            view: FRONT,
            mode: "naive",
            y: Y::HitRate,
            min_x: 8,
            positive: false,
        },
    },
    Statement {
        figure: "6–9",
        text: "naive probe, (0,0,0), shapes with x ≥ 8: memory reference frequency falls as frame rate rises",
        claim: Claim::Correlation {
            view: FRONT,
            mode: "naive",
            y: Y::FrameRate,
            min_x: 8,
            positive: false,
        },
    },
];

/// What the side-by-side needs of one run (from the analysis, run.json and config.toml).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RunFacts {
    pub shape: String,
    pub view: String,
    pub mode: String,
    pub mem_share: f64,
    pub mem_ref_freq: Option<f64>,
    pub tex_hit_rate: Option<f64>,
    pub frame_rate: Option<f64>,
    pub cycles: Option<f64>,
    pub l2_hit_rate: Option<f64>,
    /// The volume's voxels (u8: bytes), from run.json.
    pub volume_bytes: Option<u64>,
    /// The configured L2 size, from the run's config.toml.
    pub l2_bytes: Option<u64>,
}

impl RunFacts {
    fn of(r: &Run) -> RunFacts {
        let row = &r.files.row;
        let dir = r.files.trace.parent().unwrap_or(Path::new("."));
        let metrics = trace::RunMetrics::read(&dir.join(trace::RUN_FILE_NAME)).ok();
        let l2_bytes = (r.files.config.as_deref())
            .and_then(|text| emulator::GpuConfig::from_toml_str(text, "config.toml").ok())
            .map(|c| c.l2.size_bytes);
        RunFacts {
            shape: row.shape.clone(),
            view: row.view.clone(),
            mode: row.mode.clone(),
            mem_share: r.bd.mem_share,
            mem_ref_freq: r.bd.mem_ref_freq,
            tex_hit_rate: row.tex_hit_rate,
            frame_rate: row.frame_rate,
            cycles: row.cycles.map(|c| c as f64),
            l2_hit_rate: metrics.as_ref().and_then(|m| m.l2_hit_rate),
            volume_bytes: metrics
                .as_ref()
                .and_then(|m| Some(m.study.as_ref()?.volume_voxels)),
            l2_bytes,
        }
    }
}

/// Whether warpscope reproduces a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Agree,
    Disagree,
    /// The sweep lacks the runs the statement is about.
    NotMeasured,
}

impl Verdict {
    fn name(self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::Disagree => "disagree",
            Verdict::NotMeasured => "not measured",
        }
    }
}

/// One row of the side-by-side table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub statement: Statement,
    /// warpscope's figure for the same quantity.
    pub warpscope: String,
    pub verdict: Verdict,
    /// Why they differ (empty when they agree).
    pub reason: String,
}

fn find<'a>(runs: &'a [RunFacts], shape: &str, view: &str, mode: &str) -> Option<&'a RunFacts> {
    runs.iter()
        .find(|r| r.shape == shape && r.view == view && r.mode == mode)
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "–".to_string(), |v| format!("{v:.2}"))
}

/// `768 KiB`, `16 MiB`, `1 GiB`: binary units, one decimal where not whole.
fn bytes(b: u64) -> String {
    let mut v = b as f64;
    let mut unit = "B";
    for u in ["KiB", "MiB", "GiB"] {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.1} {unit}")
    }
}

/// The reason a memory-time difference has in the counters, if any: a volume that fits the L2
/// makes every texture miss an L2 hit, never a DRAM access.
fn l2_reason(r: &RunFacts) -> Option<String> {
    let (v, l2) = (r.volume_bytes?, r.l2_bytes?);
    (v <= l2).then(|| {
        format!(
            "L2 hit rate {}: the volume ({}) fits the {} L2, so a texture miss never reaches DRAM",
            opt(r.l2_hit_rate),
            bytes(v),
            bytes(l2)
        )
    })
}

/// The computed reason, or "not explained" with the facts that were checked.
fn reason_or_facts(r: &RunFacts, extra: Option<String>) -> String {
    extra.or_else(|| l2_reason(r)).unwrap_or_else(|| {
        format!(
            "not explained (texture hit rate {}, L2 hit rate {}{})",
            opt(r.tex_hit_rate),
            opt(r.l2_hit_rate),
            match (r.volume_bytes, r.l2_bytes) {
                (Some(v), Some(l2)) => format!(", volume {} vs {} L2", bytes(v), bytes(l2)),
                _ => String::new(),
            }
        )
    })
}

/// A row for a statement the sweep cannot test; `missing` says what it lacks.
fn not_measured(s: Statement, missing: String) -> Row {
    Row {
        statement: s,
        warpscope: "–".into(),
        verdict: Verdict::NotMeasured,
        reason: missing,
    }
}

impl Row {
    /// A measured finding: agree, or disagree with the reason `why` gives.
    fn judged(
        statement: Statement,
        warpscope: String,
        ok: bool,
        why: impl FnOnce() -> String,
    ) -> Row {
        Row {
            statement,
            warpscope,
            verdict: if ok {
                Verdict::Agree
            } else {
                Verdict::Disagree
            },
            reason: if ok { String::new() } else { why() },
        }
    }
}

fn no_run(shape: &str, view: &str, mode: &str) -> String {
    format!(
        "the sweep has no {} run at {}, {mode}",
        pretty_shape(shape),
        pretty_view(view)
    )
}

fn no_runs(a: &str, b: &str, view: &str, mode: &str) -> String {
    format!(
        "the sweep lacks the {} or the {} run at {}, {mode}",
        pretty_shape(a),
        pretty_shape(b),
        pretty_view(view)
    )
}

/// The x of a shape name `AxB`.
fn shape_x(shape: &str) -> Option<u32> {
    shape.split_once('x')?.0.trim().parse().ok()
}

/// Checks one statement against the runs.
pub(crate) fn check(s: Statement, runs: &[RunFacts]) -> Row {
    match s.claim {
        Claim::Share {
            shape,
            view,
            mode,
            share,
        } => {
            let Some(r) = find(runs, shape, view, mode) else {
                return not_measured(s, no_run(shape, view, mode));
            };
            let ok = (r.mem_share - share).abs() <= SHARE_TOLERANCE;
            Row::judged(s, pct(r.mem_share, 0), ok, || reason_or_facts(r, None))
        }
        Claim::NaiveUnderHalf { view, shapes } => {
            let mut parts = Vec::new();
            let mut ok = true;
            let mut worst: Option<&RunFacts> = None;
            for shape in shapes {
                let (Some(n), Some(f)) = (
                    find(runs, shape, view, "naive"),
                    find(runs, shape, view, "fence"),
                ) else {
                    return not_measured(s, no_runs(shape, shape, view, "naive and fence"));
                };
                parts.push(format!(
                    "{}: {} vs {}",
                    pretty_shape(shape),
                    pct(n.mem_share, 0),
                    pct(f.mem_share, 0)
                ));
                if n.mem_share >= f.mem_share / 2.0 {
                    ok = false;
                    worst.get_or_insert(f);
                }
            }
            Row::judged(
                s,
                format!("naive vs fenced share: {}", parts.join(", ")),
                ok,
                || worst.map_or_else(String::new, |f| reason_or_facts(f, None)),
            )
        }
        Claim::ShareOrder {
            view,
            mode,
            more,
            less,
        } => {
            let (Some(m), Some(l)) = (find(runs, more, view, mode), find(runs, less, view, mode))
            else {
                return not_measured(s, no_runs(more, less, view, mode));
            };
            let ok = m.mem_share > l.mem_share;
            Row::judged(
                s,
                format!(
                    "{} {} vs {} {}",
                    pretty_shape(more),
                    pct(m.mem_share, 0),
                    pretty_shape(less),
                    pct(l.mem_share, 0)
                ),
                ok,
                || hit_rate_reason(m, l, more, less).unwrap_or_else(|| reason_or_facts(m, None)),
            )
        }
        Claim::Faster {
            view,
            mode,
            fast,
            slow,
        } => {
            let (Some(f), Some(sl)) = (find(runs, fast, view, mode), find(runs, slow, view, mode))
            else {
                return not_measured(s, no_runs(fast, slow, view, mode));
            };
            let (Some(ff), Some(sf)) = (f.frame_rate, sl.frame_rate) else {
                return not_measured(s, format!("no frame rate for {fast} or {slow}"));
            };
            let rank = |name: &str| {
                let mut rates: Vec<(&str, f64)> = runs
                    .iter()
                    .filter(|r| r.view == view && r.mode == mode)
                    .filter_map(|r| Some((r.shape.as_str(), r.frame_rate?)))
                    .collect();
                rates.sort_by(|a, b| b.1.total_cmp(&a.1));
                let pos = rates
                    .iter()
                    .position(|(s, _)| *s == name)
                    .map_or(0, |p| p + 1);
                format!("{pos} of {}", rates.len())
            };
            let ok = ff > sf;
            Row::judged(
                s,
                format!(
                    "{} renders at {:.3}× the frame rate of {} (ranks {} and {}, fastest first)",
                    pretty_shape(fast),
                    ff / sf,
                    pretty_shape(slow),
                    rank(fast),
                    rank(slow)
                ),
                ok,
                || hit_rate_reason(sl, f, slow, fast).unwrap_or_else(|| reason_or_facts(f, None)),
            )
        }
        Claim::HigherHitRate {
            view,
            mode,
            higher,
            lower,
        } => {
            let (Some(h), Some(l)) = (
                find(runs, higher, view, mode),
                find(runs, lower, view, mode),
            ) else {
                return not_measured(s, no_runs(higher, lower, view, mode));
            };
            let (Some(hh), Some(lh)) = (h.tex_hit_rate, l.tex_hit_rate) else {
                return not_measured(s, format!("no texture hit rate for {higher} or {lower}"));
            };
            let ok = hh > lh;
            Row::judged(
                s,
                format!(
                    "{} {hh:.2} vs {} {lh:.2}",
                    pretty_shape(higher),
                    pretty_shape(lower)
                ),
                ok,
                || "not explained".into(),
            )
        }
        Claim::Correlation {
            view,
            mode,
            y,
            min_x,
            positive,
        } => {
            let pts: Vec<(f64, f64)> = runs
                .iter()
                .filter(|r| r.view == view && r.mode == mode)
                .filter(|r| shape_x(&r.shape).is_some_and(|x| x >= min_x))
                .filter_map(|r| Some((r.mem_ref_freq?, y.of(r)?)))
                .collect();
            if pts.len() < 3 {
                return not_measured(
                    s,
                    format!(
                        "fewer than three shapes at {}, {mode} have both memory reference frequency and {}",
                        pretty_view(view),
                        y.name()
                    ),
                );
            }
            let (xs, ys): (Vec<f64>, Vec<f64>) = pts.iter().copied().unzip();
            let r = stats::pearson(&xs, &ys);
            let rho = stats::spearman(&xs, &ys);
            let ok = r.is_some_and(|r| r.abs() >= WEAK_CORRELATION && (r > 0.0) == positive);
            // At least three shapes (above): never empty.
            let (ylo, yhi) = stats::range(ys.iter().copied()).unwrap_or_default();
            Row::judged(
                s,
                format!(
                    "Pearson r = {}, Spearman ρ = {} over {} shapes",
                    opt(r),
                    opt(rho),
                    pts.len()
                ),
                ok,
                || {
                    if r.is_none() {
                        "undefined: one of the series is constant".into()
                    } else {
                        let facts = format!(
                            "{} spans {}–{} across the shapes",
                            y.name(),
                            sig(ylo),
                            sig(yhi)
                        );
                        let first = runs
                            .iter()
                            .find(|r| r.view == view && r.mode == mode)
                            .cloned()
                            .unwrap_or_default();
                        match l2_reason(&first) {
                            Some(l2) => format!("{l2}; {facts}"),
                            None => format!("not explained ({facts})"),
                        }
                    }
                },
            )
        }
    }
}

/// When `slow`'s texture hit rate is not below `fast`'s, the cache does not separate them.
fn hit_rate_reason(slow: &RunFacts, fast: &RunFacts, sn: &str, fname: &str) -> Option<String> {
    let (s, f) = (slow.tex_hit_rate?, fast.tex_hit_rate?);
    if s >= f {
        return Some(format!(
            "texture hit rates are not ordered as the paper's: {} {s:.2} vs {} {f:.2}",
            pretty_shape(sn),
            pretty_shape(fname)
        ));
    }
    let ordered = format!(
        "texture hit rates are ordered as the paper's ({} {s:.2} < {} {f:.2})",
        pretty_shape(sn),
        pretty_shape(fname)
    );
    if let Some(l2) = l2_reason(slow) {
        return Some(format!("{ordered}, but {l2}"));
    }
    // The slow shape's texture misses are cheaper when more of them hit the L2.
    let (sl2, fl2) = (slow.l2_hit_rate?, fast.l2_hit_rate?);
    (sl2 > fl2).then(|| {
        format!(
            "{ordered}, but more of {}'s texture misses hit the L2 (L2 hit rate {sl2:.2} vs {fl2:.2}), so its misses cost less",
            pretty_shape(sn)
        )
    })
}

/// Every statement of [`PAPER`] against the runs.
pub(crate) fn compare(runs: &[RunFacts]) -> Vec<Row> {
    PAPER.iter().map(|s| check(*s, runs)).collect()
}

const INTRO: &str = "Each finding of Kanda et al. (IPSJ 2011) on the GTX 480 against the same quantity in this sweep. A share agrees within 10 percentage points (the paper's are read off a bar chart); an ordering when it holds; a correlation when Pearson's r has the paper's sign and |r| ≥ 0.3. Reasons are computed from the runs' counters; \"not explained\" means none of them accounts for the difference.";

/// The report section; empty when no statement could be measured (a sweep of other shapes or
/// views).
pub(crate) fn section(runs: &[Run]) -> Section {
    let facts: Vec<RunFacts> = runs.iter().map(RunFacts::of).collect();
    let rows = compare(&facts);
    if rows.iter().all(|r| r.verdict == Verdict::NotMeasured) {
        return Section::default();
    }
    let agree = rows.iter().filter(|r| r.verdict == Verdict::Agree).count();
    let measured = rows
        .iter()
        .filter(|r| r.verdict != Verdict::NotMeasured)
        .count();
    let summary = format!("warpscope agrees with {agree} of the {measured} findings measured.");
    let mut table = vec![
        ["fig.", "the paper", "warpscope", "", "reason"]
            .map(String::from)
            .to_vec(),
    ];
    for r in &rows {
        table.push(vec![
            r.statement.figure.to_string(),
            r.statement.text.to_string(),
            r.warpscope.clone(),
            r.verdict.name().to_string(),
            r.reason.clone(),
        ]);
    }
    Section {
        blocks: vec![
            Block::Heading(2, "The paper and warpscope, side by side".into()),
            Block::para(INTRO),
            Block::Para(vec![Inline::Strong(summary)]),
            Block::Table(table),
        ],
        files: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synthetic sweep of the paper's eight shapes, with values from `f(shape, view, mode)`.
    fn sweep(f: impl Fn(&str, &str, &str) -> RunFacts) -> Vec<RunFacts> {
        let mut runs = Vec::new();
        for shape in [
            "128x1", "64x2", "32x4", "16x8", "8x16", "4x32", "2x64", "1x128",
        ] {
            for view in [FRONT, SIDE] {
                for mode in ["naive", "fence"] {
                    let mut r = f(shape, view, mode);
                    r.shape = shape.into();
                    r.view = view.into();
                    r.mode = mode.into();
                    runs.push(r);
                }
            }
        }
        runs
    }

    /// A sweep that behaves as the paper says: shapes with a wider x hit more, render faster and
    /// (fenced) spend less of their time in memory; naive frequency falls with the hit rate.
    fn like_the_paper(shape: &str, _view: &str, mode: &str) -> RunFacts {
        let x = f64::from(shape_x(shape).unwrap());
        let w = x.log2() / 7.0; // 0 for 1×128 … 1 for 128×1
        let hit = 0.5 + 0.4 * w;
        let fenced = mode == "fence";
        RunFacts {
            mem_share: if fenced {
                0.8 - 0.3 * w
            } else {
                0.2 - 0.07 * w
            },
            mem_ref_freq: Some(if fenced {
                0.01 + 0.01 * w
            } else {
                0.2 - 0.1 * w
            }),
            tex_hit_rate: Some(hit),
            frame_rate: Some(100.0 + 50.0 * w),
            cycles: Some(1e6 / (100.0 + 50.0 * w)),
            l2_hit_rate: Some(0.3),
            volume_bytes: Some(1 << 30),
            l2_bytes: Some(768 << 10),
            ..RunFacts::default()
        }
    }

    #[test]
    fn a_sweep_like_the_paper_agrees_with_every_finding() {
        let rows = compare(&sweep(like_the_paper));
        for r in &rows {
            assert_eq!(r.verdict, Verdict::Agree, "{r:?}");
            assert!(r.reason.is_empty(), "{r:?}");
        }
        assert_eq!(rows.len(), PAPER.len());
    }

    #[test]
    fn a_flat_sweep_whose_volume_fits_l2_disagrees_and_says_why() {
        // Every shape the same share and speed, 1×128 hitting more, a volume inside the L2.
        let runs = sweep(|shape, _, mode| RunFacts {
            mem_share: if mode == "fence" { 0.4 } else { 0.3 },
            mem_ref_freq: Some(0.01 + 0.001 * f64::from(shape_x(shape).unwrap())),
            tex_hit_rate: Some(0.9 - 0.001 * f64::from(shape_x(shape).unwrap())),
            frame_rate: Some(100.0 - 0.01 * f64::from(shape_x(shape).unwrap())),
            l2_hit_rate: Some(0.96),
            volume_bytes: Some(256 << 10),
            l2_bytes: Some(768 << 10),
            ..RunFacts::default()
        });
        let rows = compare(&runs);
        let by_text = |needle: &str| {
            rows.iter()
                .find(|r| r.statement.text.contains(needle))
                .unwrap()
        };
        let fenced_1x128 = by_text("~80 %");
        assert_eq!(fenced_1x128.verdict, Verdict::Disagree);
        assert_eq!(fenced_1x128.warpscope, "40 %");
        assert!(
            fenced_1x128.reason.contains("L2 hit rate 0.96")
                && fenced_1x128.reason.contains("fits the 768 KiB L2"),
            "{}",
            fenced_1x128.reason
        );
        let naive_half = by_text("under half");
        assert_eq!(naive_half.verdict, Verdict::Disagree);
        let fast = by_text("fast shape");
        assert_eq!(fast.verdict, Verdict::Disagree);
        assert!(
            fast.reason.contains("not ordered as the paper's"),
            "{}",
            fast.reason
        );
        assert_eq!(
            by_text("higher texture hit rate").verdict,
            Verdict::Disagree
        );
        // frequency rises with x while the hit rate falls: the fenced correlation is negative
        let corr = by_text("fenced probe, (0,0,0): memory reference frequency rises with texture");
        assert_eq!(corr.verdict, Verdict::Disagree);
        assert!(corr.warpscope.starts_with("Pearson r = -1.00"), "{corr:?}");
        // the naive claim expects a negative sign, which this sweep happens to have
        let naive = by_text(
            "naive probe, (0,0,0), shapes with x ≥ 8: memory reference frequency falls as texture",
        );
        assert_eq!(naive.verdict, Verdict::Agree, "{naive:?}");
    }

    #[test]
    fn a_disagreement_without_a_computed_cause_says_not_explained() {
        let runs = sweep(|_, _, mode| RunFacts {
            mem_share: if mode == "fence" { 0.2 } else { 0.15 },
            tex_hit_rate: Some(0.5),
            l2_hit_rate: Some(0.2),
            volume_bytes: Some(1 << 30),
            l2_bytes: Some(768 << 10),
            ..RunFacts::default()
        });
        let row = check(PAPER[3], &runs);
        assert_eq!(row.verdict, Verdict::Disagree);
        assert!(row.reason.starts_with("not explained"), "{}", row.reason);
        assert!(row.reason.contains("1 GiB vs 768 KiB L2"), "{}", row.reason);
    }

    #[test]
    fn a_slow_shape_whose_misses_hit_l2_more_is_explained_by_it() {
        let mut runs = sweep(like_the_paper);
        for r in &mut runs {
            if r.shape == "1x128" {
                r.frame_rate = Some(1000.0);
                r.l2_hit_rate = Some(0.6);
            }
        }
        let row = check(PAPER[6], &runs);
        assert_eq!(row.verdict, Verdict::Disagree);
        assert!(
            row.warpscope.contains("ranks 2 of 8 and 1 of 8"),
            "{}",
            row.warpscope
        );
        assert!(
            row.reason.contains("ordered as the paper's")
                && row.reason.contains("L2 hit rate 0.60 vs 0.30"),
            "{}",
            row.reason
        );
    }

    #[test]
    fn statements_without_runs_are_not_measured() {
        let runs: Vec<RunFacts> = sweep(like_the_paper)
            .into_iter()
            .filter(|r| r.shape == "16x8")
            .collect();
        let rows = compare(&runs);
        assert!(
            rows.iter().all(|r| r.verdict == Verdict::NotMeasured),
            "{rows:?}"
        );
        assert_eq!(
            rows[0].reason,
            "the sweep has no 128×1 run at (0,0,0), naive"
        );
    }
}
