//! Working set and reuse distance of an address stream: how much distinct data a stream touches as
//! it goes (the working-set curve, in the spirit of Exana's per-loop working-set curves), and how
//! far back each re-reference reaches (the LRU stack distance), which predicts in one pass the hit
//! rate of a fully associative LRU cache of *any* size.
//!
//! Why: a texture or L1 cache hit rate measured for one cache size says little about why; the
//! stack-distance histogram says which capacity the stream needs, and comparing its prediction
//! with the set-associative simulator shows what associativity, sectoring and concurrency cost.
//! This module is pure arithmetic over `u64` byte addresses; it knows nothing of the emulator.
//!
//! Main items: [`working_set_curve`] → [`WorkingSetPoint`]s (distinct 32-byte sectors and 128-byte
//! lines first touched, sampled every N accesses); [`stack_distances`] →
//! [`StackDistanceHistogram`] with [`StackDistanceHistogram::predicted_hit_rate`].
//!
//! # Definitions
//! An address maps to the block `addr / granularity_bytes`. The stack distance of an access is the
//! number of *distinct other* blocks referenced since the previous access to the same block (0 for
//! an immediate re-reference); a first touch has no distance (a cold miss). A fully associative
//! LRU cache of `C` blocks hits exactly the accesses with distance < `C` (Mattson et al. 1970), so
//! `predicted_hit_rate(C)` = (accesses with distance < C) / (all accesses, cold ones included).
//! Distances are computed in O(n log n) with a Fenwick tree over last-access times: each time
//! slot holds 1 while it is the latest access of its block, and the distance is the count of ones
//! strictly between the previous access and now. Hand-written (no well-kept crate does this).
//!
//! ```
//! use analysis::reuse::{stack_distances, working_set_curve};
//! // Blocks of 32 bytes: a b a c b
//! let addrs = [0, 32, 0, 64, 32];
//! let h = stack_distances(&addrs, 32);
//! assert_eq!(h.cold, 3);
//! assert_eq!(h.counts, vec![0, 1, 1]); // a at distance 1, b at distance 2
//! assert_eq!(h.predicted_hit_rate(2), 1.0 / 5.0);
//! let ws = working_set_curve(&addrs, 2);
//! assert_eq!(ws.last().map(|p| (p.accesses, p.sectors, p.lines)), Some((5, 3, 1)));
//! ```

mod report;
pub(crate) use report::section;

use crate::AnalysisError;
use serde::Serialize;
use std::collections::HashMap;

/// Bytes of a sector, the unit a cache fetches (L1, texture and L2 on NVIDIA GPUs since Fermi).
pub const SECTOR_BYTES: u64 = 32;
/// Bytes of a cache line (four sectors share one tag).
pub const LINE_BYTES: u64 = 128;

/// One sample of the working-set curve: after `accesses` accesses, `sectors` distinct 32-byte
/// sectors and `lines` distinct 128-byte lines had been touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WorkingSetPoint {
    pub accesses: u64,
    pub sectors: u64,
    pub lines: u64,
}

impl WorkingSetPoint {
    /// The working set in bytes at sector granularity.
    pub fn sector_bytes(&self) -> u64 {
        self.sectors * SECTOR_BYTES
    }
}

/// The cumulative distinct sectors and lines, sampled after every `every` accesses and after the
/// last one (so the final point is the whole stream's footprint). `every` = 0 is taken as 1.
pub fn working_set_curve(addrs: &[u64], every: usize) -> Vec<WorkingSetPoint> {
    let every = every.max(1);
    // Sets are only probed, never iterated, so hash order cannot reach the output.
    let mut sectors = std::collections::HashSet::new();
    let mut lines = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(addrs.len() / every + 1);
    for (i, &a) in addrs.iter().enumerate() {
        sectors.insert(a / SECTOR_BYTES);
        lines.insert(a / LINE_BYTES);
        let n = i + 1;
        if n % every == 0 || n == addrs.len() {
            out.push(WorkingSetPoint {
                accesses: n as u64,
                sectors: sectors.len() as u64,
                lines: lines.len() as u64,
            });
        }
    }
    out
}

/// The LRU stack-distance histogram of a stream at one block granularity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StackDistanceHistogram {
    pub granularity_bytes: u64,
    /// All accesses, cold ones included.
    pub accesses: u64,
    /// First touches (no previous access: a miss in any cache).
    pub cold: u64,
    /// `counts[d]` = accesses at stack distance `d`; no trailing zeros.
    pub counts: Vec<u64>,
}

impl StackDistanceHistogram {
    /// Hit rate of a fully associative LRU cache holding `capacity_blocks` blocks: accesses at
    /// distance < capacity over all accesses; 0 for an empty stream.
    pub fn predicted_hit_rate(&self, capacity_blocks: u64) -> f64 {
        if self.accesses == 0 {
            return 0.0;
        }
        let end = (capacity_blocks.min(self.counts.len() as u64)) as usize;
        let hits: u64 = self.counts[..end].iter().sum();
        hits as f64 / self.accesses as f64
    }

    /// [`Self::predicted_hit_rate`] for a capacity in bytes (whole blocks only).
    pub fn predicted_hit_rate_bytes(&self, capacity_bytes: u64) -> f64 {
        self.predicted_hit_rate(capacity_bytes / self.granularity_bytes.max(1))
    }

    /// Distinct blocks in the stream (each was touched cold once).
    pub fn distinct_blocks(&self) -> u64 {
        self.cold
    }

    /// The smallest capacity in blocks that reaches the best possible hit rate (1 − cold/accesses).
    pub fn capacity_for_all_reuse(&self) -> u64 {
        self.counts.len() as u64
    }

    /// The smallest capacity in blocks that captures `fraction` (0–1) of all re-references, i.e.
    /// reaches `fraction` × the best possible hit rate; 0 when nothing is re-referenced.
    pub fn capacity_for_fraction(&self, fraction: f64) -> u64 {
        let reuses: u64 = self.counts.iter().sum();
        let want = (fraction.clamp(0.0, 1.0) * reuses as f64).ceil() as u64;
        let mut acc = 0u64;
        for (d, c) in self.counts.iter().enumerate() {
            if acc >= want {
                return d as u64;
            }
            acc += c;
        }
        self.counts.len() as u64
    }
}

/// A Fenwick (binary indexed) tree of counts over time slots `0..n`.
struct Fenwick {
    tree: Vec<i64>,
}

impl Fenwick {
    fn new(n: usize) -> Self {
        Fenwick {
            tree: vec![0; n + 1],
        }
    }

    fn add(&mut self, i: usize, delta: i64) {
        let mut i = i + 1;
        while i < self.tree.len() {
            self.tree[i] += delta;
            i += i & i.wrapping_neg();
        }
    }

    /// Sum over slots `0..i` (exclusive).
    fn prefix(&self, i: usize) -> i64 {
        let mut i = i.min(self.tree.len() - 1);
        let mut s = 0;
        while i > 0 {
            s += self.tree[i];
            i -= i & i.wrapping_neg();
        }
        s
    }
}

/// The stack-distance histogram of `addrs` at `granularity_bytes` (0 is taken as 1), in
/// O(n log n) time and O(n) memory.
pub fn stack_distances(addrs: &[u64], granularity_bytes: u64) -> StackDistanceHistogram {
    let g = granularity_bytes.max(1);
    let mut last: HashMap<u64, usize> = HashMap::new();
    let mut fen = Fenwick::new(addrs.len());
    let mut counts: Vec<u64> = Vec::new();
    let mut cold = 0u64;
    for (t, &a) in addrs.iter().enumerate() {
        let block = a / g;
        match last.insert(block, t) {
            Some(s) => {
                // Ones strictly between s and t: latest accesses of other blocks since s.
                let d = (fen.prefix(t) - fen.prefix(s + 1)).max(0) as usize;
                if counts.len() <= d {
                    counts.resize(d + 1, 0);
                }
                counts[d] += 1;
                fen.add(s, -1);
            }
            None => cold += 1,
        }
        fen.add(t, 1);
    }
    StackDistanceHistogram {
        granularity_bytes: g,
        accesses: addrs.len() as u64,
        cold,
        counts,
    }
}

/// Hit rate of a fully associative LRU cache of `capacity_blocks`, simulated directly (a list in
/// recency order). O(n·C): a reference for tests of [`stack_distances`], not for long streams.
pub fn simulate_lru_hit_rate(addrs: &[u64], granularity_bytes: u64, capacity_blocks: u64) -> f64 {
    let g = granularity_bytes.max(1);
    let mut stack: Vec<u64> = Vec::new();
    let mut hits = 0u64;
    for &a in addrs {
        let b = a / g;
        if let Some(pos) = stack.iter().position(|&x| x == b) {
            stack.remove(pos);
            hits += 1;
        } else if stack.len() as u64 >= capacity_blocks && !stack.is_empty() {
            stack.pop();
        }
        if capacity_blocks > 0 {
            stack.insert(0, b);
        }
    }
    if addrs.is_empty() {
        0.0
    } else {
        hits as f64 / addrs.len() as f64
    }
}

/// One series of an [`write_xy_figure`] plot: a line, or markers only (simulated points).
#[derive(Debug, Clone, PartialEq)]
pub struct XySeries {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub markers_only: bool,
    /// Palette index: a prediction and its simulated points share one colour.
    pub color: usize,
}

/// What an [`write_xy_figure`] draws: axes, series and labelled horizontal lines (capacities).
#[derive(Debug, Clone, PartialEq)]
pub struct XyFigure {
    pub stem: String,
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    /// The x axis is always log₁₀; y too when set (working-set curves), else linear 0–1.05.
    pub log_y: bool,
    pub series: Vec<XySeries>,
    pub hlines: Vec<(String, f64)>,
}

/// Colour-blind-safe (Okabe–Ito) order, as the other figures use.
const XY_PALETTE: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
];

use plotters::prelude::*;

/// Draws `fig` into `dir/<stem>.png` and `dir/<stem>.svg` (atomically) and returns the SVG text
/// for inlining. Log axes are drawn as log₁₀ of the values with `1e3`-style labels; points with
/// a non-positive coordinate on a log axis are left out.
pub fn write_xy_figure(dir: &std::path::Path, fig: &XyFigure) -> Result<String, AnalysisError> {
    crate::figures::register_font();
    let svg_path = dir.join(format!("{}.svg", fig.stem));
    let png_path = dir.join(format!("{}.png", fig.stem));
    let plot_err = |path: &std::path::Path, reason: String| AnalysisError::Plot {
        path: path.to_path_buf(),
        reason,
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        draw_xy(&root, fig).map_err(|r| plot_err(&svg_path, r))?;
        root.present()
            .map_err(|e| plot_err(&svg_path, e.to_string()))?;
    }
    crate::output::write_atomic(&svg_path, svg.as_bytes())?;
    crate::output::write_atomic_path(
        &png_path,
        |tmp| {
            let root = BitMapBackend::new(tmp, (900, 560)).into_drawing_area();
            draw_xy(&root, fig)?;
            root.present().map_err(|e| e.to_string())
        },
        |reason| plot_err(&png_path, reason),
    )?;
    Ok(svg)
}

fn draw_xy<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    fig: &XyFigure,
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let tx = |x: f64| (x > 0.0).then(|| x.log10());
    let ty = |y: f64| {
        if fig.log_y {
            (y > 0.0).then(|| y.log10())
        } else {
            y.is_finite().then_some(y)
        }
    };
    let pts: Vec<Vec<(f64, f64)>> = fig
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter_map(|&(x, y)| tx(x).zip(ty(y)))
                .collect()
        })
        .collect();
    let xs = pts.iter().flatten().map(|p| p.0);
    let (x0, x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let (x0, x1) = if x0.is_finite() {
        (x0.floor(), x1.ceil().max(x0.floor() + 1.0))
    } else {
        (0.0, 1.0)
    };
    let (y0, y1) = if fig.log_y {
        let ys = pts
            .iter()
            .flatten()
            .map(|p| p.1)
            .chain(fig.hlines.iter().filter_map(|h| ty(h.1)));
        let (a, b) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
            (a.min(y), b.max(y))
        });
        if a.is_finite() {
            (a.floor(), b.ceil().max(a.floor() + 1.0))
        } else {
            (0.0, 1.0)
        }
    } else {
        (0.0, 1.05)
    };
    let mut chart = ChartBuilder::on(root)
        .caption(&fig.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(e)?;
    let pow_label = |v: &f64| format!("{:.0e}", 10f64.powf(*v));
    let lin_label = |v: &f64| format!("{v:.2}");
    let y_label: &dyn Fn(&f64) -> String = if fig.log_y { &pow_label } else { &lin_label };
    chart
        .configure_mesh()
        .x_label_formatter(&pow_label)
        .y_label_formatter(y_label)
        .x_desc(fig.x_desc.as_str())
        .y_desc(fig.y_desc.as_str())
        .draw()
        .map_err(e)?;
    for (i, (h, v)) in fig.hlines.iter().enumerate() {
        let Some(y) = ty(*v) else { continue };
        let c = RGBColor(120, 120, 120);
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x0, y), (x1, y)],
                6,
                4,
                c.stroke_width(1),
            ))
            .map_err(e)?;
        chart
            .draw_series(std::iter::once(Text::new(
                h.clone(),
                (x0 + 0.02 * (x1 - x0) * (1.0 + 10.0 * i as f64), y),
                ("sans-serif", 13).into_font().color(&c),
            )))
            .map_err(e)?;
    }
    for (s, p) in fig.series.iter().zip(&pts) {
        let c = XY_PALETTE[s.color % XY_PALETTE.len()];
        let drawn = if s.markers_only {
            chart
                .draw_series(p.iter().map(|&q| TriangleMarker::new(q, 6, c.filled())))
                .map_err(e)?
        } else {
            chart
                .draw_series(LineSeries::new(p.clone(), c.stroke_width(2)))
                .map_err(e)?
        };
        drawn
            .label(s.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
    }
    crate::figures::draw_legend(&mut chart, SeriesLabelPosition::LowerRight, 13)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hand_computed_distances() {
        // Blocks: a b c a b c d a  (granularity 1)
        // a@3: since a@0 saw b, c → 2; b@4: c, a → 2; c@5: a, b → 2; a@7: b, c, d → 3.
        let h = stack_distances(&[1, 2, 3, 1, 2, 3, 4, 1], 1);
        assert_eq!(h.cold, 4);
        assert_eq!(h.accesses, 8);
        assert_eq!(h.counts, vec![0, 0, 3, 1]);
        // A 3-block LRU cache hits the three distance-2 re-references; 4 blocks all four.
        assert_eq!(h.predicted_hit_rate(3), 3.0 / 8.0);
        assert_eq!(h.predicted_hit_rate(4), 4.0 / 8.0);
        assert_eq!(h.predicted_hit_rate(2), 0.0);
        assert_eq!(h.capacity_for_all_reuse(), 4);
        // Three of four re-references need 3 blocks; all four need 4; none needs 0.
        assert_eq!(h.capacity_for_fraction(0.75), 3);
        assert_eq!(h.capacity_for_fraction(0.76), 4);
        assert_eq!(h.capacity_for_fraction(0.0), 0);
    }

    #[test]
    fn immediate_rereference_is_distance_zero_and_granularity_groups_addresses() {
        // 0 and 31 share a 32-byte sector: the second access is an immediate re-reference.
        let h = stack_distances(&[0, 31, 32, 0], 32);
        assert_eq!(h.cold, 2);
        assert_eq!(h.counts, vec![1, 1]);
        let h = stack_distances(&[0, 31, 32, 0], 128);
        assert_eq!(h.cold, 1);
        assert_eq!(h.counts, vec![3]);
        assert_eq!(h.predicted_hit_rate_bytes(128), 0.75);
    }

    #[test]
    fn working_set_counts_sectors_and_lines() {
        // Four sectors of one line, then one sector of the next line, then a repeat.
        let addrs = [0, 32, 64, 96, 128, 0];
        let ws = working_set_curve(&addrs, 4);
        assert_eq!(
            ws,
            vec![
                WorkingSetPoint {
                    accesses: 4,
                    sectors: 4,
                    lines: 1
                },
                WorkingSetPoint {
                    accesses: 6,
                    sectors: 5,
                    lines: 2
                },
            ]
        );
        assert_eq!(ws[1].sector_bytes(), 160);
        assert!(working_set_curve(&[], 3).is_empty());
    }

    #[test]
    fn empty_stream() {
        let h = stack_distances(&[], 32);
        assert_eq!(h.accesses, 0);
        assert_eq!(h.predicted_hit_rate(10), 0.0);
    }

    proptest! {
        /// The one-pass prediction equals a direct LRU simulation for every capacity.
        #[test]
        fn prediction_matches_direct_lru(addrs in proptest::collection::vec(0u64..40, 0..200), cap in 0u64..12) {
            let h = stack_distances(&addrs, 1);
            let sim = simulate_lru_hit_rate(&addrs, 1, cap);
            prop_assert!((h.predicted_hit_rate(cap) - sim).abs() < 1e-12);
            prop_assert_eq!(h.cold + h.counts.iter().sum::<u64>(), addrs.len() as u64);
        }
    }

    #[test]
    fn xy_figure_writes_png_and_svg_with_its_labels() {
        let dir = tempfile::tempdir().unwrap();
        let ws = working_set_curve(&(0..4000u64).map(|i| i * 8).collect::<Vec<_>>(), 100);
        let fig = XyFigure {
            stem: "ws".into(),
            title: "working set".into(),
            x_desc: "accesses".into(),
            y_desc: "bytes".into(),
            log_y: true,
            series: vec![XySeries {
                name: "stride 8".into(),
                points: ws
                    .iter()
                    .map(|p| (p.accesses as f64, p.sector_bytes() as f64))
                    .collect(),
                markers_only: false,
                color: 0,
            }],
            hlines: vec![("texture cache".into(), 12288.0)],
        };
        let svg = write_xy_figure(dir.path(), &fig).unwrap();
        assert!(svg.contains("stride 8") && svg.contains("texture cache"));
        assert!(dir.path().join("ws.png").is_file());
        assert!(dir.path().join("ws.svg").is_file());
    }
}
