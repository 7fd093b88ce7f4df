//! Turns a sweep of instrumented runs into the answers the paper draws from its logs: where each
//! warp's time goes (memory vs other work), how memory reference frequency tracks texture-cache
//! hit rate and frame rate across block shapes, how access time is spread over warps, and which
//! sites, warps and blocks are hot spots — as CSV tables, figures (PNG + SVG) and one report.
//!
//! Why a crate of its own: the statistics and plotters stay out of every other crate
//! (docs/ARCHITECTURE.md); the analysis sees only the `trace` model and, for the roofline and the
//! bound, the emulator's configuration type (`emulator::GpuConfig`, a run's effective
//! `config.toml`), so it works the same on emulator and GPU sweeps.
//!
//! Why no polars: the tables are built column by column in memory and written once, which is a
//! loop over the rows with the `csv` crate (`table.rs`); polars did only that here, and it was
//! most of this crate's dependency tree (`cargo tree -e normal`: 211 lines with it, 59 without;
//! 72 with the emulator, for its configuration type).
//! The files keep polars' spelling byte for byte (through its own number formatters, `itoa` and
//! `zmij`, two small crates that were in the tree already), so readers of the CSVs see no change.
//! Parquet, the one format polars is needed for, is the `export` crate's.
//!
//! Main items: [`analyze`] (a sweep directory in, `breakdown.csv`, `correlation.csv`,
//! `warps.csv`, `hotspots.csv`, figures, `report.html` and `report.md` out), [`AnalyzeOptions`],
//! [`AnalysisSummary`], [`AnalysisError`], the statistics in [`stats`], and the report's
//! spelling of numbers in [`fmt`] ([`fmt::pct`] is `warpscope gpu-check`'s too). Both reports are
//! one typed description, rendered once as HTML and once as Markdown, each escaped for its
//! format (`report/`).
//!
//! The report also sets the paper's findings beside the sweep's (`paper.rs`: each statement,
//! warpscope's figure, agree or disagree, and the reason computed from the counters).
//!
//! Companion methods: [`reuse`] (working-set curves and LRU stack-distance histograms of an
//! address stream) and [`regress`] / [`compare`] (single-reference regression: which emulator
//! features explain each platform's kernel time, and where the faster platform flips).
//!
//! # Definitions
//! Per warp: memory time = sum of its record durations (or of its summaries' sums; a traced warp's
//! accesses, in both, count once); other = (kernel end − kernel begin) − memory time, at least 0;
//! mean access time = memory time / accesses. Per run: `mem_cycles`/`other_cycles` are means over
//! warps, `mem_share` = mem / (mem + other); memory reference frequency = 1 / (all memory time /
//! all accesses), in accesses per cycle; per-warp variance and spread are the population variance
//! and max − min of the per-warp mean access times. Correlations (Pearson; Spearman with average
//! ranks for ties) run across the runs (block shapes) of one backend, preset, view and mode; a run
//! without the metric is left out and named in the report. The single-warp series (fig. 11) shows,
//! by default, the warp with the highest mean access time among the traced warps (those with
//! records) with at least their median number of accesses (ties: lowest global warp index). Hot
//! spots: baseline `b` = median per-warp mean access time of the run; an entity (site, warp, block)
//! with `n` accesses and memory time `m` has excess `m − n·b` and ratio `m / (n·b)`; entities are
//! ranked by excess and by variance of their access times; robust z = 0.6745·(x − median)/MAD of
//! the excess ratio and of the variance within the run and kind (mean-absolute-deviation fallback
//! when MAD = 0); outlier when either |z| > 3.5.
//!
//! # Output files (in `out_dir`)
//! | file | one row per | columns |
//! |---|---|---|
//! | `breakdown.csv` | run | run, backend, preset, shape, view, mode, warps, accesses, mem_cycles, other_cycles, mem_share, mem_cycles_siteN, mem_share_siteN (each site), mean_access_cycles, mem_ref_freq, tex_hit_rate, frame_rate, kernel_ms, warp_mean_var, warp_mean_spread, dropped_records, wrapped_records |
//! | `correlation.csv` | (backend, preset, view, mode, y) | backend, preset, view, mode, x (= mem_ref_freq), y (tex_hit_rate or frame_rate), pearson, spearman, n, excluded |
//! | `warps.csv` | warp of a run | run, shape, view, mode, sm, issue_order (position on its SM by kernel-begin clock), block_x/y/z, warp, global_warp, hw_warp, begin, end, accesses, mem_cycles, other_cycles, mean_access, var_access, min_access, max_access, dropped |
//! | `hotspots.csv` | ranked entity | run, shape, view, mode, kind (site, warp, block), id, sm, accesses, mem_cycles, excess_cycles, excess_ratio, mean_access, variance, z_excess_ratio, z_variance, rank_excess, rank_variance, outlier |
//!
//! Cycles are SM clock cycles; shares and rates are fractions in 0–1; an empty cell is a value
//! that does not exist (no accesses, fewer than two points, a metric the backend cannot measure).
//! Figures: `breakdown_<view>`, `frequency_<view>`, `warps_<run>`, `series_<run>`, each `.png` and
//! `.svg`. `report.html` is one self-contained page (figures inline as SVG, no scripts);
//! `report.md` links the PNGs. Both open with the verdict: per view, in its measuring mode, the
//! memory share of warp time and its largest site, and the slowest and fastest block shape by the
//! bare kernel's frame rate with their texture hit rates, above the breakdown figures.
//!
//! ```no_run
//! use analysis::{analyze, AnalyzeOptions};
//! use std::path::Path;
//! let summary = analyze(Path::new("sweep"), Path::new("sweep/analysis"), &AnalyzeOptions::default())?;
//! println!("report: {}", summary.report_html.display());
//! for f in &summary.findings {
//!     println!("- {f}");
//! }
//! # Ok::<(), analysis::AnalysisError>(())
//! ```
//!
//! ```
//! // The statistics are plain functions over slices.
//! let r = analysis::stats::spearman(&[1.0, 2.0, 2.0, 3.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
//! assert!(r > 0.9);
//! ```

mod error;
mod figures;
pub mod fmt;
mod output;
pub mod regress;
mod report;
pub mod reuse;
mod roofline;
pub mod stats;
mod sweep;
mod sweep_dir;
mod table;

pub use error::AnalysisError;
pub use regress::{CompareSummary, compare, compare_mode};
pub use report::md_table;
pub use roofline::{
    BenchMeasurement, Bound, Ceilings, Component, ComponentKind, ComponentUse, Edge, Hierarchy,
    Level, MeasuredCeilings, RooflinePoint, RunBound, RunCounters, RunRoofline, WorkKind,
    attainable, bound_of, busy_cycles, ridge_point, roofline_point, run_bound, run_roofline,
    write_ceilings,
};
pub use sweep::analyze::{AnalysisSummary, AnalyzeOptions, analyze};
pub use sweep::one_run::{probe_cost, run_verdict};
pub use sweep::program::program_report;
